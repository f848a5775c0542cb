import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { TIMEWARP_VERSION } from "./version.ts";

describe("TIMEWARP_VERSION", () => {
  it("is the package's version, so --version, the MCP server and run manifests agree with npm", () => {
    const pkg = JSON.parse(
      readFileSync(join(import.meta.dirname, "..", "..", "package.json"), "utf8"),
    );
    expect(TIMEWARP_VERSION).toBe(pkg.version);
  });
});
