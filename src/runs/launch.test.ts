import { describe, expect, it } from "vitest";
import {
  type LaunchSettings,
  planLaunch,
  shellQuote,
  splitCommandLine,
  tclQuote,
} from "./launch.ts";

const base: LaunchSettings = {
  tclsh: "tclsh",
  innovus: "innovus",
  innovus_args: ["-no_gui", "-init", "{boot}"],
  dsub_template: "dsub -I {cmd}",
  dsub_tool: "innovus",
};

describe("planLaunch", () => {
  it("runs the boot script directly under tclsh and with -no_gui under Innovus", () => {
    expect(
      planLaunch({ adapter: "tclsh", settings: base, bootPath: "/r/session/boot.tcl" }),
    ).toEqual(["tclsh", "/r/session/boot.tcl"]);
    expect(planLaunch({ adapter: "innovus", settings: base, bootPath: "/b.tcl" })).toEqual([
      "innovus",
      "-no_gui",
      "-init",
      "/b.tcl",
    ]);
  });

  it("splices {cmd} as words and {cmd_q} as one shell-quoted word for site launchers", () => {
    expect(planLaunch({ adapter: "dsub-i", settings: base, bootPath: "/b.tcl" })).toEqual([
      "dsub",
      "-I",
      "innovus",
      "-no_gui",
      "-init",
      "/b.tcl",
    ]);
    expect(
      planLaunch({
        adapter: "dsub-i",
        settings: { ...base, dsub_template: "bsub -Is -q 'long queue' {cmd}" },
        bootPath: "/b.tcl",
      }),
    ).toEqual(["bsub", "-Is", "-q", "long queue", "innovus", "-no_gui", "-init", "/b.tcl"]);
    expect(
      planLaunch({
        adapter: "dsub-i",
        settings: { ...base, dsub_template: "sh -c {cmd_q}", dsub_tool: "tclsh" },
        bootPath: "/a b/boot.tcl",
      }),
    ).toEqual(["sh", "-c", "tclsh '/a b/boot.tcl'"]);
  });

  it("refuses a template without a placeholder (CONFIG_INVALID)", () => {
    expect(() =>
      planLaunch({
        adapter: "dsub-i",
        settings: { ...base, dsub_template: "dsub -I" },
        bootPath: "/b",
      }),
    ).toThrow(expect.objectContaining({ code: "CONFIG_INVALID" }));
  });
});

describe("quoting", () => {
  it("splits like a shell without expanding anything", () => {
    expect(splitCommandLine(`a 'b c' "d \\"e\\" $HOME" f\\ g`)).toEqual([
      "a",
      "b c",
      'd "e" $HOME',
      "f g",
    ]);
    expect(() => splitCommandLine("a 'b")).toThrow(
      expect.objectContaining({ code: "CONFIG_INVALID" }),
    );
  });

  it("quotes for sh and Tcl so that no character is interpreted", () => {
    expect(shellQuote("plain/path.tcl")).toBe("plain/path.tcl");
    expect(shellQuote("it's")).toBe(`'it'"'"'s'`);
    expect(tclQuote('/x/$y [z] {w} "q"\\')).toBe('"/x/\\$y \\[z\\] \\{w\\} \\"q\\"\\\\"');
  });
});
