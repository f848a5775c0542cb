import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDirs } from "../../test/helpers/temp-dirs.ts";
import { createDirWatcher, type DirWatch } from "./watch-handle.ts";

const tempDir = tempDirs("tw-watch-handle-");

interface Seen {
  watch: DirWatch;
  type: string;
  name: string | null;
}

/** Events until `done` says enough (or 5 s pass: the test then fails on what it has). */
async function eventsUntil(done: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
}

const ways = [
  { way: "Node's raw handles", fsWatch: undefined, raw: true },
  { way: "fs.watch", fsWatch: "1", raw: false },
] as const;

describe.each(ways)("watching directories through $way", ({ fsWatch, raw }) => {
  const opened: DirWatch[] = [];
  afterEach(() => {
    for (const w of opened.splice(0)) w.close();
    delete process.env.TIMEWARP_WATCH_FS_WATCH;
  });
  const watcher = (seen: Seen[], errors: Error[] = []) => {
    if (fsWatch === undefined) delete process.env.TIMEWARP_WATCH_FS_WATCH;
    else process.env.TIMEWARP_WATCH_FS_WATCH = fsWatch;
    const dirs = createDirWatcher(
      function (type, name) {
        seen.push({ watch: this, type, name: name === null ? null : name.toString("utf8") });
      },
      (error) => {
        errors.push(error);
      },
    );
    expect(dirs.raw).toBe(raw);
    return (abs: string): DirWatch => {
      const w = dirs.watch(abs);
      opened.push(w);
      return w;
    };
  };

  it("reports each directory's creates, writes, renames and deletes to the one listener, `this` the watch, names as bytes", async () => {
    const a = tempDir();
    const b = tempDir();
    const seen: Seen[] = [];
    const watch = watcher(seen);
    const wa = watch(a);
    const wb = watch(b);
    writeFileSync(join(a, "new.txt"), "x");
    // a name that is not ASCII comes through as its bytes
    writeFileSync(join(b, "é-b.txt"), "y");
    renameSync(join(a, "new.txt"), join(a, "moved.txt"));
    mkdirSync(join(b, "sub"));
    rmSync(join(a, "moved.txt"));
    const names = () =>
      seen.map((s) => `${s.watch === wa ? "a" : s.watch === wb ? "b" : "?"}:${s.name}`);
    await eventsUntil(() => names().includes("a:moved.txt") && names().includes("b:sub"));
    expect(new Set(names())).toEqual(new Set(["a:new.txt", "a:moved.txt", "b:é-b.txt", "b:sub"]));
    expect(seen.some((s) => s.type === "rename")).toBe(true);
    expect(seen.some((s) => s.type === "change")).toBe(true);
  });

  it("reports nothing after close, and a second close is harmless", async () => {
    const a = tempDir();
    const seen: Seen[] = [];
    const watch = watcher(seen);
    const w = watch(a);
    w.close();
    w.close();
    writeFileSync(join(a, "after.txt"), "x");
    // a second watch on another directory shows that events are being delivered meanwhile
    const b = tempDir();
    const wb = watch(b);
    writeFileSync(join(b, "other.txt"), "x");
    await eventsUntil(() => seen.some((s) => s.watch === wb));
    expect(seen.filter((s) => s.watch === w)).toEqual([]);
  });

  it("throws as fs.watch does for a directory that is missing or not a directory's path", () => {
    const a = tempDir();
    const watch = watcher([]);
    expect(() => watch(join(a, "missing"))).toThrow(
      expect.objectContaining({ code: "ENOENT", syscall: "watch" }),
    );
    writeFileSync(join(a, "file"), "x");
    expect(() => watch(join(a, "file", "below"))).toThrow(
      expect.objectContaining({ code: "ENOTDIR" }),
    );
  });
});

describe("the raw handles are not used where Node would warn about them", () => {
  const saved = { ...process.env };
  afterEach(() => {
    for (const key of ["NODE_PENDING_DEPRECATION", "NODE_OPTIONS", "TIMEWARP_WATCH_FS_WATCH"]) {
      if (saved[key] === undefined) delete process.env[key];
      else process.env[key] = saved[key];
    }
  });
  const noop = () => {};

  it.each([
    { how: "NODE_PENDING_DEPRECATION=1", env: { NODE_PENDING_DEPRECATION: "1" } },
    {
      how: "--pending-deprecation in NODE_OPTIONS",
      env: { NODE_OPTIONS: "--pending-deprecation" },
    },
    {
      how: "--pending_deprecation in NODE_OPTIONS",
      env: { NODE_OPTIONS: "--pending_deprecation" },
    },
  ])("$how: fs.watch", ({ env }) => {
    delete process.env.TIMEWARP_WATCH_FS_WATCH;
    expect(createDirWatcher(noop, noop).raw).toBe(true);
    Object.assign(process.env, env);
    expect(createDirWatcher(noop, noop).raw).toBe(false);
  });
});
