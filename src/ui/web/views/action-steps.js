// The two steps of every dashboard action: a dry-run preview, then a confirmation, then the
// real call, whose result is shown as the CLI's `--json` prints it (errors too).
import { useState } from "preact/hooks";
import { postJSON } from "../lib/api.js";
import { html } from "../lib/html.js";
import { Confirm, ErrorBox } from "../lib/ui.js";

/**
 * `path` and `body` name the call; `{ dry_run: true }` is added for the preview. The button
 * (`label`) asks for the preview and then for confirmation in a dialog showing it; cancelled, the
 * preview stays on the page. `renderPreview(preview)` shows what will happen; `cli` is the
 * command line it equals.
 * `onDone(result, cli)` runs after a real call that succeeded (to reload the page's data).
 * `level` is the heading level of the result.
 */
export function ActionSteps({
  title,
  path,
  body = {},
  cli,
  label,
  confirmLabel,
  renderPreview,
  onDone,
  level = 3,
}) {
  const [step, setStep] = useState({ name: "idle" });
  const busy = step.name === "previewing" || step.name === "running";
  // Not `disabled` while busy: a disabled button drops the focus, which the dialog must give
  // back to it when it closes.
  const preview = async () => {
    if (busy) return;
    setStep({ name: "previewing", preview: step.preview });
    try {
      setStep({ name: "confirming", preview: await postJSON(path, { ...body, dry_run: true }) });
    } catch (error) {
      setStep({ name: "failed", error });
    }
  };
  const run = async () => {
    const previewed = step.preview;
    setStep({ name: "running", preview: previewed });
    try {
      const result = await postJSON(path, { ...body, dry_run: false });
      setStep({ name: "done", result });
      onDone?.(result, cli);
    } catch (error) {
      setStep({ name: "failed", error });
    }
  };
  const confirmOpen = step.name === "confirming" || step.name === "running";
  return html`<div class="action-steps">
    <div class="actions" style="justify-content:flex-start">
      <button type="button" class="danger" onClick=${preview} aria-disabled=${busy ? "true" : undefined}>${label}</button>
    </div>
    ${step.name === "previewing" ? html`<p class="muted" role="status">Previewing…</p>` : null}
    ${step.preview !== undefined && step.name !== "done" ? html`<section aria-label=${`${title}: preview`}>${renderPreview(step.preview)}</section>` : null}
    ${
      // Mounted only while open: Confirm's title has a fixed id, and a page may hold several actions.
      confirmOpen
        ? html`<${Confirm}
            title=${title}
            open=${true}
            confirmLabel=${confirmLabel}
            busy=${step.name === "running"}
            onCancel=${() => setStep({ name: "previewed", preview: step.preview })}
            onConfirm=${run}
          >
            <p>This changes the workspace, as <code>${cli}</code> would.</p>
            ${step.preview !== undefined ? renderPreview(step.preview, { brief: true }) : null}
          <//>`
        : null
    }
    ${step.name === "failed" ? html`<${ActionError} error=${step.error} cli=${cli} />` : null}
    ${step.name === "done" ? html`<${ResultDoc} doc=${step.result} cli=${cli} level=${level} />` : null}
  </div>`;
}

/** The document the CLI prints with --json. */
export function ResultDoc({ doc, cli, level = 3 }) {
  const H = `h${level}`;
  return html`<div role="status">
    <${H}>Result <span class="muted">(as <code>${cli} --json</code> prints it)</span><//>
    <pre class="mono">${JSON.stringify(doc, null, 2)}</pre>
  </div>`;
}

/** An action's error: its code and message, the conflicts it names, and the CLI's document. */
function ActionError({ error, cli }) {
  const data = error.data;
  const messages = Array.isArray(data?.messages) ? data.messages : [];
  const doc = {
    error: { code: error.code, message: error.message, ...(data === undefined ? {} : { data }) },
  };
  return html`<div>
    <${ErrorBox} error=${error} />
    ${messages.length > 0 ? html`<ul>${messages.map((m) => html`<li><code>${m}</code></li>`)}</ul>` : null}
    <details><summary>The error as <code>${cli} --json</code> prints it</summary>
      <pre class="mono">${JSON.stringify(doc, null, 2)}</pre>
    </details>
  </div>`;
}
