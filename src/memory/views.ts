import type { PatternCard, Profile } from "./schemas.ts";

export type ViewName = "terse" | "guided";

/** Why a view was chosen, for the preview and `--json`. */
export interface ViewRoute {
  view: ViewName;
  reason: string;
}

/**
 * The seed's routing, exactly: the profile's `pref` wins; else `self_report=novice`, or
 * `difficulty=high`, or `hist_first_try_success < 0.5` → guided; else terse. Pure.
 */
export function routeView(input: {
  profile?: Profile | undefined;
  difficulty?: "low" | "high" | undefined;
}): ViewRoute {
  const p = input.profile;
  if (p?.pref === "terse" || p?.pref === "guided")
    return { view: p.pref, reason: `profile pref=${p.pref}` };
  if (p?.self_report === "novice") return { view: "guided", reason: "self_report=novice" };
  if (input.difficulty === "high") return { view: "guided", reason: "difficulty=high" };
  if (p?.hist_first_try_success !== undefined && p.hist_first_try_success < 0.5) {
    return { view: "guided", reason: `hist_first_try_success=${p.hist_first_try_success} < 0.5` };
  }
  return { view: "terse", reason: "default (expert or unknown user, low difficulty)" };
}

type CardBody = Omit<PatternCard, "views" | "uses" | "last_used_at">;

/** Expert view: rules and invariants, one screen. */
export function renderTerse(card: CardBody): string {
  const lines = [`**${card.title}** (${card.pattern_id})`];
  if (card.invariants.length > 0) lines.push(`Invariants: ${card.invariants.join("; ")}.`);
  const key = card.steps.filter((s) => !/^reproduce:/.test(s)).slice(0, 5);
  if (key.length > 0) lines.push(`Do: ${key.join(" → ")}.`);
  if (card.anti_patterns.length > 0)
    lines.push(`Never: ${card.anti_patterns.slice(0, 3).join("; ")}.`);
  if (card.eval_examples.length > 0)
    lines.push(`Check: ${card.eval_examples.map((e) => `\`${e}\``).join(", ")}.`);
  return lines.join("\n");
}

/** Novice view: numbered steps, examples, pitfalls, the tests to run and what to do when a guard fires. */
export function renderGuided(card: CardBody): string {
  const lines = [
    `## ${card.title}`,
    "",
    `Use this when: ${card.triggers.slice(0, 6).join(", ")}.`,
    "",
    "### Steps",
  ];
  card.steps.forEach((s, i) => {
    lines.push(`${i + 1}. ${s}`);
  });
  if (card.invariants.length > 0) {
    lines.push("", "### Must stay true");
    for (const inv of card.invariants) lines.push(`- ${inv}`);
  }
  if (card.anti_patterns.length > 0) {
    lines.push("", "### Pitfalls (seen in earlier runs)");
    for (const a of card.anti_patterns) lines.push(`- ${a}`);
  }
  if (card.eval_examples.length > 0) {
    lines.push("", "### Tests to run before you finish");
    for (const e of card.eval_examples) lines.push(`- \`${e}\``);
  }
  lines.push(
    "",
    "### If a guard fires",
    "- warn: stop and check the edit against the goal before going on.",
    "- rollback: undo the edit with the `fix_cmd` the guard prints, then continue inside the whitelist.",
    "",
    `_From runs: ${card.provenance.source_runs.join(", ")}_`,
  );
  return lines.join("\n");
}

export function renderView(card: CardBody, view: ViewName): string {
  return view === "guided" ? renderGuided(card) : renderTerse(card);
}

/** `artifacts/view_preview.md`: the routed view of each card, ready as a system prompt or reply. */
export function formatViewPreview(args: {
  objective: string;
  user: string;
  route: ViewRoute;
  cards: CardBody[];
}): string {
  const { objective, user, route, cards } = args;
  const head = [
    `# Pattern view for: ${objective}`,
    "",
    `user: ${user} · view: **${route.view}** (${route.reason}) · cards: ${cards.length}`,
    "",
  ];
  if (cards.length === 0)
    return [...head, "_No pattern card fits this task well enough; none is shown._", ""].join("\n");
  return [...head, ...cards.flatMap((c) => [renderView(c, route.view), "", "---", ""])].join("\n");
}
