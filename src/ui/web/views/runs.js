// (being built)
import { html } from "../lib/html.js";
export function RunList() {
  return html`<h1>RunList</h1>`;
}
export function RunView() {
  return html`<h1>RunView</h1>`;
}
