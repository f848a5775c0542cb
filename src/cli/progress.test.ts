import { describe, expect, it } from "vitest";
import { createProgressLine } from "./progress.ts";

function harness(enabled: boolean) {
  let t = 0;
  const written: string[] = [];
  const progress = createProgressLine({
    enabled,
    write: (s) => written.push(s),
    now: () => t,
    afterMs: 1000,
  });
  return { progress, written, advance: (ms: number) => (t += ms) };
}

describe("createProgressLine", () => {
  it("says nothing for work that ends within the delay, not even a clear", () => {
    const h = harness(true);
    h.progress("scanned 10 entries");
    h.advance(999);
    h.progress("scanned 20 entries");
    h.progress("");
    expect(h.written).toEqual([]);
  });

  it("rewrites one line once the work runs past the delay, and clears it at the end", () => {
    const h = harness(true);
    h.progress("scanned 10 entries");
    h.advance(1000);
    h.progress("scanned 5000 entries");
    h.progress("scanned 9000 entries");
    h.progress("");
    expect(h.written).toEqual([
      "\r\x1b[2Kscanned 5000 entries",
      "\r\x1b[2Kscanned 9000 entries",
      "\r\x1b[2K",
    ]);
  });

  it("never writes when disabled (--json, stderr not a terminal)", () => {
    const h = harness(false);
    h.advance(5000);
    h.progress("scanned 9000 entries");
    h.progress("");
    expect(h.written).toEqual([]);
  });
});
