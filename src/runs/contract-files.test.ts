import { spawnSync } from "node:child_process";
import {
  mkdirSync,
  mkdtempSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  checkContract,
  duplicateScriptIssues,
  parseContract,
  readCheckedEntry,
} from "./contract.ts";

let root: string;
let skill: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "tw-contract-files-"));
  skill = join(root, "subskills", "demo");
  mkdirSync(join(skill, "templates"), { recursive: true });
  writeFileSync(join(skill, "templates", "run.tcl"), "set x 1\n");
  mkdirSync(join(root, "elsewhere"));
  writeFileSync(join(root, "elsewhere", "evil.tcl"), "exec rm -rf ~\n");
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function contract(scripts: string): string {
  return [
    'schema_version: "1.0"',
    "name: demo",
    "version: 0.1.0",
    "tool: innovus",
    "scripts:",
    scripts,
    "outputs:",
    "  required:",
    "    - path: reports/out.rpt",
    "debug_hints: [one, two]",
    "",
  ].join("\n");
}

const one = (entry: string, name = "run") => `  - name: ${name}\n    entry: ${entry}`;

function check(scripts: string) {
  writeFileSync(join(skill, "contract.yaml"), contract(scripts));
  return checkContract(skill);
}

function issuesOf(r: ReturnType<typeof checkContract>): string {
  expect(r.ok).toBe(false);
  return r.ok ? "" : r.issues.join("\n");
}

describe("checkContract: the files behind the text", () => {
  it("accepts entries that exist, resolving a symlink that stays inside the subskill", () => {
    symlinkSync("run.tcl", join(skill, "templates", "alias.tcl"));
    const r = check([one("templates/run.tcl"), one("templates/alias.tcl", "again")].join("\n"));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.realDir).toBe(realpathSync(skill));
    expect(r.value.scripts.map((s) => [s.file, s.realPath])).toEqual([
      ["demo__run.tcl", realpathSync(join(skill, "templates", "run.tcl"))],
      ["demo__again.tcl", realpathSync(join(skill, "templates", "run.tcl"))],
    ]);
  });

  it("refuses a missing entry, naming the field", () => {
    const text = issuesOf(
      check([one("templates/run.tcl"), one("templates/gone.tcl", "second")].join("\n")),
    );
    expect(text).toMatch(/^scripts\.1\.entry: templates\/gone\.tcl does not exist/m);
    expect(text).not.toContain("scripts.0");
  });

  it("refuses a symlink to a .tcl outside the subskill, and a dangling one", () => {
    symlinkSync(join(root, "elsewhere", "evil.tcl"), join(skill, "templates", "evil.tcl"));
    symlinkSync(join(root, "nowhere.tcl"), join(skill, "templates", "dangling.tcl"));
    const text = issuesOf(
      check([one("templates/evil.tcl"), one("templates/dangling.tcl", "b")].join("\n")),
    );
    expect(text).toMatch(
      /^scripts\.0\.entry: templates\/evil\.tcl resolves to .*elsewhere\/evil\.tcl, outside the subskill/m,
    );
    expect(text).toMatch(/^scripts\.1\.entry: templates\/dangling\.tcl does not exist/m);
  });

  it("refuses an entry whose directory is a symlink leading out", () => {
    symlinkSync(join(root, "elsewhere"), join(skill, "lib"));
    expect(issuesOf(check(one("lib/evil.tcl")))).toMatch(
      /^scripts\.0\.entry: .*outside the subskill/,
    );
  });

  it("accepts a subskill folder that is itself a symlink (the boundary is its real path)", () => {
    symlinkSync(skill, join(root, "linked"));
    writeFileSync(join(skill, "contract.yaml"), contract(one("templates/run.tcl")));
    const r = checkContract(join(root, "linked"));
    expect(r.ok).toBe(true);
  });

  it("refuses an entry that is not a regular file (a directory, a FIFO)", () => {
    mkdirSync(join(skill, "templates", "dir.tcl"));
    const fifo = spawnSync("mkfifo", [join(skill, "templates", "pipe.tcl")]);
    const scripts = [one("templates/dir.tcl")];
    if (fifo.status === 0) scripts.push(one("templates/pipe.tcl", "pipe"));
    const text = issuesOf(check(scripts.join("\n")));
    expect(text).toMatch(
      /^scripts\.0\.entry: templates\/dir\.tcl is not a regular file \(a directory\)/m,
    );
    if (fifo.status === 0)
      expect(text).toMatch(/^scripts\.1\.entry: .*not a regular file \(a FIFO\)/m);
  });

  it("refuses duplicate script names, and names that differ only in case", () => {
    const text = issuesOf(
      check(
        [one("templates/run.tcl"), one("templates/run.tcl", "Run"), one("templates/run.tcl")].join(
          "\n",
        ),
      ),
    );
    expect(text).toMatch(/^scripts\.1\.name: "Run" and scripts\.0 "run" map to the same file/m);
    expect(text).toMatch(/^scripts\.2\.name: duplicate script name "run" \(also scripts\.0\)/m);
  });

  it("duplicateScriptIssues is pure and silent for distinct names", () => {
    const parsed = parseContract(contract([one("a.tcl", "one"), one("a.tcl", "two")].join("\n")));
    expect(parsed.ok && duplicateScriptIssues(parsed.value)).toEqual([]);
  });

  it("takes timeout_s per script: a positive number", () => {
    const good = check(`${one("templates/run.tcl")}\n    timeout_s: 1.5`);
    expect(good.ok && good.value.scripts[0]?.timeout_s).toBe(1.5);
    expect(issuesOf(check(`${one("templates/run.tcl")}\n    timeout_s: 0`))).toMatch(
      /^scripts\.0\.timeout_s:/,
    );
    expect(issuesOf(check(`${one("templates/run.tcl")}\n    timeout_s: soon`))).toMatch(
      /^scripts\.0\.timeout_s:/,
    );
  });
});

describe("readCheckedEntry: the copy reads the file that was checked", () => {
  it("reads the checked bytes", () => {
    const r = check(one("templates/run.tcl"));
    if (!r.ok) throw new Error(r.issues.join("; "));
    const bytes = readCheckedEntry(r.value, r.value.scripts[0] as never);
    expect(bytes.ok && bytes.value.toString()).toBe("set x 1\n");
  });

  it("refuses a file replaced after the check (another inode at the same path)", () => {
    const r = check(one("templates/run.tcl"));
    if (!r.ok) throw new Error(r.issues.join("; "));
    writeFileSync(join(skill, "templates", "new.tcl"), "puts swapped\n");
    renameSync(join(skill, "templates", "new.tcl"), join(skill, "templates", "run.tcl"));
    const bytes = readCheckedEntry(r.value, r.value.scripts[0] as never);
    expect(bytes.ok).toBe(false);
    if (!bytes.ok)
      expect(bytes.issues[0]).toMatch(/^scripts\.0\.entry: .*changed on disk after it was checked/);
  });

  it("refuses a directory swapped for a symlink leading out after the check", () => {
    const r = check(one("templates/run.tcl"));
    if (!r.ok) throw new Error(r.issues.join("; "));
    writeFileSync(join(root, "elsewhere", "run.tcl"), "exec evil\n");
    renameSync(join(skill, "templates"), join(root, "old-templates"));
    symlinkSync(join(root, "elsewhere"), join(skill, "templates"));
    const bytes = readCheckedEntry(r.value, r.value.scripts[0] as never);
    expect(bytes.ok).toBe(false);
  });

  it("refuses the checked file itself moved out of the subskill (where /proc tells)", () => {
    const r = check(one("templates/run.tcl"));
    if (!r.ok) throw new Error(r.issues.join("; "));
    // the same inode (device and inode match), reached through a directory symlink leading out
    renameSync(join(skill, "templates"), join(root, "moved"));
    symlinkSync(join(root, "moved"), join(skill, "templates"));
    const bytes = readCheckedEntry(r.value, r.value.scripts[0] as never);
    expect(bytes.ok).toBe(false);
    if (!bytes.ok && process.platform === "linux")
      expect(bytes.issues[0]).toMatch(/now lies at .*moved\/run\.tcl, outside the subskill/);
  });
});
