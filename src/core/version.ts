/** timewarp's version: the CLI's `--version`, the MCP server's, a SkillPilot manifest's runtime. */
export const TIMEWARP_VERSION = "0.1.0";
