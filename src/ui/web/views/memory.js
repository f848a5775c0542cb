// (being built)
import { html } from "../lib/html.js";
export function MemoryList() {
  return html`<h1>MemoryList</h1>`;
}
export function MemoryRunView() {
  return html`<h1>MemoryRunView</h1>`;
}
