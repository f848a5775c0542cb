// (being built)
import { html } from "../lib/html.js";
export function SnapshotList() {
  return html`<h1>SnapshotList</h1>`;
}
export function SnapshotView() {
  return html`<h1>SnapshotView</h1>`;
}
