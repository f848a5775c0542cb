// (being built)
import { html } from "../lib/html.js";
export function TimelineView() {
  return html`<h1>TimelineView</h1>`;
}
