// (being built)
import { html } from "../lib/html.js";
export function EditView() {
  return html`<h1>EditView</h1>`;
}
