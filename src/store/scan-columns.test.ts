import {
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { makeTempDir } from "../../test/helpers/cli.ts";
import { gitBlobId } from "../core/index.ts";
import { type ManifestEntry, manifestBytes } from "./manifest.ts";
import { scanWorkspace } from "./scan-workspace.ts";

/**
 * A scan keeps most files as rows of its stat cache's columns and makes their manifest entries
 * on demand (issue 22, item 5). Its manifest must be what an object per file gave: here, what
 * a plain recursive walk of the tree finds, entry for entry, and its text `manifestBytes`'s.
 */
function referenceEntries(root: string): ManifestEntry[] {
  const out: ManifestEntry[] = [];
  const walk = (rel: string) => {
    for (const name of readdirSync(rel === "" ? root : join(root, rel))) {
      const path = rel === "" ? name : `${rel}/${name}`;
      const st = lstatSync(join(root, path));
      const mode = st.mode & 0o7777;
      if (st.isDirectory()) {
        out.push({ path, type: "dir", mode, size: 0, mtime_ms: st.mtimeMs });
        walk(path);
      } else {
        const oid = gitBlobId(readFileSync(join(root, path)));
        out.push({ path, type: "file", mode, size: st.size, mtime_ms: st.mtimeMs, oid });
      }
    }
  };
  walk("");
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

const name = fc.constantFrom("a", "b", "a-b", "a.b", "ab", "é", "日本", "z z", "0");
const tree = fc.array(
  fc.tuple(fc.array(name, { minLength: 1, maxLength: 3 }), fc.string({ maxLength: 20 })),
  { maxLength: 25 },
);

describe("a scan's columns", () => {
  it("give the manifest an object per file gave, on random trees, walked and from the cache", () => {
    fc.assert(
      fc.property(tree, (files) => {
        const { dir, cleanup } = makeTempDir();
        try {
          for (const [parts, content] of files) {
            const path = join(dir, ...parts);
            try {
              mkdirSync(join(path, ".."), { recursive: true });
              writeFileSync(path, content);
              // Older than the scan (not racy): the second scan takes it from the cache.
              utimesSync(path, 1_700_000_000, 1_700_000_000.25);
            } catch {
              // a name already taken by a directory or a file on the way: not in this tree
            }
          }
          const want = referenceEntries(dir);
          const first = scanWorkspace(dir, { excludes: [] });
          expect(first.manifestText()).toEqual(manifestBytes({ schema_version: 1, entries: want }));
          expect(first.manifest.entries).toEqual(want);
          expect(first.manifestText()).toEqual(manifestBytes(first.manifest));
          // Again through the first scan's cache: every file a hit, rows carried over.
          const again = scanWorkspace(dir, { excludes: [], statCache: first.statCache });
          expect(again.manifestText()).toEqual(first.manifestText());
          expect(again.files).toBe(want.filter((e) => e.type === "file").length);
          expect(again.rehashed).toBe(0);
        } finally {
          cleanup();
        }
      }),
      { numRuns: 40 },
    );
  });
});
