import { describe, expect, it } from "vitest";
import { ui } from "./browser.ts";

describe.skipIf(ui.skip !== undefined)("npm run demo", () => {
  it("ends with the command that opens the dashboard on its workspace", () => {
    const lines = (ui.demoOutput ?? "").trimEnd().split("\n");
    expect(lines.at(-1)?.trim()).toBe(`timewarp -C ${ui.project} ui --open`);
    expect(lines.at(-2)).toMatch(/dashboard/i);
  });
});
