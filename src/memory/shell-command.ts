import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { posix } from "node:path";
import { Language, type Node, Parser } from "web-tree-sitter";
import { ErrorCode, TimewarpError } from "../core/index.ts";
import { SWE_AGENT_READ_COMMANDS } from "./swe-agent-commands.ts";

/**
 * What a shell command line does to files and whether it runs tests, read from its syntax tree
 * (tree-sitter-bash through web-tree-sitter), never from regular expressions over the text: a
 * pipeline, a list (`cd x && …`), a subshell, a redirection, a here-document and `bash -c '…'`
 * are each taken apart, and every simple command is judged by its own words.
 */

/** A file the command line writes. `confidence` says how exact the reading is. */
export interface ShellWrite {
  path: string;
  /** The construct that writes it: `>`, `>>`, `tee`, `sed -i`, `cp`, `rm`, `git checkout`, `heredoc patch`… */
  how: string;
  confidence: number;
  change?: "added" | "modified" | "deleted";
}

/** A test run: the runner and the simple command that runs it. */
export interface ShellTest {
  framework: string;
  command: string;
  /** The whole top-level statement it is part of (`pytest -q || true`, `cd x && pytest | tail`). */
  statement: string;
}

export interface ShellReading {
  /** Each simple command's text, in order. */
  commands: string[];
  writes: ShellWrite[];
  /** Files only read (`cat`, `grep`, `sed -n`, `git diff` …): never edits. */
  reads: string[];
  /** Something may write files that cannot be named (`python - <<EOF`, `bash x.sh`, `git apply x.diff`). */
  unknownWrite: boolean;
  tests: ShellTest[];
  /** Scripts run by an interpreter (`python repro.py`, `node x.js`): a reproduction when the run created them. */
  scripts: string[];
  /** The parser met a syntax error: the reading covers what it could parse. */
  error: boolean;
  /** SWE-agent's `open f` / `create f`: the file its `edit N:M` commands then change. */
  opened: string[];
  /** SWE-agent's `edit N:M … end_of_edit`: an edit of the file last opened. */
  editsOpenFile: boolean;
}

let parser: Parser | undefined;
let loading: Promise<Parser> | undefined;

/**
 * Load web-tree-sitter and the bash grammar, once per process (~25 ms). Both .wasm files are
 * found through the package resolver from this module's location (in the bundled bin, the
 * bundle's: the package root's node_modules), and read from disk — no dynamic import.
 */
export function loadShellParser(): Promise<void> {
  if (loading === undefined) {
    loading = (async () => {
      const require = createRequire(import.meta.url);
      const runtime = require.resolve("web-tree-sitter/web-tree-sitter.wasm");
      await Parser.init({
        locateFile: () => runtime,
        wasmBinary: readFileSync(runtime),
      } as Parameters<typeof Parser.init>[0]);
      const bash = await Language.load(
        readFileSync(require.resolve("tree-sitter-bash/tree-sitter-bash.wasm")),
      );
      const p = new Parser();
      p.setLanguage(bash);
      parser = p;
      return p;
    })();
    loading.catch(() => {
      loading = undefined;
    });
  }
  return loading.then(() => undefined);
}

/** `readShellCommand` after loading the parser. */
export async function readShell(command: string): Promise<ShellReading> {
  await loadShellParser();
  return readShellCommand(command);
}

/** Read one command line. Synchronous: `await loadShellParser()` first (NOT_INITIALIZED otherwise). */
export function readShellCommand(command: string): ShellReading {
  if (parser === undefined)
    throw new TimewarpError(
      ErrorCode.NOT_INITIALIZED,
      "the shell parser is not loaded: await loadShellParser() first",
    );
  const out: ShellReading = {
    commands: [],
    writes: [],
    reads: [],
    unknownWrite: false,
    tests: [],
    scripts: [],
    error: false,
    opened: [],
    editsOpenFile: false,
  };
  readInto(parser, command, { cwd: undefined }, out, 0);
  return out;
}

/** The test runner a command line runs, or undefined (a line of code that mentions pytest is not a command that runs it). */
export function testRunOf(reading: ShellReading): ShellTest | undefined {
  return reading.tests[0];
}

interface Ctx {
  cwd: string | undefined;
  /** The top-level statement being read (for a test's `statement`). */
  statement?: string;
}

const MAX_DEPTH = 4;

function readInto(p: Parser, text: string, ctx: Ctx, out: ShellReading, depth: number): void {
  const tree = p.parse(text);
  if (tree === null) {
    out.error = true;
    return;
  }
  try {
    if (tree.rootNode.hasError) out.error = true;
    if (depth > 0) visit(p, tree.rootNode, ctx, out, depth, undefined);
    else
      for (const top of tree.rootNode.namedChildren) {
        if (top === null) continue;
        ctx.statement = top.text.trim();
        visit(p, top, ctx, out, depth, undefined);
      }
  } finally {
    tree.delete();
  }
}

function visit(
  p: Parser,
  node: Node,
  ctx: Ctx,
  out: ShellReading,
  depth: number,
  stdin: string | undefined,
): void {
  switch (node.type) {
    case "command":
      command(p, node, ctx, out, depth, stdin);
      return;
    case "redirected_statement": {
      const body = node.childForFieldName("body");
      let heredoc: string | undefined;
      const files: Node[] = [];
      /** `cat <<EOF > f && next`: the grammar hangs `> f` and `&& next` on the here-document */
      const after: Node[] = [];
      for (const r of node.namedChildren) {
        if (r === null || r === body) continue;
        if (r.type === "heredoc_redirect") {
          heredoc = heredocBody(r);
          for (const c of r.namedChildren) {
            if (c === null || /^heredoc_(start|body|end)$/.test(c.type)) continue;
            if (c.type === "file_redirect") files.push(c);
            else after.push(c);
          }
        } else if (r.type === "herestring_redirect")
          heredoc = wordValue(r.namedChildren[0] ?? null);
        else if (r.type === "file_redirect") files.push(r);
      }
      if (body !== null) visit(p, body, ctx, out, depth, heredoc ?? stdin);
      // the grammar hangs `a && b > f` on the whole list: the file is b's, after a's `cd`
      for (const r of files) redirect(r, ctx, out);
      for (const c of after) visit(p, c, ctx, out, depth, undefined);
      return;
    }
    case "subshell": {
      const inner: Ctx = { ...ctx };
      for (const c of node.namedChildren) if (c !== null) visit(p, c, inner, out, depth, stdin);
      return;
    }
    case "heredoc_body":
    case "comment":
      return;
    default: {
      const kids = node.namedChildren.filter((c): c is Node => c !== null);
      // a here-document feeds the last command of a list or pipeline body (`cd x && python - <<EOF`)
      kids.forEach((c, i) => {
        visit(p, c, ctx, out, depth, i === kids.length - 1 ? stdin : undefined);
      });
    }
  }
}

function heredocBody(r: Node): string {
  const body = r.namedChildren.find((c) => c?.type === "heredoc_body");
  return body?.text ?? "";
}

/** `>`/`>>`/`&>`/`>|` to a file: a write (not /dev/null, not a descriptor duplication). */
function redirect(r: Node, ctx: Ctx, out: ShellReading): void {
  const op = r.children.find((c) => c !== null && !c.isNamed)?.type ?? "";
  const dest = r.childForFieldName("destination");
  if (dest === null) return;
  if (op === "<") {
    const v = wordValue(dest);
    if (v !== undefined) out.reads.push(at(ctx, v));
    return;
  }
  if (!/^(>|>>|&>|&>>|>\|)$/.test(op)) return;
  const v = wordValue(dest);
  if (v === undefined || isGlob(v)) {
    out.unknownWrite = true;
    return;
  }
  if (/^\/dev\//.test(v)) return;
  out.writes.push({ path: at(ctx, v), how: op, confidence: 0.9 });
}

/** A word's value when it is literal; undefined when it expands (`$X`, `$(…)`). */
function wordValue(n: Node | null): string | undefined {
  if (n === null) return undefined;
  switch (n.type) {
    case "word":
    case "number":
      return n.text.replace(/\\(.)/g, "$1");
    case "raw_string":
      return n.text.slice(1, -1);
    case "ansi_c_string":
      return n.text.slice(2, -1);
    case "string": {
      let s = "";
      for (const c of n.namedChildren) {
        if (c === null) continue;
        if (c.type !== "string_content") return undefined;
        s += c.text;
      }
      return s;
    }
    case "concatenation": {
      let s = "";
      for (const c of n.namedChildren) {
        const v = wordValue(c);
        if (v === undefined) return undefined;
        s += v;
      }
      return s;
    }
    default:
      return undefined;
  }
}

const isGlob = (s: string) => /[*?[]/.test(s);
const norm = (s: string) => posix.normalize(s).replace(/^\.\//, "");

function at(ctx: Ctx, path: string): string {
  if (ctx.cwd === undefined || path.startsWith("/") || path.startsWith("~")) return norm(path);
  return norm(posix.join(ctx.cwd, path));
}

function command(
  p: Parser,
  node: Node,
  ctx: Ctx,
  out: ShellReading,
  depth: number,
  stdin: string | undefined,
): void {
  out.commands.push(node.text);
  const argv: (string | undefined)[] = [];
  for (const c of node.namedChildren) {
    if (c === null) continue;
    if (c.type === "command_name") argv.push(wordValue(c.namedChildren[0] ?? null));
    else if (c.type === "file_redirect") redirect(c, ctx, out);
    else if (c.type === "herestring_redirect") stdin = wordValue(c.namedChildren[0] ?? null);
    else if (c.type === "variable_assignment") {
      if (argv.length > 0) argv.push(wordValue(c));
    } else if (argv.length > 0) argv.push(wordValue(c));
    // commands inside arguments (`echo $(sed -i … f)`) run too
    for (const sub of c.descendantsOfType(["command_substitution", "process_substitution"]))
      if (sub !== null) visit(p, sub, { ...ctx }, out, depth, undefined);
  }
  judge(p, argv, node.text, ctx, out, depth, stdin);
}

const READERS = new Set([
  "cat",
  "head",
  "tail",
  "less",
  "more",
  "nl",
  "wc",
  "ls",
  "tree",
  "file",
  "stat",
  "diff",
  "cmp",
  "sort",
  "uniq",
  "cut",
  "xxd",
  "od",
  "hexdump",
  "bat",
  "md5sum",
  "sha256sum",
  "readlink",
  "realpath",
  "basename",
  "dirname",
  "du",
  "strings",
]);
/** Readers whose first operand is a pattern or program, not a file. */
const PATTERN_READERS = new Set(["grep", "egrep", "fgrep", "rg", "ag", "ack", "awk", "gawk"]);
const GIT_READS = new Set([
  "diff",
  "log",
  "show",
  "status",
  "blame",
  "grep",
  "ls-files",
  "rev-parse",
  "branch",
  "remote",
  "config",
  "describe",
  "shortlog",
  "cat-file",
]);
const SHELLS = new Set(["bash", "sh", "zsh", "dash", "ksh"]);
const PYTHON = /^(python(\d+(\.\d+)?)?|pypy3?)$/;

const operands = (args: (string | undefined)[]) =>
  args.filter((a): a is string => a !== undefined && a !== "--" && !a.startsWith("-"));

/** Drop wrappers that run another command (`timeout 60 pytest`, `uv run pytest`, `env X=1 …`). */
function unwrap(argv: (string | undefined)[]): (string | undefined)[] {
  let a = argv;
  for (let guard = 0; guard < 8 && a.length > 0; guard++) {
    const b = base(a[0]);
    if (b === "env") {
      let i = 1;
      while (i < a.length && (a[i]?.startsWith("-") || /^\w+=/.test(a[i] ?? ""))) i++;
      a = a.slice(i);
    } else if (b === "timeout") {
      let i = 1;
      while (i < a.length && a[i]?.startsWith("-")) i += /^-[sk]$/.test(a[i] ?? "") ? 2 : 1;
      a = a.slice(i + 1);
    } else if (
      ["time", "nohup", "command", "exec", "nice", "stdbuf", "xvfb-run", "sudo"].includes(b)
    ) {
      let i = 1;
      while (i < a.length && a[i]?.startsWith("-"))
        i += /^-(n|u|g)$/.test(a[i] ?? "") && b !== "stdbuf" ? 2 : 1;
      a = a.slice(i);
    } else if (["uv", "poetry", "pipenv", "pdm", "hatch", "rye"].includes(b) && a[1] === "run") {
      let i = 2;
      while (i < a.length && a[i]?.startsWith("-")) i++;
      a = a.slice(i);
    } else if (b === "conda" && a[1] === "run") {
      let i = 2;
      while (i < a.length && a[i]?.startsWith("-"))
        i += /^-(n|p)$|^--(name|prefix)$/.test(a[i] ?? "") ? 2 : 1;
      a = a.slice(i);
    } else if (b === "npx" || b === "bunx" || b === "pnpx") {
      let i = 1;
      while (i < a.length && a[i]?.startsWith("-"))
        i += /^-p$|^--package$/.test(a[i] ?? "") ? 2 : 1;
      a = a.slice(i);
    } else if (b === "pnpm" && (a[1] === "exec" || a[1] === "dlx")) a = a.slice(2);
    else if (b === "bundle" && a[1] === "exec") a = a.slice(2);
    else if (b === "coverage" && a[1] === "run") {
      const rest = a.slice(2).filter((x) => !x?.startsWith("--"));
      a = rest[0] === "-m" ? ["python", ...rest] : ["python", ...rest];
    } else break;
  }
  return a;
}

function base(word: string | undefined): string {
  return word === undefined ? "" : (word.split("/").pop() ?? word);
}

/** One simple command, unwrapped, with what reading it needs: the families below judge it. */
interface Simple {
  p: Parser;
  name: string;
  args: (string | undefined)[];
  text: string;
  ctx: Ctx;
  out: ShellReading;
  depth: number;
  stdin: string | undefined;
  write: Write;
}

type Write = (path: string, how: string, confidence: number, change?: ShellWrite["change"]) => void;

/** A family of commands: true when it knows `name` and has judged it, false to pass it on. */
type Family = (s: Simple) => boolean;

/** Commands that neither write files nor run tests. */
const QUIET = new Set([
  "echo",
  "printf",
  "true",
  "false",
  "pwd",
  "which",
  "type",
  "export",
  "source",
  ".",
  "set",
  "unset",
  "sleep",
  "date",
  "whoami",
  "env",
  "mkdir",
  "pip",
  "pip3",
  "chmod",
  "test",
  "[",
  "exit",
  "history",
  "clear",
  "submit",
]);

/** The families in the order they are asked: the first that knows a command judges it. */
const FAMILIES: readonly Family[] = [
  testScript,
  changeDirectory,
  shell,
  interpreter,
  testRunner,
  gitCommand,
  sweAgentCommand,
  xargs,
  reader,
  fileWriter,
  formatter,
  ({ name }) => QUIET.has(name),
];

/** What one simple command does: asks each family in turn. */
function judge(
  p: Parser,
  argv0: (string | undefined)[],
  text: string,
  ctx: Ctx,
  out: ShellReading,
  depth: number,
  stdin: string | undefined,
): undefined {
  const argv = unwrap(argv0);
  if (argv.length === 0) return;
  if (argv[0] === undefined) {
    out.unknownWrite = true;
    return;
  }
  const write: Write = (path, how, confidence, change) => {
    if (isGlob(path)) out.unknownWrite = true;
    else out.writes.push({ path: at(ctx, path), how, confidence, ...(change ? { change } : {}) });
  };
  const name = base(argv[0]);
  const s: Simple = { p, name, args: argv.slice(1), text, ctx, out, depth, stdin, write };
  for (const family of FAMILIES) if (family(s)) return;
  // anything else (an editor, a build tool, a project script) may write what it likes
  out.unknownWrite = true;
}

function recordTest(s: Pick<Simple, "text" | "ctx" | "out">, framework: string): true {
  s.out.tests.push({
    framework,
    command: s.text.trim(),
    statement: s.ctx.statement ?? s.text.trim(),
  });
  return true;
}

/** A test script run directly (`./runtests.py`, `manage.py test`) or a runner named for its language. */
function testScript(s: Simple): boolean {
  const { name, args } = s;
  if (name === "runtests.py") return recordTest(s, "django");
  if (name === "manage.py" && args[0] === "test") return recordTest(s, "django");
  if (name === "phpunit" || name === "rspec") return recordTest(s, name);
  if (name === "dotnet" && args[0] === "test") return recordTest(s, "dotnet");
  return false;
}

/** `cd dir`: later commands' relative paths are read from there. */
function changeDirectory({ name, args, ctx }: Simple): boolean {
  if (name !== "cd") return false;
  const d = args.find((a) => a !== undefined && !a.startsWith("-"));
  if (d !== undefined && d !== "-") ctx.cwd = d.startsWith("/") ? norm(d) : at(ctx, d);
  return true;
}

/** `bash -c '…'` is read in turn; `bash x.sh` runs a script; `bash <<<'…'` reads stdin. */
function shell({ p, name, args, ctx, out, depth, stdin }: Simple): boolean {
  if (!SHELLS.has(name)) return false;
  const c = args.findIndex((a) => a !== undefined && /^-[a-z]*c[a-z]*$/.test(a));
  if (c >= 0) {
    const script = args[c + 1];
    if (script === undefined || depth >= MAX_DEPTH) out.unknownWrite = true;
    else readInto(p, script, { ...ctx }, out, depth + 1);
    return true;
  }
  const file = operands(args)[0];
  if (file !== undefined) {
    out.scripts.push(at(ctx, file));
    out.unknownWrite = true;
  } else if (stdin !== undefined && depth < MAX_DEPTH)
    readInto(p, stdin, { ...ctx }, out, depth + 1);
  return true;
}

/** Python and the JavaScript runtimes: a test run, or a script that may write anything. */
function interpreter(s: Simple): boolean {
  const { name, args, text, ctx, out } = s;
  if (PYTHON.test(name)) {
    python(args, text, ctx, out);
    return true;
  }
  if (!["node", "deno", "bun", "ts-node", "tsx"].includes(name)) return false;
  if (
    args.includes("--test") ||
    (name === "bun" && args[0] === "test") ||
    (name === "deno" && args[0] === "test")
  )
    return recordTest(s, name === "node" ? "node" : name);
  const file = operands(args)[0];
  if (file !== undefined && !args.includes("-e") && !args.includes("--eval")) {
    out.scripts.push(at(ctx, file));
  }
  out.unknownWrite = true;
  return true;
}

/** Test runners and the build tools' test targets (`npm test`, `go test`, `mvn verify`, `make check`). */
function testRunner(s: Simple): boolean {
  const { name, args } = s;
  if (name === "pytest" || name === "py.test") return recordTest(s, "pytest");
  if (name === "nosetests") return recordTest(s, "nose");
  if (name === "tox" || name === "nox" || name === "jest" || name === "mocha" || name === "ctest")
    return recordTest(s, name);
  if (name === "vitest") return args.includes("--version") || recordTest(s, "vitest");
  if (name === "django-admin" && args.includes("test")) return recordTest(s, "django");
  if (name === "npm" || name === "pnpm" || name === "yarn" || name === "bun") {
    const sub = operands(args);
    const s0 = sub[0] ?? "";
    if (
      s0 === "test" ||
      s0 === "t" ||
      ((s0 === "run" || s0 === "run-script") && /^test\b/.test(sub[1] ?? ""))
    )
      return recordTest(s, "npm");
    if (name === "yarn" && ["jest", "vitest", "mocha"].includes(s0)) return recordTest(s, s0);
    return true;
  }
  if (name === "go") return operands(args)[0] !== "test" || recordTest(s, "go");
  if (name === "cargo") {
    const s0 = operands(args)[0];
    return (s0 !== "test" && s0 !== "nextest") || recordTest(s, "cargo");
  }
  if (name === "mvn" || name === "mvnw")
    return (
      !operands(args).some((a) => /^(test|verify|surefire:test)$/.test(a)) || recordTest(s, "maven")
    );
  if (name === "gradle" || name === "gradlew")
    return !operands(args).some((a) => /(^|:)(test|check)$/.test(a)) || recordTest(s, "gradle");
  if (name === "make" || name === "gmake") {
    const targets: string[] = [];
    for (let i = 0; i < args.length; i++) {
      const a = args[i];
      if (a === undefined) continue;
      if (/^-[CfIoW]$/.test(a)) i++;
      else if (!a.startsWith("-") && !a.includes("=")) targets.push(a);
    }
    return !targets.some((t) => /^(test|tests|check)$/.test(t)) || recordTest(s, "make");
  }
  return false;
}

function gitCommand({ name, args, ctx, out, stdin, write }: Simple): boolean {
  if (name !== "git") return false;
  git(args, ctx, out, stdin, write);
  return true;
}

/**
 * SWE-agent's commands (bash functions in its sandbox), its editor tool run as a command, and
 * Codex's `apply_patch`.
 */
function sweAgentCommand({ name, args, ctx, out, stdin, write }: Simple): boolean {
  if (name === "str_replace_editor") {
    const [sub, file] = args;
    if (file === undefined || sub === undefined) return true;
    if (sub === "view") out.reads.push(at(ctx, file));
    else if (sub === "create") write(file, "str_replace_editor create", 0.95, "added");
    else if (sub === "str_replace" || sub === "insert" || sub === "undo_edit")
      write(file, `str_replace_editor ${sub}`, 0.95);
    return true;
  }
  if (name === "open" || name === "create") {
    const file = operands(args)[0];
    if (file === undefined) return true;
    out.opened.push(at(ctx, file));
    if (name === "create") write(file, "create", 0.9, "added");
    else out.reads.push(at(ctx, file));
    return true;
  }
  if (name === "edit" && /^\d+:\d+$/.test(args[0] ?? "")) {
    out.editsOpenFile = true;
    return true;
  }
  if (name === "submit" || SWE_AGENT_READ_COMMANDS.includes(name)) return true;
  if (name === "apply_patch" || name === "applypatch") {
    // Codex's patch format: "*** Update File: path", "*** Add File: path", "*** Delete File: path"
    const body = stdin ?? args.find((a) => a?.includes("*** Begin Patch")) ?? "";
    const files = [...body.matchAll(/^\*\*\* (Update|Add|Delete) File: (.+)$/gm)];
    if (files.length === 0) out.unknownWrite = true;
    for (const m of files) {
      const kind = m[1] === "Add" ? "added" : m[1] === "Delete" ? "deleted" : "modified";
      write((m[2] ?? "").trim(), "apply_patch", 0.95, kind);
    }
    for (const m of body.matchAll(/^\*\*\* Move to: (.+)$/gm))
      write((m[1] ?? "").trim(), "apply_patch", 0.95, "added");
    return true;
  }
  return false;
}

/** `xargs [opts] cmd …`: judged as `cmd …` (its input is not known). */
function xargs({ p, name, args, text, ctx, out, depth }: Simple): boolean {
  if (name !== "xargs") return false;
  let i = 0;
  while (i < args.length && args[i]?.startsWith("-"))
    i += /^-[InLPdE]$/.test(args[i] ?? "") ? 2 : 1;
  if (i < args.length) judge(p, args.slice(i), text, ctx, out, depth, undefined);
  return true;
}

/** Commands that only read their file operands (`cat`, `grep pattern f`), and `find`. */
function reader({ name, args, ctx, out }: Simple): boolean {
  if (READERS.has(name)) {
    const valued = name === "head" || name === "tail" ? /^-[nc]$|^--(lines|bytes)$/ : /^(?!)/;
    out.reads.push(
      ...operands(args.filter((_, i) => !valued.test(args[i - 1] ?? ""))).map((f) => at(ctx, f)),
    );
    return true;
  }
  if (PATTERN_READERS.has(name)) {
    if ((name === "awk" || name === "gawk") && args.some((a) => a === "inplace")) {
      out.unknownWrite = true;
      return true;
    }
    const hasE = args.some((a) => a === "-e" || a === "-f" || a?.startsWith("--regexp"));
    out.reads.push(
      ...operands(args)
        .slice(hasE ? 0 : 1)
        .map((f) => at(ctx, f)),
    );
    return true;
  }
  if (name === "find") {
    if (args.some((a) => a === "-delete" || a === "-exec" || a === "-execdir")) {
      const i = args.findIndex((a) => a === "-exec" || a === "-execdir");
      if (i >= 0 && ["cat", "grep", "head", "ls", "wc", "file"].includes(base(args[i + 1])))
        return true;
      out.unknownWrite = true;
    }
    return true;
  }
  return false;
}

/** Commands that write their file operands: `sed -i`, `tee`, `cp`, `mv`, `rm`, `touch`, `patch`… */
function fileWriter({ name, args, ctx, out, stdin, write }: Simple): boolean {
  if (name === "sed") {
    inPlace(args, "sed", ["-e", "-f", "--expression", "--file"], out, write, ctx);
    return true;
  }
  if (name === "perl") {
    inPlace(args, "perl", ["-e", "-E", "-M", "-I"], out, write, ctx);
    return true;
  }
  if (name === "tee") {
    for (const f of operands(args)) if (!f.startsWith("/dev/")) write(f, "tee", 0.9);
    return true;
  }
  if (name === "cp" || name === "mv" || name === "install") {
    copyOrMove(name, args, ctx, out, write);
    return true;
  }
  if (name === "rm" || name === "unlink") {
    for (const f of operands(args)) write(f, "rm", 0.8, "deleted");
    return true;
  }
  if (name === "touch") {
    for (const f of operands(args)) write(f, "touch", 0.6);
    return true;
  }
  if (name === "truncate") {
    const ops = operands(args.filter((_, i) => !/^-[sr]$/.test(args[i - 1] ?? "")));
    for (const f of ops) write(f, "truncate", 0.8);
    return true;
  }
  if (name === "patch") {
    diffApply(args, "patch", ctx, out, stdin, write);
    return true;
  }
  return false;
}

/** `cp`/`mv`/`install SRC… DEST` or `-t DIR SRC…`: each destination written; `mv` deletes its sources. */
function copyOrMove(
  name: string,
  args: (string | undefined)[],
  ctx: Ctx,
  out: ShellReading,
  write: Write,
): void {
  const ops = operands(
    args.filter((a, i) => !/^-[tS]$/.test(args[i - 1] ?? "") || a === undefined),
  );
  const tIdx = args.indexOf("-t");
  const target = tIdx >= 0 ? args[tIdx + 1] : ops[ops.length - 1];
  const sources = tIdx >= 0 ? ops.filter((o) => o !== target) : ops.slice(0, -1);
  if (target === undefined || sources.length === 0) return;
  if (name === "install" && args.includes("-d")) return;
  const intoDir = tIdx >= 0 || target.endsWith("/") || sources.length > 1;
  for (const src of sources) {
    const dest = intoDir ? posix.join(target, base(src)) : target;
    write(dest, name, 0.8);
    if (name === "mv") write(src, "mv", 0.8, "deleted");
    else out.reads.push(at(ctx, src));
  }
}

const FORMATTERS = new Set(["black", "isort", "autopep8", "gofmt", "prettier", "ruff"]);

/** Code formatters, which rewrite the files they name unless told only to check. */
function formatter({ name, args, out, write }: Simple): boolean {
  if (!FORMATTERS.has(name)) return false;
  const writes =
    name === "black" || name === "isort"
      ? !args.includes("--check") && !args.includes("--diff")
      : name === "ruff"
        ? args.includes("--fix") || operands(args)[0] === "format"
        : args.some((a) => a === "-i" || a === "-w" || a === "--in-place" || a === "--write");
  if (!writes) return true;
  const files = operands(args).filter((f) => f !== "format" && f !== "check" && /\.\w+$/.test(f));
  if (files.length === 0) out.unknownWrite = true;
  for (const f of files) write(f, name, 0.7);
  return true;
}

function python(
  args: (string | undefined)[],
  text: string,
  ctx: Ctx,
  out: ShellReading,
): undefined {
  const test = (framework: string): undefined => {
    out.tests.push({ framework, command: text.trim(), statement: ctx.statement ?? text.trim() });
    return undefined;
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === undefined) {
      out.unknownWrite = true;
      return;
    }
    if (a === "-m") {
      const mod = args[i + 1] ?? "";
      const rest = args.slice(i + 2);
      if (mod === "pytest" || mod === "py.test") return test("pytest");
      if (mod === "unittest") return test("unittest");
      if (mod === "tox" || mod === "nox" || mod === "nose") return test(mod);
      if (mod === "django" && rest.includes("test")) return test("django");
      if (mod === "pip" || mod === "venv" || mod === "json.tool" || mod === "http.server") return;
      out.unknownWrite = true;
      return;
    }
    if (a === "-c") {
      out.unknownWrite = true;
      return;
    }
    if (/^-[WXQ]$/.test(a)) {
      i++;
      continue;
    }
    if (a.startsWith("-") && a !== "-") continue;
    if (a === "-") {
      out.unknownWrite = true;
      return;
    }
    // the script
    const rest = args.slice(i + 1);
    if (base(a) === "runtests.py") return test("django");
    if (base(a) === "manage.py" && rest[0] === "test") return test("django");
    if (base(a) === "setup.py" && rest.includes("test")) return test("pytest");
    out.scripts.push(at(ctx, a));
    out.unknownWrite = true;
    return;
  }
  // `python <<EOF` or a bare interpreter: code from stdin
  out.unknownWrite = true;
}

function git(
  args: (string | undefined)[],
  ctx: Ctx,
  out: ShellReading,
  stdin: string | undefined,
  write: (path: string, how: string, confidence: number, change?: ShellWrite["change"]) => void,
): undefined {
  let i = 0;
  while (i < args.length && args[i]?.startsWith("-")) i += /^-[Cc]$/.test(args[i] ?? "") ? 2 : 1;
  const sub = args[i];
  const rest = args.slice(i + 1);
  if (sub === undefined) return;
  if (GIT_READS.has(sub)) return;
  if (sub === "checkout" || sub === "restore") {
    const dd = rest.indexOf("--");
    const valued = /^(-s|--source|-b|-B)$/;
    const named = operands(rest.filter((_, k) => !valued.test(rest[k - 1] ?? "")));
    // `git checkout src/a.py` without `--`: an operand with a file extension is a file, not a branch
    const files =
      dd >= 0
        ? operands(rest.slice(dd + 1))
        : sub === "restore"
          ? named
          : named.filter((f) => /\.\w+$/.test(f) && !rest.includes("-b"));
    if (files.length === 0) {
      out.unknownWrite = true;
      return;
    }
    for (const f of files) write(f, `git ${sub}`, dd >= 0 || sub === "restore" ? 0.8 : 0.7);
    return;
  }
  if (sub === "rm") {
    for (const f of operands(rest)) write(f, "git rm", 0.8, "deleted");
    return;
  }
  if (sub === "mv") {
    const ops = operands(rest);
    const target = ops[ops.length - 1];
    if (target !== undefined && ops.length === 2) {
      write(ops[0] ?? "", "git mv", 0.8, "deleted");
      write(target, "git mv", 0.8);
    } else out.unknownWrite = true;
    return;
  }
  if (sub === "apply" || sub === "am") {
    if (rest.includes("--check") || rest.includes("--stat")) return;
    return diffApply(rest, `git ${sub}`, ctx, out, stdin, write);
  }
  if (["add", "commit", "fetch", "clone", "init", "tag"].includes(sub)) return;
  out.unknownWrite = true;
}

/** `patch`/`git apply`: the files a here-document diff names; else unknown. */
function diffApply(
  args: (string | undefined)[],
  how: string,
  _ctx: Ctx,
  out: ShellReading,
  stdin: string | undefined,
  write: (path: string, how: string, confidence: number) => void,
): undefined {
  if (stdin !== undefined) {
    const files = [...stdin.matchAll(/^\+\+\+ (?:b\/)?(\S+)/gm)]
      .map((m) => m[1] ?? "")
      .filter((f) => f !== "" && f !== "/dev/null");
    if (files.length > 0) {
      for (const f of files) write(f, `${how} (here-document)`, 0.9);
      return;
    }
  }
  // `patch file.py fix.diff`: the first operand is the file patched
  if (how === "patch") {
    const ops = operands(args.filter((_, i) => !/^-[ipdoBrz]$/.test(args[i - 1] ?? "")));
    const first = ops[0];
    if (first !== undefined && ops.length >= 2) {
      write(first, "patch", 0.8);
      return;
    }
  }
  out.unknownWrite = true;
}

/** `sed -i` / `perl -pi -e`: the operands after the program are edited in place; without -i, read. */
function inPlace(
  args: (string | undefined)[],
  how: string,
  valued: string[],
  out: ShellReading,
  write: (path: string, how: string, confidence: number) => void,
  ctx: Ctx,
): undefined {
  let inplace = false;
  let program = false;
  const files: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === undefined) continue;
    if (a === "--in-place" || a.startsWith("--in-place=")) inplace = true;
    else if (a === "" && how === "sed" && args[i - 1] === "-i") continue;
    else if (/^-[a-zA-Z]+/.test(a) && !a.startsWith("--")) {
      const flags = a.slice(1);
      if (how === "sed" && flags.startsWith("i")) inplace = true;
      else if (how === "perl" && /i/.test(flags.replace(/[eEMI].*$/, ""))) inplace = true;
      else if (how === "sed" && /^[nrsEzu]*i/.test(flags)) inplace = true;
      if (valued.includes(`-${flags.slice(-1)}`) || valued.includes(a)) {
        program = true;
        if (a.length === 2 || /[eEf]$/.test(a)) i++;
      }
    } else if (valued.includes(a)) {
      program = true;
      i++;
    } else if (a === "--") continue;
    else if (!program) program = true;
    else files.push(a);
  }
  if (!inplace) {
    out.reads.push(...files.map((f) => at(ctx, f)));
    return;
  }
  for (const f of files) write(f, `${how} -i`, 0.9);
}

/** The runner a command line runs tests with, or undefined (sync: load the parser first). */
export function testFramework(command: string): string | undefined {
  return readShellCommand(command).tests[0]?.framework;
}
