import { type HookGroup, type HooksTable, hookEventOf, isTimewarpHandler } from "./agent-wiring.ts";

export type JsonObject = { [key: string]: unknown };

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Structural equality of JSON values (key order ignored). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  if (isJsonObject(a) && isJsonObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => k in b && jsonEqual(a[k], b[k]));
  }
  return false;
}

function groupIsOurs(group: unknown): boolean {
  return isJsonObject(group) && Array.isArray(group.hooks) && group.hooks.some(isTimewarpHandler);
}

/**
 * Merge timewarp's hooks into a settings object (returns a new object; the user's keys, events
 * and other matcher groups are kept as they are). A group of ours already present and equal is
 * left alone; one that differs (an older matcher, another command) is replaced in place. Returns
 * what changed, e.g. `+hooks.PreToolUse`, for the report. Pure.
 */
export function mergeHooks(
  settings: JsonObject,
  table: HooksTable,
): { value: JsonObject; changes: string[] } {
  const value: JsonObject = structuredClone(settings);
  const hooks: JsonObject = isJsonObject(value.hooks) ? value.hooks : {};
  const changes: string[] = [];
  for (const [event, groups] of Object.entries(table)) {
    const existing = Array.isArray(hooks[event]) ? [...(hooks[event] as unknown[])] : [];
    for (const group of groups) {
      const at = existing.findIndex((g) => groupIsOurs(g) && sameCommands(g, group));
      if (at >= 0 && jsonEqual(existing[at], group)) continue;
      if (at >= 0) {
        existing[at] = group;
        changes.push(`~hooks.${event}`);
      } else {
        existing.push(group);
        changes.push(`+hooks.${event}`);
      }
    }
    hooks[event] = existing;
  }
  if (changes.length > 0) value.hooks = hooks;
  return { value: changes.length > 0 ? value : settings, changes };
}

function sameCommands(existing: unknown, ours: HookGroup): boolean {
  if (!isJsonObject(existing) || !Array.isArray(existing.hooks)) return false;
  const theirs = existing.hooks
    .filter(isTimewarpHandler)
    .map((h) => hookEventOf((h as { command: string }).command));
  return ours.hooks.some((h) => theirs.includes(hookEventOf(h.command)));
}

/**
 * Remove every timewarp handler from a settings object; a group left with no handler goes, an
 * event left with no group goes, `hooks` left empty goes. Other handlers stay. Pure.
 */
export function removeHooks(settings: JsonObject): { value: JsonObject; changes: string[] } {
  if (!isJsonObject(settings.hooks)) return { value: settings, changes: [] };
  const value: JsonObject = structuredClone(settings);
  const hooks = value.hooks as JsonObject;
  const changes: string[] = [];
  for (const [event, groups] of Object.entries(hooks)) {
    if (!Array.isArray(groups)) continue;
    const kept: unknown[] = [];
    for (const g of groups) {
      if (!groupIsOurs(g)) {
        kept.push(g);
        continue;
      }
      const group = g as JsonObject & { hooks: unknown[] };
      const rest = group.hooks.filter((h) => !isTimewarpHandler(h));
      if (rest.length > 0) kept.push({ ...group, hooks: rest });
      changes.push(`-hooks.${event}`);
    }
    if (kept.length > 0) hooks[event] = kept;
    else delete hooks[event];
  }
  if (Object.keys(hooks).length === 0) delete value.hooks;
  return changes.length > 0 ? { value, changes } : { value: settings, changes };
}

/** Set `settings[a][b]… = entry` unless it already holds exactly that. Pure. */
export function mergeEntry(
  settings: JsonObject,
  path: readonly string[],
  entry: unknown,
): { value: JsonObject; changes: string[] } {
  const value: JsonObject = structuredClone(settings);
  let node = value;
  for (const key of path.slice(0, -1)) {
    if (!isJsonObject(node[key])) node[key] = {};
    node = node[key] as JsonObject;
  }
  const last = path[path.length - 1] ?? "";
  if (jsonEqual(node[last], entry)) return { value: settings, changes: [] };
  const change = `${node[last] === undefined ? "+" : "~"}${path.join(".")}`;
  node[last] = entry;
  return { value, changes: [change] };
}

/** Delete `settings[a][b]…` when it equals `entry` (never a user's own differing entry). Pure. */
export function removeEntry(
  settings: JsonObject,
  path: readonly string[],
  entry: unknown,
): { value: JsonObject; changes: string[] } {
  const value: JsonObject = structuredClone(settings);
  const parents: JsonObject[] = [];
  let node: unknown = value;
  for (const key of path.slice(0, -1)) {
    if (!isJsonObject(node)) return { value: settings, changes: [] };
    parents.push(node);
    node = node[key];
  }
  const last = path[path.length - 1] ?? "";
  if (!isJsonObject(node) || !jsonEqual(node[last], entry)) return { value: settings, changes: [] };
  delete node[last];
  // Drop containers the removal left empty (`mcpServers: {}`), innermost first.
  for (let i = path.length - 2; i >= 0; i--) {
    const parent = parents[i];
    const key = path[i] ?? "";
    if (
      parent !== undefined &&
      isJsonObject(parent[key]) &&
      Object.keys(parent[key] as JsonObject).length === 0
    )
      delete parent[key];
  }
  return { value, changes: [`-${path.join(".")}`] };
}
