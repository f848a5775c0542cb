/**
 * Edits of real code as people make them, deterministic from a seed: used by the diff tests
 * against git and by `npm run bench:diff`.
 */

/** A small deterministic generator (the edits must not depend on the run). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 0x100000000;
  };
}

/** Edits as people make them: blocks deleted, a function inserted, lines rewritten. */
export function realisticEdit(text: string, seed: number): string {
  const rnd = rng(seed);
  const lines = text.split("\n");
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const r = rnd();
    if (r < 0.002) {
      i += Math.floor(rnd() * 8);
      continue;
    }
    if (r < 0.004) out.push("    // inserted", "    foo();", "}", "");
    if (r < 0.006) {
      out.push((lines[i] ?? "").replace(/[a-z]/, "Q"));
      continue;
    }
    out.push(lines[i] ?? "");
  }
  return out.join("\n");
}
