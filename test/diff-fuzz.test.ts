import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSeededRandom, ErrorCode, TimewarpError } from "../src/core/index.ts";
import {
  checkFilePatch,
  createPatch,
  formatPatch,
  parsePatch,
  patchStats,
  reverseFilePatch,
} from "../src/diff/index.ts";
import { buildHistory, readTree } from "./fixtures/diff/git-history.ts";
import { makeTempDir } from "./helpers/cli.ts";

/**
 * Garbage never hangs and never throws anything but a coded error: seeded random mutations of
 * real diffs (git's and ours) are parsed, and whatever parses is applied, reversed and formatted.
 */

const CASES = 3000;
let tmp: { dir: string; cleanup: () => void };
let corpus: Buffer[] = [];
let contents: Buffer[] = [];

beforeAll(() => {
  tmp = makeTempDir("tw-diff-fuzz-");
  const repo = buildHistory(tmp.dir);
  const [c0 = "", c1 = "", c2 = "", c3 = ""] = repo.commits;
  for (const [a, b] of [
    [c0, c1],
    [c1, c2],
    [c2, c3],
  ] as const) {
    corpus.push(repo.git(["diff", "--binary", "--full-index", "-M", "-C", a, b]));
    const ta = readTree(repo, a);
    const tb = readTree(repo, b);
    corpus.push(
      Buffer.from(
        createPatch(
          [...ta.keys()].map((k) => ({
            oldPath: k,
            newPath: tb.has(k) ? k : null,
            before: ta.get(k)?.data ?? null,
            after: tb.get(k)?.data ?? null,
          })),
        ),
      ),
    );
    contents.push(...[...ta.values()].map((e) => e.data));
  }
});
afterAll(() => {
  tmp.cleanup();
  corpus = [];
  contents = [];
});

function mutate(src: Buffer, rnd: () => number): Buffer {
  const lines = src.toString("latin1").split("\n");
  const pick = () => Math.floor(rnd() * lines.length);
  const rounds = 1 + Math.floor(rnd() * 3);
  for (let r = 0; r < rounds; r++) {
    const i = pick();
    const line = lines[i] ?? "";
    switch (Math.floor(rnd() * 9)) {
      case 0:
        lines.splice(i, 1);
        break;
      case 1:
        lines.splice(i, 0, line);
        break;
      case 2: {
        const at = Math.floor(rnd() * (line.length + 1));
        lines[i] =
          line.slice(0, at) + String.fromCharCode(Math.floor(rnd() * 256)) + line.slice(at + 1);
        break;
      }
      case 3:
        lines[i] = line.replace(/\d+/, () => String(Math.floor(rnd() * 1e6)));
        break;
      case 4:
        lines.length = Math.max(0, i);
        break;
      case 5: {
        const j = pick();
        lines[i] = lines[j] ?? "";
        lines[j] = line;
        break;
      }
      case 6:
        lines.splice(
          i,
          0,
          [
            "@@ -1 +1 @@",
            "\\ No newline at end of file",
            "GIT binary patch",
            "literal 3",
            "delta 9",
            "diff --git a",
            '"a/\\',
            "rename from x",
            "",
          ][Math.floor(rnd() * 9)] ?? "",
        );
        break;
      case 7:
        lines[i] = line.slice(0, Math.floor(rnd() * line.length));
        break;
      default:
        lines[i] = line.replace(/^[-+ ]/, () => "-+ \\"[Math.floor(rnd() * 4)] ?? " ");
    }
  }
  return Buffer.from(lines.join("\n"), "latin1");
}

describe("parse/apply fuzz over the corpus", () => {
  // A hang meets the test's timeout; how fast parse and apply are is `npm run bench:diff`'s
  // business (a test never asserts wall-clock time).
  it(`${CASES} seeded mutations: only coded errors, no hangs`, () => {
    const random = createSeededRandom(20261123);
    const rnd = () => {
      const b = random.bytes(4);
      const u32 =
        (((b[0] ?? 0) << 24) | ((b[1] ?? 0) << 16) | ((b[2] ?? 0) << 8) | (b[3] ?? 0)) >>> 0;
      return u32 / 2 ** 32;
    };
    const codes = new Map<string, number>();
    let parsed = 0;
    for (let n = 0; n < CASES; n++) {
      const src = corpus[n % corpus.length] as Buffer;
      const bytes = mutate(src, rnd);
      try {
        const patches = n % 2 ? parsePatch(bytes) : parsePatch(bytes.toString("utf8"));
        parsed++;
        for (const p of patches) {
          const before = p.oldPath === null ? null : (contents[n % contents.length] ?? null);
          checkFilePatch(before, p);
          checkFilePatch(before, p, { allowOffset: true, fuzz: 2, checkOid: false });
          patchStats(p);
          try {
            checkFilePatch(null, reverseFilePatch(p), { checkOid: false });
          } catch (error) {
            if (!(error instanceof TimewarpError) || error.code !== ErrorCode.DIFF_NOT_REVERSIBLE)
              throw error;
          }
        }
        formatPatch(patches, "unified");
        formatPatch(patches, "context");
      } catch (error) {
        if (!(error instanceof TimewarpError)) throw error;
        expect(error.code).toBe(ErrorCode.DIFF_PARSE_ERROR);
        expect(error.message).toMatch(/^line \d+: /);
        codes.set(error.code, (codes.get(error.code) ?? 0) + 1);
      }
    }
    // Both paths are exercised: many mutants still parse, many are refused with a coded error.
    expect(parsed).toBeGreaterThan(CASES / 10);
    expect(codes.get(ErrorCode.DIFF_PARSE_ERROR) ?? 0).toBeGreaterThan(CASES / 10);
  });
});
