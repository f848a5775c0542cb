import { afterEach } from "vitest";
import { makeTempDir } from "./cli.ts";

/**
 * Temp directories for the tests of one `describe` (call it in its body): each call of the
 * returned function makes one, and all of them are removed after each test.
 */
export function tempDirs(prefix?: string): () => string {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0).reverse()) c();
  });
  return () => {
    const t = makeTempDir(prefix);
    cleanups.push(t.cleanup);
    return t.dir;
  };
}
