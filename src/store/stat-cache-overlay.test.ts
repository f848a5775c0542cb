import { describe, expect, it } from "vitest";
import type { CachedStat } from "./stat-cache.ts";
import { decodeOverlay, encodeOverlay, type Overlay, shouldFold } from "./stat-cache-overlay.ts";

function overlayOf(files: number): Overlay {
  const map = new Map<string, CachedStat | null>();
  for (let i = 0; i < files; i++) {
    const oid = i.toString(16).padStart(40, "0");
    map.set(`d${i % 9}/f-${i}.ts`, {
      size: i,
      mtimeMs: 1e12 + i,
      ctimeMs: 1e12,
      ino: i,
      mode: 0o100644,
      oid,
    });
  }
  return {
    base: "0123456789abcdef",
    scanStartMs: 1e12,
    plain: true,
    files: map,
    others: new Map(),
    index: { scope: "s", skipped: [] },
    racy: [],
    counts: { files: files, dirs: 0, symlinks: 0, bytes: 0 },
  };
}

describe("when the overlay is folded into the base", () => {
  it("past a tenth of a small base, and past 2,048 entries however large the base", () => {
    // 10k files: a tenth (and 256) comes first
    expect(shouldFold(overlayOf(1200), 12_900)).toBe(false);
    expect(shouldFold(overlayOf(1600), 12_900)).toBe(true);
    // 100k files: a tenth would be ~13,000 entries, rewritten and scanned whole each snapshot
    expect(shouldFold(overlayOf(2048), 130_000)).toBe(false);
    expect(shouldFold(overlayOf(2049), 130_000)).toBe(true);
  });

  it("an overlay at the bound reads back as written", () => {
    const o = overlayOf(2048);
    const back = decodeOverlay(encodeOverlay(o));
    expect(typeof back === "string" ? back : [...back.files]).toEqual([...o.files]);
  });
});
