import { ROW_KINDS, type RowKind } from "./timeline-rows.ts";

/**
 * The timeline's bus rows as columns of numbers (issue 19, "Scale": the dashboard's server stays
 * under 80 MB). A row keeps only what ordering and the filters need: its time, where its line
 * lies in the bus, its kind, session, own agent and files (as numbers into small string tables),
 * and whether another row already tells it. The row a page shows is made again from its bus line
 * when the page is asked for, so 10,000 edits cost a few hundred KiB, not a heap of objects.
 */

/** Strings kept once and named by number: sessions, agents, paths (few values, many rows). */
export class StringTable {
  private readonly ids = new Map<string, number>();
  private readonly values: string[] = [];

  /** The number of `value`, given one if it has none yet. */
  intern(value: string): number {
    let id = this.ids.get(value);
    if (id === undefined) {
      id = this.values.length;
      this.values.push(value);
      this.ids.set(value, id);
    }
    return id;
  }

  /** The number of `value`, or -1 if no row has it. */
  find(value: string): number {
    return this.ids.get(value) ?? -1;
  }

  at(id: number): string | null {
    return id < 0 ? null : (this.values[id] ?? null);
  }

  get size(): number {
    return this.values.length;
  }
}

/** What one bus row is made of, before it is stored. */
export interface BusRowInput {
  ms: number;
  /** Its line in the bus: [start, end). `end` makes its key. */
  start: number;
  end: number;
  kind: RowKind;
  session: string | null;
  /** The agent the row itself names (sessions, turns, hook failures); else its session's. */
  agent: string | null;
  files: readonly string[];
}

const KIND_CODE = new Map<RowKind, number>(ROW_KINDS.map((k, i) => [k, i]));

/** The bus rows in bus order, column by column; `length` of each column is in use. */
export class BusRowTable {
  length = 0;
  ms = new Float64Array(1024);
  start = new Float64Array(1024);
  end = new Float64Array(1024);
  kind = new Uint8Array(1024);
  /** Into `sessions`; -1: no session. Changes when a later event names the row's session. */
  session = new Int32Array(1024);
  /** Into `agents`; -1: the row's session's agent. */
  agent = new Int32Array(1024);
  fileStart = new Int32Array(1024);
  fileCount = new Int32Array(1024);
  /** 1: a session's or a turn's own snapshot, which that row already tells. */
  folded = new Uint8Array(1024);
  /** Every row's files, one after another, as numbers into `paths`. */
  files = new Int32Array(4096);
  filesLength = 0;
  readonly sessions = new StringTable();
  readonly agents = new StringTable();
  readonly paths = new StringTable();

  /** Store a row; returns its number. */
  push(row: BusRowInput): number {
    if (this.length === this.ms.length) this.growRows(this.length * 2);
    if (this.filesLength + row.files.length > this.files.length)
      this.files = grown(
        this.files,
        Math.max(this.files.length * 2, this.filesLength + row.files.length),
      );
    const i = this.length++;
    this.ms[i] = row.ms;
    this.start[i] = row.start;
    this.end[i] = row.end;
    this.kind[i] = KIND_CODE.get(row.kind) ?? 0;
    this.session[i] = row.session === null ? -1 : this.sessions.intern(row.session);
    this.agent[i] = row.agent === null ? -1 : this.agents.intern(row.agent);
    this.fileStart[i] = this.filesLength;
    this.fileCount[i] = row.files.length;
    this.folded[i] = 0;
    for (const f of row.files) this.files[this.filesLength++] = this.paths.intern(f);
    return i;
  }

  kindOf(i: number): RowKind {
    return ROW_KINDS[this.kind[i] ?? 0] ?? "edit";
  }

  private growRows(capacity: number): void {
    this.ms = grown(this.ms, capacity);
    this.start = grown(this.start, capacity);
    this.end = grown(this.end, capacity);
    this.kind = grown(this.kind, capacity);
    this.session = grown(this.session, capacity);
    this.agent = grown(this.agent, capacity);
    this.fileStart = grown(this.fileStart, capacity);
    this.fileCount = grown(this.fileCount, capacity);
    this.folded = grown(this.folded, capacity);
  }
}

type Column = Float64Array | Int32Array | Uint8Array;

function grown<T extends Column>(column: T, capacity: number): T {
  const next = new (column.constructor as new (n: number) => T)(capacity);
  next.set(column);
  return next;
}

/** The code of a row kind in `BusRowTable.kind`. */
export function kindCode(kind: RowKind): number {
  return KIND_CODE.get(kind) ?? -1;
}
