// (being built)
import { html } from "../lib/html.js";
export function IssueList() {
  return html`<h1>IssueList</h1>`;
}
export function IssueView() {
  return html`<h1>IssueView</h1>`;
}
