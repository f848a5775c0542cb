import { randomBytes } from "node:crypto";

/** The time source. Injected wherever a test needs to control time. */
export interface Clock {
  now(): Date;
}

/** The randomness source. Injected wherever a test needs reproducible ids. */
export interface Random {
  bytes(count: number): Uint8Array;
}

export const systemClock: Clock = { now: () => new Date() };

export const systemRandom: Random = { bytes: (count) => randomBytes(count) };

/** A clock that returns `start` and advances by `stepMs` on every call. */
export function createFixedClock(start: Date, stepMs = 0): Clock {
  let t = start.getTime();
  return {
    now() {
      const d = new Date(t);
      t += stepMs;
      return d;
    },
  };
}

/** A deterministic random source (xorshift32), for tests and reproducible demos. */
export function createSeededRandom(seed: number): Random {
  let x = seed >>> 0 || 0x9e3779b9;
  return {
    bytes(count) {
      const out = new Uint8Array(count);
      for (let i = 0; i < count; i++) {
        x ^= x << 13;
        x >>>= 0;
        x ^= x >>> 17;
        x ^= x << 5;
        x >>>= 0;
        out[i] = x & 0xff;
      }
      return out;
    },
  };
}
