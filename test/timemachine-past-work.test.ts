import { execFileSync, spawnSync } from "node:child_process";
import {
  chmodSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createSnapshot, exportSnapshot } from "../src/store/index.ts";
import { returnToPresent, travel } from "../src/timemachine/index.ts";
import { makeTempDir } from "./helpers/cli.ts";

/**
 * Issue 16, classes 1 and 9 together: the work kept by a plain `return` is read by the names'
 * bytes (a name that is not UTF-8 made `return` fail with ENOENT before it wrote anything) and
 * says nothing about what the snapshot did not capture (a file over max_file_bytes, a FIFO),
 * which is neither the past's work nor deleted by it.
 */

const CAP = 2048;
const BYTE_NAME = Buffer.from([0x6e, 0xff, 0xfe, 0x2e, 0x74]); // "n\xff\xfe.t": not UTF-8

let tmp: ReturnType<typeof makeTempDir>;
let root: string;
beforeEach(() => {
  tmp = makeTempDir("tw-past-work-");
  root = join(tmp.dir, "ws");
  mkdirSync(join(root, ".timewarp"), { recursive: true });
  writeFileSync(
    join(root, ".timewarp", "config.json"),
    JSON.stringify({ schema_version: 1, max_file_bytes: CAP, watch: false }),
  );
});
afterEach(() => tmp.cleanup());

const byteNamed = () => Buffer.concat([Buffer.from(`${root}/`), BYTE_NAME]);

describe("the past work a return keeps", () => {
  it("carries a name that is not UTF-8 by its bytes, and leaves out what the snapshot skipped", () => {
    writeFileSync(join(root, "a.txt"), "v1\n");
    writeFileSync(join(root, "big.bin"), "x");
    truncateSync(join(root, "big.bin"), 8 * CAP); // over max_file_bytes: skipped
    expect(spawnSync("mkfifo", [join(root, "pipe")]).status).toBe(0);
    const snapshot = createSnapshot(root, {});
    expect(snapshot.record.skipped.map((s) => s.path).sort()).toEqual(["big.bin", "pipe"]);
    const bigIno = statSync(join(root, "big.bin")).ino;

    travel({ root, snapshotId: snapshot.id });
    writeFileSync(byteNamed(), "made in the past\n");
    writeFileSync(join(root, "a.txt"), "v2 in the past\n");
    const back = returnToPresent({ root });

    expect(back.past_work_files).toBe(2);
    const patch = readFileSync(back.past_work_path ?? "", "utf8");
    // git's own quoting of the exact bytes, and nothing about the skipped paths
    expect(patch).toContain("diff --git a/a.txt b/a.txt");
    expect(patch).toContain('"b/n\\377\\376.t"');
    expect(patch).not.toContain("big.bin");
    expect(patch).not.toContain("pipe");
    const meta = JSON.parse(
      readFileSync((back.past_work_path ?? "").replace(/\.patch$/, ".json"), "utf8"),
    ) as { files: string[] };
    expect(meta.files).toEqual(["a.txt", "n\uFFFD\uFFFD.t"]);
    expect(statSync(join(root, "big.bin")).ino).toBe(bigIno);
    expect(statSync(join(root, "pipe")).isFIFO()).toBe(true);

    // git apply on an export of the snapshot brings the past's bytes back, under the same name.
    const out = join(tmp.dir, "export");
    exportSnapshot(root, snapshot.id, out);
    execFileSync("git", ["apply", "--binary", back.past_work_path ?? ""], {
      cwd: join(out, "workspace"),
    });
    const applied = Buffer.concat([Buffer.from(`${out}/workspace/`), BYTE_NAME]);
    expect(readFileSync(applied, "utf8")).toBe("made in the past\n");
    expect(readFileSync(join(out, "workspace", "a.txt"), "utf8")).toBe("v2 in the past\n");
  });

  it("keeps a change made in the past to a present file the snapshot did not capture", () => {
    writeFileSync(join(root, "a.txt"), "v1\n");
    expect(spawnSync("mkfifo", [join(root, "x")]).status).toBe(0);
    const snapshot = createSnapshot(root, {}); // x: a FIFO, skipped
    rmSync(join(root, "x"));
    writeFileSync(join(root, "x"), "the present's x\n");
    const went = travel({ root, snapshotId: snapshot.id });
    expect(went.untouched).toEqual(["x"]); // the present's x stays in the past
    writeFileSync(join(root, "x"), "edited in the past\n");
    const back = returnToPresent({ root });

    expect(readFileSync(join(root, "x"), "utf8")).toBe("the present's x\n");
    expect(back.past_work_files).toBe(1);
    const out = join(tmp.dir, "export");
    exportSnapshot(root, snapshot.id, out);
    execFileSync("git", ["apply", "--binary", back.past_work_path ?? ""], {
      cwd: join(out, "workspace"),
    });
    expect(readFileSync(join(out, "workspace", "x"), "utf8")).toBe("edited in the past\n");
  });

  it("keeps no patch for a mode change a git patch cannot carry (0644 to 0600)", () => {
    writeFileSync(join(root, "a.txt"), "v1\n");
    writeFileSync(join(root, "run.sh"), "echo\n");
    const snapshot = createSnapshot(root, {});
    travel({ root, snapshotId: snapshot.id });
    chmodSync(join(root, "a.txt"), 0o600);
    expect(returnToPresent({ root }).past_work_path).toBeNull();

    travel({ root, snapshotId: snapshot.id });
    chmodSync(join(root, "a.txt"), 0o600);
    chmodSync(join(root, "run.sh"), 0o755);
    const back = returnToPresent({ root });
    expect(back.past_work_files).toBe(1);
    expect(readFileSync(back.past_work_path ?? "", "utf8")).toBe(
      "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n",
    );
  });
});
