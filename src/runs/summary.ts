import type { Summary } from "./protocol.ts";

/** summary.md (seed §9.2): conclusion, findings, risks, evidence paths (pure). */
export function formatSummaryMarkdown(summary: Summary): string {
  const lines = [
    `# SkillPilot job ${summary.job_id}`,
    "",
    "## Conclusion",
    "",
    `**${summary.status}** — error_type \`${summary.error_type}\`${summary.detail_code ? ` (detail \`${summary.detail_code}\`)` : ""}`,
    "",
  ];
  if (summary.message) lines.push(summary.message, "");
  lines.push(
    `Skill \`${summary.skill.name}\` ${summary.skill.version} on \`${summary.design.enc_path}\`.`,
    "",
  );
  lines.push("## Key findings", "");
  const findings = summary.findings ?? [];
  if (findings.length === 0) {
    lines.push(
      summary.status === "PASS"
        ? "- all required outputs present and non-empty"
        : "- none: the job failed before producing evidence (see Conclusion)",
    );
  }
  for (const f of findings) lines.push(`- ${f}`);
  const metrics = Object.entries(summary.metrics);
  if (metrics.length > 0) {
    lines.push("", "| metric | value |", "|---|---|");
    for (const [k, v] of metrics)
      lines.push(`| ${k} | ${typeof v === "string" ? v : JSON.stringify(v)} |`);
  }
  lines.push("", "## Risks and anomalies", "");
  const risks = summary.risks ?? [];
  if (risks.length === 0) lines.push("- none observed");
  for (const r of risks) lines.push(`- ${r}`);
  lines.push("", "## Evidence", "");
  lines.push(`- run_dir: \`${summary.evidence.run_dir}\``);
  lines.push(`- reports: \`${summary.evidence.reports_dir}\``);
  lines.push("- timeline: `job_timeline.jsonl`, manifest: `job_manifest.json`, acks: `ack/`");
  lines.push(
    "- session logs: `session/supervisor.log`, `session/processor.log`, `session/tool.stdout.log`, `session/tool.stderr.log`",
  );
  if (summary.evidence.debug_bundle_dir)
    lines.push(`- debug_bundle: \`${summary.evidence.debug_bundle_dir}\``);
  return `${lines.join("\n")}\n`;
}
