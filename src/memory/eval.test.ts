import { describe, expect, it } from "vitest";
import { rocAuc } from "./eval.ts";

describe("rocAuc", () => {
  it("is the chance a positive outscores a negative, ties half; null without both classes", () => {
    expect(
      rocAuc([
        { y: true, score: 0.9 },
        { y: false, score: 0.1 },
      ]),
    ).toBe(1);
    expect(
      rocAuc([
        { y: true, score: 0.1 },
        { y: false, score: 0.9 },
      ]),
    ).toBe(0);
    expect(
      rocAuc([
        { y: true, score: 0.5 },
        { y: false, score: 0.5 },
      ]),
    ).toBe(0.5);
    expect(
      rocAuc([
        { y: true, score: 1 },
        { y: true, score: 0.25 },
        { y: false, score: 0.6 },
        { y: false, score: 0 },
      ]),
    ).toBe(0.75);
    expect(rocAuc([{ y: false, score: 0.3 }])).toBeNull();
  });
});
