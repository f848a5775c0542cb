// Keyboard shortcuts of the whole dashboard: `?` lists them, `g` then a letter goes to a view
// (as in GitHub's and Gmail's). Never while the user types into a field or holds a modifier.
import { useEffect, useRef } from "preact/hooks";
import { html } from "./html.js";
import { navigate } from "./router.js";
import { useModal } from "./ui.js";

/** `g` + key → where it goes. One list: the dialog shows it, the handler reads it. */
export const GO_TO = [
  ["t", "/timeline", "Timeline"],
  ["s", "/snapshots", "Snapshots"],
  ["i", "/issues", "Issues"],
  ["r", "/runs", "Runs"],
  ["m", "/memory", "Memory"],
];

/** How long after `g` the second key still counts. */
const SEQUENCE_MS = 1500;

/** Whether a key pressed in `target` is the user's typing, not a shortcut. */
export function isTyping(target) {
  if (!(target instanceof Element)) return false;
  if (target.isContentEditable) return true;
  const field = target.closest("input, textarea, select, [contenteditable]");
  if (field === null) return false;
  // a checkbox, radio or button input takes no text: shortcuts still apply there
  return (
    !(field instanceof HTMLInputElement) ||
    !/^(checkbox|radio|button|submit|reset|range|color|file)$/.test(field.type)
  );
}

/** Listen for the shortcuts on the document; `onHelp` opens the list. */
export function useShortcuts(onHelp) {
  const pendingG = useRef(0);
  useEffect(() => {
    const onKey = (e) => {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || isTyping(e.target)) return;
      // a modal dialog (a confirmation) owns the keyboard while it is open
      if (document.querySelector("dialog[open]") !== null) return;
      if (e.key === "?") {
        e.preventDefault();
        onHelp();
        return;
      }
      const now = e.timeStamp;
      if (pendingG.current !== 0 && now - pendingG.current < SEQUENCE_MS) {
        pendingG.current = 0;
        const target = GO_TO.find(([key]) => key === e.key.toLowerCase());
        if (target !== undefined) {
          e.preventDefault();
          navigate(target[1]);
        }
        return;
      }
      pendingG.current = e.key === "g" && !e.shiftKey ? now : 0;
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [onHelp]);
}

/** The list of shortcuts, in a modal dialog (Escape or the button closes it). */
export function ShortcutsDialog({ open, onClose }) {
  const ref = useModal(open);
  return html`<dialog ref=${ref} class="shortcuts" aria-labelledby="shortcuts-title" onCancel=${(
    e,
  ) => {
    e.preventDefault();
    onClose();
  }}>
    <h2 id="shortcuts-title">Keyboard shortcuts</h2>
    <table>
      <thead><tr><th scope="col">Keys</th><th scope="col">Does</th></tr></thead>
      <tbody>
        <tr><td><kbd>?</kbd></td><td>Show this list</td></tr>
        ${GO_TO.map(
          ([key, , label]) =>
            html`<tr><td><kbd>g</kbd> then <kbd>${key}</kbd></td><td>Go to ${label}</td></tr>`,
        )}
        <tr><td><kbd>Tab</kbd> · <kbd>Shift</kbd>+<kbd>Tab</kbd></td><td>Next · previous control</td></tr>
        <tr><td><kbd>Enter</kbd></td><td>Follow a link, press a button</td></tr>
        <tr><td><kbd>←</kbd> <kbd>→</kbd></td><td>Move between tabs</td></tr>
        <tr><td><kbd>Esc</kbd></td><td>Close a dialog</td></tr>
      </tbody>
    </table>
    <div class="actions">
      <button type="button" onClick=${onClose}>Close</button>
    </div>
  </dialog>`;
}
