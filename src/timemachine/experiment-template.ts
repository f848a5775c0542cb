/** The zh seed's initial `experiment.md` (§10): success criteria copied, the rest placeholders. */
export function formatExperimentTemplate(options: {
  issueId: string;
  snapshotId: string;
  successCriteria: string;
}): string {
  return [
    "# Experiment",
    "",
    "## Issue",
    `- id: ${options.issueId}`,
    `- snapshot_id: ${options.snapshotId}`,
    "",
    "## Success Criteria",
    options.successCriteria,
    "",
    "## Repro",
    "<optional: minimal steps to reproduce>",
    "",
    "## Changes",
    "<what the experiment changed>",
    "",
    "## Validation",
    "<how to tell success from failure: commands, steps, criteria>",
    "",
    "## Result",
    "<success/failure + evidence>",
    "",
  ].join("\n");
}
