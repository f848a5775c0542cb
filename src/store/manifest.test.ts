import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { brotliDecompressSync, gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { makeTempDir } from "../../test/helpers/cli.ts";
import { gitBlobId } from "../core/index.ts";
import {
  compressManifest,
  decodeManifest,
  diffManifestTexts,
  forgetManifestTexts,
  type Manifest,
  type ManifestEntry,
  ManifestSchema,
  manifestBytes,
  manifestProblem,
  readManifestTextFile,
  sortEntries,
  spliceManifestText,
} from "./manifest.ts";

const good = {
  schema_version: 1,
  entries: [
    { path: "a", type: "dir", mode: 0o755, size: 0, mtime_ms: 1.5 },
    {
      path: "a/b",
      type: "file",
      mode: 0o644,
      size: 3,
      mtime_ms: 2,
      oid: "0123456789abcdef0123456789abcdef01234567",
    },
    { path: "l", type: "symlink", mode: 0o777, size: 1, mtime_ms: 3, target: "a", extra: 1 },
  ],
};

/** Each mutation of the good manifest, and whether the schema accepts it. */
const cases: [string, (m: typeof good & Record<string, unknown>) => unknown][] = [
  ["as is", (m) => m],
  ["not an object", () => 42],
  ["null", () => null],
  ["other schema_version", (m) => ({ ...m, schema_version: 2 })],
  ["entries not an array", (m) => ({ ...m, entries: {} })],
  ["entry null", (m) => ({ ...m, entries: [null] })],
  ["entry an array", (m) => ({ ...m, entries: [[]] })],
  ["empty path", (m) => ({ ...m, entries: [{ ...m.entries[0], path: "" }] })],
  ["path a number", (m) => ({ ...m, entries: [{ ...m.entries[0], path: 7 }] })],
  ["unknown type", (m) => ({ ...m, entries: [{ ...m.entries[0], type: "fifo" }] })],
  ["negative mode", (m) => ({ ...m, entries: [{ ...m.entries[0], mode: -1 }] })],
  ["fractional size", (m) => ({ ...m, entries: [{ ...m.entries[0], size: 1.5 }] })],
  ["mtime a string", (m) => ({ ...m, entries: [{ ...m.entries[0], mtime_ms: "1" }] })],
  ["short oid", (m) => ({ ...m, entries: [{ ...m.entries[1], oid: "abc" }] })],
  ["upper-case oid", (m) => ({ ...m, entries: [{ ...m.entries[1], oid: "A".repeat(40) }] })],
  ["target a number", (m) => ({ ...m, entries: [{ ...m.entries[2], target: 1 }] })],
  ["path_b64 a number", (m) => ({ ...m, entries: [{ ...m.entries[0], path_b64: 1 }] })],
  ["missing mtime", (m) => ({ ...m, entries: [{ path: "x", type: "dir", mode: 1, size: 0 }] })],
];

describe("manifestProblem", () => {
  it.each(cases)("agrees with ManifestSchema: %s", (_name, mutate) => {
    const doc = mutate(structuredClone(good) as typeof good & Record<string, unknown>);
    const schemaOk = ManifestSchema.safeParse(doc).success;
    expect(manifestProblem(doc) === null).toBe(schemaOk);
  });

  it("accepts the good manifest and names the first bad field", () => {
    expect(manifestProblem(good)).toBeNull();
    expect(
      manifestProblem({ ...good, entries: [good.entries[0], { ...good.entries[1], size: -1 }] }),
    ).toBe("entries.1.size");
  });
});

describe("the canonical manifest text", () => {
  // The reference: JSON.stringify of each entry with its keys in canonical order, one per line.
  const reference = (m: Manifest) =>
    `{"schema_version":${m.schema_version},"entries":[\n${m.entries
      .map((e) => JSON.stringify(e))
      .join(",\n")}\n]}\n`;
  const entry = (i: number): ManifestEntry =>
    i % 3 === 0
      ? { path: `d${i}/é "q"\\${i}`, type: "dir", mode: 0o755, size: 0, mtime_ms: i + 0.25 }
      : i % 3 === 1
        ? {
            path: `d${i}/文件${i}.txt`,
            type: "file",
            mode: 0o100644,
            size: i,
            mtime_ms: 1_795_448_141_169.123 + i,
            oid: gitBlobId(Buffer.from(String(i))),
          }
        : {
            path: `l${i}`,
            path_b64: Buffer.from(`l${i}`).toString("base64"),
            type: "symlink",
            mode: 0o120777,
            size: 2,
            mtime_ms: i,
            target: `t\n${i}`,
          };

  it("equals the reference for an empty manifest and at any size, multibyte names included", () => {
    for (const n of [0, 1, 2, 3000]) {
      const m: Manifest = {
        schema_version: 1,
        entries: Array.from({ length: n }, (_, i) => entry(i)),
      };
      const text = reference(m);
      expect(manifestBytes(m).toString("utf8")).toBe(text);
      // Records written before trees hold the whole text (brotli), and their hash is its id.
      const whole = compressManifest(manifestBytes(m));
      expect(brotliDecompressSync(whole).toString("utf8")).toBe(text);
      const hash = gitBlobId(Buffer.from(text, "utf8"));
      expect(decodeManifest(whole, { hash, source: "test" })).toEqual(m);
      // Records written before brotli hold gzip; they still read.
      const gz = gzipSync(Buffer.from(text, "utf8"));
      expect(decodeManifest(gz, { hash, source: "old" })).toEqual(m);
    }
  });
});

describe("spliceManifestText", () => {
  const names = ["a", "a/b", "a.b", "a0", "a/b c", 'q"uote', "back\\slash", "é/è", "😀", "\u2028"];
  const fileEntry = (path: string, n: number): ManifestEntry => ({
    path,
    type: "file",
    mode: 0o644,
    size: n,
    mtime_ms: 1_795_448_141_169.5 + n,
    oid: gitBlobId(Buffer.from(`${path} ${n}`)),
  });
  const textOf = (byPath: Map<string, ManifestEntry>) =>
    manifestBytes({
      schema_version: 1,
      entries: sortEntries([...byPath.values()]),
    });

  it("gives manifestBytes' text for the edited manifest over random edits (adds, removals, changes)", () => {
    let seed = 3;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const pool: string[] = [];
    for (const top of names) {
      pool.push(top);
      for (const sub of names) pool.push(`${top}/${sub}`);
    }
    const current = new Map<string, ManifestEntry>();
    for (let round = 0; round < 300; round++) {
      const edits = new Map<string, ManifestEntry | null>();
      const count = 1 + Math.floor(rnd() * (round % 10 === 0 ? 60 : 4));
      for (let k = 0; k < count; k++) {
        const path = pool[Math.floor(rnd() * pool.length)] as string;
        edits.set(
          path,
          rnd() < 0.3
            ? null
            : rnd() < 0.2
              ? { path, type: "dir", mode: 0o755, size: 0, mtime_ms: round }
              : fileEntry(path, round * 10 + k),
        );
      }
      const before = textOf(current);
      for (const [p, e] of edits) {
        if (e === null) current.delete(p);
        else current.set(p, e);
      }
      const spliced = spliceManifestText(before, edits);
      expect(spliced?.toString("utf8")).toBe(textOf(current).toString("utf8"));
    }
  });

  it("refuses what it cannot edit in place: another text, a name that is not UTF-8", () => {
    const m = new Map([["a", fileEntry("a", 1)]]);
    expect(spliceManifestText(Buffer.from("{}"), new Map())).toBeNull();
    const b64: ManifestEntry = {
      ...fileEntry("x", 2),
      path_b64: Buffer.from("x").toString("base64"),
    };
    expect(spliceManifestText(textOf(m), new Map([["x", b64]]))).toBeNull();
    expect(spliceManifestText(textOf(new Map([["x", b64]])), new Map())).toBeNull();
  });
});

/** `diffManifestTexts` of two manifests' texts, checked against a diff of the maps. */
function expectTextDiff(x: Map<string, ManifestEntry>, y: Map<string, ManifestEntry>): void {
  const text = (m: Map<string, ManifestEntry>) =>
    manifestBytes({ schema_version: 1, entries: sortEntries([...m.values()]) });
  const d = diffManifestTexts(text(x), text(y));
  expect(d).not.toBeNull();
  const differs = (p: string) => JSON.stringify(x.get(p)) !== JSON.stringify(y.get(p));
  const sorted = (m: Map<string, ManifestEntry>) => sortEntries([...m.values()]);
  expect(d?.a).toEqual(sorted(x).filter((e) => differs(e.path)));
  expect(d?.b).toEqual(sorted(y).filter((e) => differs(e.path)));
  expect(d?.same).toBe([...x.keys()].filter((p) => y.has(p) && !differs(p)).length);
  expect(d?.bSymlinks).toEqual(
    sorted(y)
      .filter((e) => e.type === "symlink")
      .map((e) => e.path),
  );
}

describe("diffManifestTexts", () => {
  it("finds exactly the entries whose lines differ, over random pairs of manifests", () => {
    let seed = 5;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const paths = ["a", "a/b", "a.b", "a0", 'q"x', "é", "😀", "z/y", "z/y/x", "\u2028"];
    const make = (): Map<string, ManifestEntry> => {
      const m = new Map<string, ManifestEntry>();
      for (const path of paths) {
        const r = rnd();
        if (r < 0.3) continue;
        m.set(
          path,
          r < 0.4
            ? { path, type: "symlink", mode: 0o777, size: 1, mtime_ms: 1, target: "t" }
            : r < 0.55
              ? { path, type: "dir", mode: 0o755, size: 0, mtime_ms: Math.floor(rnd() * 2) }
              : {
                  path,
                  type: "file",
                  mode: 0o644,
                  size: 1,
                  mtime_ms: 2,
                  oid: gitBlobId(Buffer.from(String(Math.floor(rnd() * 2)))),
                },
        );
      }
      return m;
    };
    for (let round = 0; round < 300; round++) {
      const x = make();
      const y = rnd() < 0.2 ? new Map(x) : make();
      expectTextDiff(x, y);
    }
  });

  it("skips long equal runs a block at a time and still finds every difference (3000-entry texts)", () => {
    let seed = 11;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const entry = (path: string, v: number): ManifestEntry =>
      v % 5 === 4
        ? { path, type: "symlink", mode: 0o777, size: 1, mtime_ms: v, target: `t${v}` }
        : {
            path,
            type: "file",
            mode: 0o644,
            size: v,
            mtime_ms: 7,
            oid: gitBlobId(Buffer.from(`${v}`)),
          };
    const base = new Map<string, ManifestEntry>();
    for (let k = 0; k < 3000; k++) {
      const path = `d${k % 17}/${"x".repeat(k % 7)}f${k}.ts`;
      base.set(path, entry(path, k));
    }
    const keys = [...base.keys()];
    for (let round = 0; round < 40; round++) {
      const x = new Map(base);
      const y = new Map(base);
      // a few edits on either side, clustered or spread, at the ends too
      for (let k = 0; k < 1 + Math.floor(rnd() * 12); k++) {
        const side = rnd() < 0.5 ? x : y;
        const at =
          rnd() < 0.1 ? (rnd() < 0.5 ? 0 : keys.length - 1) : Math.floor(rnd() * keys.length);
        const path = keys[at] as string;
        const op = rnd();
        if (op < 0.3) side.delete(path);
        else if (op < 0.7) side.set(path, entry(path, 10_000 + Math.floor(rnd() * 1000)));
        else {
          const extra = `${path}.new${Math.floor(rnd() * 3)}`;
          side.set(extra, entry(extra, Math.floor(rnd() * 50)));
        }
      }
      expectTextDiff(x, y);
    }
  });
});

describe("readManifestTextFile", () => {
  it("keeps the text it read until forgetManifestTexts drops it", () => {
    const t = makeTempDir();
    try {
      const file = join(t.dir, "manifest.json.br");
      const text = manifestBytes(good as Manifest);
      const encoded = { bytes: compressManifest(text), hash: gitBlobId(text) };
      writeFileSync(file, encoded.bytes);
      const first = readManifestTextFile(file, encoded.hash);
      expect(readManifestTextFile(file, encoded.hash)).toBe(first);
      forgetManifestTexts();
      const again = readManifestTextFile(file, encoded.hash);
      expect(again).not.toBe(first);
      expect(again.equals(first)).toBe(true);
    } finally {
      t.cleanup();
    }
  });
});
