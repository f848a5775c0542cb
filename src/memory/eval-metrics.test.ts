import { describe, expect, it } from "vitest";
import { bootstrap, computeMetrics, formatEstimate, type RunFacts } from "./eval-metrics.ts";

const run = (over: Partial<RunFacts>): RunFacts => ({
  run_id: "r",
  pairs: [],
  recoveries: [],
  eligible: false,
  with_card: false,
  right_card: null,
  first_try: null,
  turns: 0,
  seconds: null,
  view: null,
  ...over,
});

const opts = (seed = 18) => ({ resamples: 1000, seed });

describe("bootstrap", () => {
  const values = [0, 1, 1, 0, 1, 1, 1, 0, 1, 1].map((v) => ({ v }));
  const meanOf = (s: readonly { v: number }[]) => ({
    value: s.length === 0 ? null : s.reduce((a, x) => a + x.v, 0) / s.length,
    n: s.length,
  });

  it("the same runs and seed give the same interval; the interval holds the value and lies in the data's range", () => {
    const a = bootstrap(values, meanOf, opts());
    expect(a).toEqual(bootstrap(values, meanOf, opts()));
    expect(a.value).toBe(0.7);
    const [lo, hi] = a.ci95 ?? [Number.NaN, Number.NaN];
    expect(lo).toBeLessThan(0.7);
    expect(hi).toBeGreaterThan(0.7);
    expect(lo).toBeGreaterThanOrEqual(0);
    expect(hi).toBeLessThanOrEqual(1);
    // a different seed draws other samples
    const spread = [0.13, 0.57, 0.91, 0.02, 0.44, 0.38, 0.75, 0.66, 0.29, 0.81].map((v) => ({ v }));
    expect(bootstrap(spread, meanOf, opts(7)).ci95).not.toEqual(
      bootstrap(spread, meanOf, opts()).ci95,
    );
    // constant data: a zero-width interval
    expect(bootstrap([{ v: 1 }, { v: 1 }], meanOf, opts()).ci95).toEqual([1, 1]);
  });

  it("an undefined statistic has no value and no interval", () => {
    expect(bootstrap([], meanOf, opts())).toEqual({ value: null, ci95: null, n: 0 });
    expect(formatEstimate({ value: null, ci95: null, n: 0 })).toBe("- (n 0)");
    expect(formatEstimate({ value: 0.5, ci95: [0.25, 0.75], n: 4 })).toBe("0.5 [0.25, 0.75] (n 4)");
  });
});

describe("computeMetrics", () => {
  it("pools each metric over runs as the seed defines it", () => {
    const runs = [
      run({
        pairs: [
          { y: true, p: true },
          { y: false, p: false },
          { y: false, p: true },
        ],
        recoveries: [{ recovered: true, steps: 2, seconds: 30 }],
        first_try: true,
        turns: 10,
        seconds: 100,
        view: { routed: "guided", expected: "guided" },
      }),
      run({
        pairs: [
          { y: true, p: false },
          { y: true, p: true },
          { y: false, p: false },
        ],
        recoveries: [
          { recovered: true, steps: 4, seconds: null },
          { recovered: false, steps: null, seconds: null },
        ],
        eligible: true,
        with_card: true,
        right_card: true,
        first_try: true,
        turns: 4,
        seconds: 40,
        view: { routed: "terse", expected: "guided" },
      }),
      run({ eligible: true, right_card: false, first_try: false, turns: 6 }),
    ];
    const m = computeMetrics(runs, opts());
    expect(m.q1.drift_detection_rate).toMatchObject({ value: 0.667, n: 3 });
    expect(m.q1.run_detection_rate).toMatchObject({ value: 1, n: 2 });
    expect(m.q1.false_positive_rate).toMatchObject({ value: 0.333, n: 3 });
    expect(m.q1.recovery_steps).toMatchObject({ value: 3, n: 2 });
    expect(m.q1.recovery_seconds).toMatchObject({ value: 30, n: 1 });
    expect(m.q1.unrecovered).toBe(1);
    expect(m.q2.reuse_rate).toMatchObject({ value: 0.5, n: 2 });
    expect(m.q2.right_card_rate).toMatchObject({ value: 0.5, n: 2 });
    expect(m.q2.first_try_success.all).toMatchObject({ value: 0.667, n: 3 });
    expect(m.q2.first_try_success.with_card).toMatchObject({ value: 1, n: 1 });
    expect(m.q2.first_try_success.without_card).toMatchObject({ value: 0.5, n: 2 });
    expect(m.q2.turns.with_card).toMatchObject({ value: 4, n: 1 });
    expect(m.q2.turns.without_card).toMatchObject({ value: 8, n: 2 });
    expect(m.q2.seconds.without_card).toMatchObject({ value: 100, n: 1 });
    expect(m.q3.view_match).toMatchObject({ value: 0.5, n: 2 });
    for (const e of [m.q1.drift_detection_rate, m.q2.turns.without_card, m.q3.view_match]) {
      const [lo, hi] = e.ci95 ?? [Number.NaN, Number.NaN];
      expect(lo).toBeLessThanOrEqual(e.value ?? Number.NaN);
      expect(hi).toBeGreaterThanOrEqual(e.value ?? Number.NaN);
    }
    expect(computeMetrics(runs, opts())).toEqual(m);
  });
});
