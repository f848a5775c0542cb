import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { fromSystemError, type Result } from "../core/index.ts";

/** True when a (possibly glob) path stays under reports/: relative, no `..`, no `~`, no `\`. */
export function isReportsPath(path: string): boolean {
  if (path.startsWith("/") || path.startsWith("~") || path.includes("\\")) return false;
  if (path.includes("..")) return false; // also covers brace globs like reports/{a,../b}
  const parts = path.split("/");
  return parts.length >= 2 && parts[0] === "reports" && parts.every((p) => p !== "" && p !== ".");
}

function isEntryPath(path: string): boolean {
  if (path.startsWith("/") || path.startsWith("~") || path.includes("\\")) return false;
  return path.split("/").every((p) => p !== "" && p !== "." && p !== "..") && path.endsWith(".tcl");
}

/**
 * The contract's optional `policy`: what the queue processor refuses while the subskill's scripts
 * run (the restore wrapper is the runtime's own and never confined). Every `source`, `exec` and
 * `open "|…"` is audited either way; this only adds refusals (CMD_FAIL / POLICY_REFUSED).
 */
export const ContractPolicySchema = z
  .object({
    /** Refuse a `source` of a file outside the run directory, the design's directory and Tcl's library. */
    confine_paths: z.boolean().default(false),
    /**
     * When present, the only programs `exec` and `open "|…"` may start: a bare name matches a
     * command found on PATH, an absolute path that file. `[]` refuses every program.
     */
    allow_exec: z
      .array(z.string().regex(/^[^\s]+$/, "one program: a name or an absolute path, no spaces"))
      .optional(),
  })
  .strict();
export type ContractPolicy = z.infer<typeof ContractPolicySchema>;

/** subskills/<name>/contract.yaml (seed §7.2, §7.3). */
export const ContractSchema = z.object({
  schema_version: z.string().min(1),
  name: z.string().regex(/^[A-Za-z0-9_.-]+$/, "a plain name: letters, digits, _ . -"),
  version: z.string().min(1),
  tool: z.literal("innovus"),
  description: z.string().optional(),
  scripts: z
    .array(
      z.object({
        name: z.string().regex(/^[A-Za-z0-9_-]+$/, "a plain name: letters, digits, _ -"),
        entry: z
          .string()
          .refine(isEntryPath, "a relative .tcl path inside the subskill (no '..', not absolute)"),
      }),
    )
    .min(1),
  outputs: z.object({
    required: z
      .array(
        z.object({
          path: z
            .string()
            .refine(isReportsPath, "must be under reports/ (relative, no '..', not absolute)"),
          non_empty: z.boolean().default(true),
          description: z.string().optional(),
        }),
      )
      .min(1),
  }),
  debug_hints: z.array(z.string().min(1)).min(2),
  policy: ContractPolicySchema.optional(),
});
export type Contract = z.infer<typeof ContractSchema>;

/** Parse and validate contract.yaml text (pure). Issues name the field: `outputs.required.0.path: …`. */
export function parseContract(text: string): Result<Contract> {
  let value: unknown;
  try {
    value = parseYaml(text);
  } catch (error) {
    return {
      ok: false,
      issues: [`(yaml): ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`],
    };
  }
  const result = ContractSchema.safeParse(value);
  if (result.success) return { ok: true, value: result.data };
  return {
    ok: false,
    issues: result.error.issues.map(
      (i) => `${i.path.length > 0 ? i.path.join(".") : "(root)"}: ${i.message}`,
    ),
  };
}

/** Read `<dir>/contract.yaml` and validate it. A missing file is an issue, not an exception. */
export function readContract(dir: string): Result<Contract> {
  const path = join(dir, "contract.yaml");
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    const e = fromSystemError(error, `reading ${path}`);
    return { ok: false, issues: [`(file): ${e.message}`] };
  }
  return parseContract(text);
}
