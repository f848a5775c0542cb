import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { writeFileAtomic, writeJsonAtomic } from "../core/index.ts";
import { listCardFiles, loadLibrary, type StoredCard } from "./library.ts";
import {
  type CardExplanation,
  type CardIndex,
  createCardIndex,
  type Explanation,
  loadCardIndex,
  type RetrievedCard,
} from "./retrieve.ts";
import { type PatternCard, PatternCardSchema } from "./schemas.ts";

/** Beside the cards: the serialized index, and the small stamp that says which card files it is for. */
export const INDEX_FILE = ".index.json";
export const STAMP_FILE = ".index-stamp.json";

const StampSchema = z.object({
  schema_version: z.literal(1),
  /** sha1 over the sorted `name size mtimeMs` lines of the library's pc_*.json files. */
  fingerprint: z.string(),
  /** The `key` of the .index.json this stamp vouches for. */
  index_key: z.string(),
});

const IndexFileSchema = z.object({
  schema_version: z.literal(1),
  key: z.string(),
  /** Card file names, in index document order (document i is files[i]). */
  files: z.array(z.string()),
  ids: z.array(z.string()),
  /** Card files that could not be read when the index was built (they stay unreadable until changed). */
  warnings: z.array(z.string()),
  index: z.unknown(),
});

/** One library directory's index, opened from its persisted copy or rebuilt. */
export interface LibraryIndex {
  dir: string;
  index: CardIndex;
  /** pattern ids in the library (for shadowing across libraries). */
  ids: string[];
  warnings: string[];
  /** True when the persisted index was missing or stale and was built (and written) again. */
  rebuilt: boolean;
  /** The stored card behind a hit (its file, for recording a use). */
  stored(card: PatternCard): StoredCard | undefined;
  /** Card files this process rewrote without changing what is indexed (a use counted): re-stamp. */
  touched(files: readonly string[]): void;
}

interface Listing {
  names: string[];
  lines: Map<string, string>;
}

function list(dir: string): Listing | undefined {
  const names = listCardFiles(dir);
  if (names === undefined) return undefined;
  const lines = new Map<string, string>();
  for (const n of names) lines.set(n, statLine(join(dir, n), n));
  return { names, lines };
}

function statLine(file: string, name: string): string {
  try {
    const st = statSync(file);
    return `${name} ${st.size} ${st.mtimeMs}`;
  } catch {
    return `${name} gone`;
  }
}

function fingerprint(listing: Listing): string {
  const h = createHash("sha1");
  for (const n of listing.names) h.update(`${listing.lines.get(n)}\n`);
  return h.digest("hex");
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, "utf8"));
  } catch {
    return undefined; // missing or damaged: rebuilt
  }
}

/**
 * The BM25 index of one card library, persisted beside it (`.index.json`, `.index-stamp.json`,
 * both written atomically) and rebuilt only when the card files changed: their names, sizes and
 * mtimes are the fingerprint. Opening a fresh index reads no card; the hits' files are read
 * when searched. A missing directory is an empty library (nothing written); an index that
 * cannot be written (read-only library) is a warning and the built index is used.
 */
export function openLibraryIndex(dir: string): LibraryIndex {
  const listing = list(dir);
  const stampFile = join(dir, STAMP_FILE);
  const indexFile = join(dir, INDEX_FILE);
  if (listing === undefined) return built(dir, [], [], undefined);
  const fp = fingerprint(listing);
  const stamp = StampSchema.safeParse(readJson(stampFile));
  if (stamp.success && stamp.data.fingerprint === fp) {
    const saved = IndexFileSchema.safeParse(readJson(indexFile));
    if (saved.success && saved.data.key === stamp.data.index_key) {
      const { files, ids } = saved.data;
      const cache = new Map<number, PatternCard | null>();
      const warnings = [...saved.data.warnings];
      const cardAt = (id: number): PatternCard | undefined => {
        let c = cache.get(id);
        if (c === undefined) {
          c = readCard(join(dir, files[id] ?? ""), warnings);
          cache.set(id, c);
        }
        return c ?? undefined;
      };
      const index = loadCardIndex(saved.data.index, cardAt);
      if (index !== undefined) {
        return handle({
          dir,
          index,
          ids,
          warnings,
          rebuilt: false,
          files,
          key: saved.data.key,
          listing,
        });
      }
    }
  }
  const library = loadLibrary([dir]);
  return built(dir, library.cards, library.warnings, listing);
}

function built(
  dir: string,
  cards: StoredCard[],
  warnings: string[],
  listing: Listing | undefined,
): LibraryIndex {
  const index = createCardIndex(cards.map((c) => c.card));
  const files = cards.map((c) => c.file.slice(dir.length + 1));
  const ids = cards.map((c) => c.card.pattern_id);
  const out = [...warnings];
  let key: string | undefined;
  if (listing !== undefined) {
    key = fingerprint(listing);
    try {
      writeFileAtomic(
        join(dir, INDEX_FILE),
        JSON.stringify({ schema_version: 1, key, files, ids, warnings, index }),
      );
      writeJsonAtomic(join(dir, STAMP_FILE), {
        schema_version: 1,
        fingerprint: key,
        index_key: key,
      });
    } catch (error) {
      out.push(
        `${dir}: the search index could not be saved (${error instanceof Error ? error.message : String(error)}); it is rebuilt on every search`,
      );
      key = undefined;
    }
  }
  const byId = new Map(cards.map((c) => [c.card.pattern_id, c]));
  return {
    ...handle({ dir, index, ids, warnings: out, rebuilt: true, files, key, listing }),
    stored: (card) => byId.get(card.pattern_id),
  };
}

function handle(args: {
  dir: string;
  index: CardIndex;
  ids: string[];
  warnings: string[];
  rebuilt: boolean;
  files: string[];
  key: string | undefined;
  listing: Listing | undefined;
}): LibraryIndex {
  const { dir, index, ids, warnings, rebuilt, files, key, listing } = args;
  const fileOf = new Map(ids.map((id, i) => [id, files[i] ?? ""]));
  return {
    dir,
    index,
    ids,
    warnings,
    rebuilt,
    stored(card) {
      const name = fileOf.get(card.pattern_id);
      return name === undefined ? undefined : { card, file: join(dir, name) };
    },
    touched(changed) {
      if (key === undefined || listing === undefined) return;
      // Only the files this process wrote are stat-ed again: a card someone else changed in the
      // meantime keeps its old line, so the next open sees the difference and rebuilds.
      for (const file of changed) {
        if (!file.startsWith(`${dir}/`)) continue;
        const name = file.slice(dir.length + 1);
        if (listing.lines.has(name)) listing.lines.set(name, statLine(file, name));
      }
      try {
        writeJsonAtomic(join(dir, STAMP_FILE), {
          schema_version: 1,
          fingerprint: fingerprint(listing),
          index_key: key,
        });
      } catch {
        // the next search rebuilds
      }
    },
  };
}

function readCard(file: string, warnings: string[]): PatternCard | null {
  try {
    const r = PatternCardSchema.safeParse(JSON.parse(readFileSync(file, "utf8")));
    if (r.success) return r.data;
    warnings.push(`${file}: not a pattern card, skipped`);
  } catch (error) {
    warnings.push(`${file}: ${error instanceof Error ? error.message : String(error)}, skipped`);
  }
  return null;
}

/**
 * Search several libraries in order (project first, then the user-level one): an id found in an
 * earlier library shadows the same id in a later one (as `loadLibrary` does); hits are merged by
 * score, best first.
 */
export function searchLibraries(
  libraries: readonly LibraryIndex[],
  objective: string,
  options: { limit?: number } = {},
): { hits: (RetrievedCard & { stored: StoredCard | undefined })[]; size: number } {
  const limit = options.limit ?? 5;
  const earlier = new Set<string>();
  const hits: (RetrievedCard & { stored: StoredCard | undefined })[] = [];
  for (const lib of libraries) {
    const shadowed = new Set(earlier);
    for (const h of lib.index.search(objective, { limit: limit + shadowed.size })) {
      if (shadowed.has(h.card.pattern_id)) continue;
      hits.push({ ...h, stored: lib.stored(h.card) });
    }
    for (const id of lib.ids) earlier.add(id);
  }
  hits.sort((a, b) => b.score - a.score);
  return { hits: hits.slice(0, limit), size: earlier.size };
}

/**
 * `searchLibraries` with its reasons (`memory retrieve --explain`): each returned card's matched
 * tokens and coverage, and the nearest cards the threshold rejected, across the libraries with
 * the same shadowing.
 */
export function explainLibraries(
  libraries: readonly LibraryIndex[],
  objective: string,
  options: { limit?: number; nearest?: number } = {},
): Explanation {
  const limit = options.limit ?? 5;
  const nearest = options.nearest ?? 3;
  const earlier = new Set<string>();
  let query: string[] = [];
  const returned: CardExplanation[] = [];
  const rejected: CardExplanation[] = [];
  for (const lib of libraries) {
    const shadowed = new Set(earlier);
    const e = lib.index.explain(objective, { limit: limit + shadowed.size, nearest });
    query = e.query;
    returned.push(...e.returned.filter((c) => !shadowed.has(c.pattern_id)));
    rejected.push(...e.rejected.filter((c) => !shadowed.has(c.pattern_id)));
    for (const id of lib.ids) earlier.add(id);
  }
  returned.sort((a, b) => b.score - a.score);
  rejected.sort((a, b) => b.score - a.score);
  return { query, returned: returned.slice(0, limit), rejected: rejected.slice(0, nearest) };
}

/** Opened indexes kept by a long-lived process (the hook server's worker), with what vouches for each. */
const kept = new Map<string, { key: string; lib: LibraryIndex }>();

/** What changes whenever a card file, the index or its stamp is written, added or removed. */
function keptKey(dir: string): string {
  const line = (file: string) => {
    try {
      const st = statSync(file);
      return `${st.mtimeMs}:${st.size}:${st.ino}`;
    } catch {
      return "-";
    }
  };
  return `${line(dir)} ${line(join(dir, STAMP_FILE))}`;
}

/**
 * `openLibraryIndex`, kept open in this process between calls (the hook server's worker answers
 * every session's hooks): reopened only when the library directory or its stamp changed. Every
 * write timewarp makes to a library (a card saved, a use counted, an index rebuilt) is a rename
 * into the directory, which changes its mtime; two stats decide. A card edited in place by hand
 * (no rename) is seen by the next `memory retrieve`, which rebuilds the index and the stamp.
 */
export function openLibraryIndexKept(dir: string): LibraryIndex {
  const before = keptKey(dir);
  const hit = kept.get(dir);
  if (hit !== undefined && hit.key === before) return hit.lib;
  const lib = openLibraryIndex(dir);
  // taken after opening: a rebuild writes the index and the stamp into the directory
  kept.set(dir, { key: keptKey(dir), lib });
  return lib;
}
