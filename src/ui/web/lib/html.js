// htm bound to preact: every view writes its markup as html`…` (no build step).
import htm from "htm";
import { h } from "preact";

export const html = htm.bind(h);
