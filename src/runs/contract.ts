import {
  closeSync,
  constants,
  fstatSync,
  openSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  type Stats,
} from "node:fs";
import { join, sep } from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { errnoCode, fromSystemError, type Result } from "../core/index.ts";

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
        /** This script's request timeout in seconds (default: skillpilot.request_timeout_ms). */
        timeout_s: z.number().positive().finite().optional(),
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

/** The file a script is staged as in the run's scripts/ (seed §6.1: only scripts/ is sourced). */
export function scriptFileName(contractName: string, scriptName: string): string {
  return `${contractName}__${scriptName}.tcl`;
}

/**
 * Script names that would collide (pure): the same name twice, or two names whose scripts/
 * files differ only in case (one file on a case-insensitive file system, e.g. macOS or an SMB
 * share). Issues name the later entry: `scripts.2.name: …`.
 */
export function duplicateScriptIssues(contract: Contract): string[] {
  const issues: string[] = [];
  const seen = new Map<string, number>();
  contract.scripts.forEach((s, i) => {
    const file = scriptFileName(contract.name, s.name);
    const key = file.toLowerCase();
    const first = seen.get(key);
    if (first === undefined) {
      seen.set(key, i);
      return;
    }
    const other = contract.scripts[first]?.name ?? "";
    issues.push(
      other === s.name
        ? `scripts.${i}.name: duplicate script name ${JSON.stringify(s.name)} (also scripts.${first}); each script needs its own name`
        : `scripts.${i}.name: ${JSON.stringify(s.name)} and scripts.${first} ${JSON.stringify(other)} map to the same file scripts/${file} on a case-insensitive file system`,
    );
  });
  return issues;
}

/** One script whose entry was checked on disk: the real file to copy and its identity. */
export interface CheckedScript {
  name: string;
  entry: string;
  /** The entry with every symlink resolved; inside the subskill's real directory. */
  realPath: string;
  /** Device and inode of the real file at check time: the copy must read this very file. */
  dev: number;
  ino: number;
  size: number;
  /** The file name in the run's scripts/. */
  file: string;
  timeout_s?: number;
}

/** A contract whose text and files were both checked. */
export interface CheckedContract {
  contract: Contract;
  /** The subskill directory with its symlinks resolved: the boundary every entry stays in. */
  realDir: string;
  scripts: CheckedScript[];
}

function isInside(realDir: string, realPath: string): boolean {
  return realPath.startsWith(realDir.endsWith(sep) ? realDir : `${realDir}${sep}`);
}

/** Check one entry on disk: it exists, resolves inside the subskill, is a regular readable file. */
function checkEntry(
  realDir: string,
  dir: string,
  contract: Contract,
  i: number,
): { script: CheckedScript } | { issue: string } {
  const s = contract.scripts[i] as Contract["scripts"][number];
  const field = `scripts.${i}.entry`;
  let realPath: string;
  try {
    realPath = realpathSync(join(dir, s.entry));
  } catch (error) {
    const e = fromSystemError(error, `resolving ${s.entry}`);
    const missing = errnoCode(error) === "ENOENT";
    return {
      issue: missing
        ? `${field}: ${s.entry} does not exist in ${dir} (or is a symlink to nothing)`
        : `${field}: ${e.message}`,
    };
  }
  if (!isInside(realDir, realPath)) {
    return {
      issue: `${field}: ${s.entry} resolves to ${realPath}, outside the subskill ${realDir} (a symlink leading out is refused)`,
    };
  }
  let fd: number | undefined;
  try {
    fd = openSync(realPath, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const st = fstatSync(fd);
    if (!st.isFile()) {
      return { issue: `${field}: ${s.entry} is not a regular file (${kindOf(st)})` };
    }
    const script: CheckedScript = {
      name: s.name,
      entry: s.entry,
      realPath,
      dev: st.dev,
      ino: st.ino,
      size: st.size,
      file: scriptFileName(contract.name, s.name),
      ...(s.timeout_s !== undefined ? { timeout_s: s.timeout_s } : {}),
    };
    return { script };
  } catch (error) {
    return { issue: `${field}: ${fromSystemError(error, `opening ${s.entry}`).message}` };
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function kindOf(st: Stats): string {
  if (st.isDirectory()) return "a directory";
  if (st.isFIFO()) return "a FIFO";
  if (st.isSocket()) return "a socket";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  return "not a file";
}

/** Issues in the order of the scripts they name (stable: an entry's issue before its name's). */
function byScriptIndex(a: string, b: string): number {
  const index = (s: string) => Number(/^scripts\.(\d+)\./.exec(s)?.[1] ?? -1);
  return index(a) - index(b);
}

/**
 * The contract as `skill check` and a job's LOAD_CONTRACT see it: the text (readContract), then
 * the files — every `scripts[].entry` exists, is a regular file once symlinks are resolved, and
 * its real path stays inside the subskill's real directory (a symlink to a .tcl elsewhere, or a
 * directory symlink leading out, is refused) — and no two scripts share a scripts/ file.
 * Issues name the field (`scripts.1.entry: …`); nothing is thrown for a bad subskill.
 */
export function checkContract(dir: string): Result<CheckedContract> {
  const parsed = readContract(dir);
  if (!parsed.ok) return parsed;
  const contract = parsed.value;
  let realDir: string;
  try {
    realDir = realpathSync(dir);
  } catch (error) {
    return { ok: false, issues: [`(dir): ${fromSystemError(error, `resolving ${dir}`).message}`] };
  }
  const issues: string[] = [];
  const scripts: CheckedScript[] = [];
  contract.scripts.forEach((_, i) => {
    const r = checkEntry(realDir, dir, contract, i);
    if ("issue" in r) issues.push(r.issue);
    else scripts.push(r.script);
  });
  issues.push(...duplicateScriptIssues(contract));
  if (issues.length > 0) return { ok: false, issues: issues.sort(byScriptIndex) };
  return { ok: true, value: { contract, realDir, scripts } };
}

/** The Linux kernel's current path of an open file, when /proc says it (undefined elsewhere). */
function pathOfFd(fd: number): string | undefined {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return undefined;
  }
}

/**
 * The bytes of a checked entry, read from the very file that was checked: the real path is
 * opened once (O_NOFOLLOW), the descriptor's device and inode must equal the checked ones and,
 * where /proc tells, its current path must still be inside the subskill; the bytes come from that
 * descriptor. A file swapped (or a directory turned into a symlink) after the check is an issue,
 * never followed.
 */
export function readCheckedEntry(checked: CheckedContract, script: CheckedScript): Result<Buffer> {
  const field = `scripts.${checked.scripts.indexOf(script)}.entry`;
  let fd: number | undefined;
  try {
    fd = openSync(
      script.realPath,
      constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
    );
    const st = fstatSync(fd);
    const via = pathOfFd(fd);
    if (!st.isFile() || st.dev !== script.dev || st.ino !== script.ino) {
      return {
        ok: false,
        issues: [
          `${field}: ${script.entry} changed on disk after it was checked (another file at ${script.realPath})`,
        ],
      };
    }
    if (via !== undefined && !isInside(checked.realDir, via)) {
      return {
        ok: false,
        issues: [
          `${field}: ${script.entry} now lies at ${via}, outside the subskill ${checked.realDir}`,
        ],
      };
    }
    return { ok: true, value: readFileSync(fd) };
  } catch (error) {
    return {
      ok: false,
      issues: [`${field}: ${fromSystemError(error, `reading ${script.entry}`).message}`],
    };
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
