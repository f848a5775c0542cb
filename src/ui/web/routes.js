// Every view's stable URL. A view is a component given { params, query, workspace }.
import { EditView } from "./views/edit.js";
import { IssueList, IssueView } from "./views/issues.js";
import { MemoryList, MemoryRunView } from "./views/memory.js";
import { RunList, RunView } from "./views/runs.js";
import { SnapshotList, SnapshotView } from "./views/snapshots.js";
import { TimelineView } from "./views/timeline.js";

export const routes = [
  { path: "/timeline", view: TimelineView },
  { path: "/edits/:id", view: EditView },
  { path: "/snapshots", view: SnapshotList },
  { path: "/snapshots/:id", view: SnapshotView },
  { path: "/issues", view: IssueList },
  { path: "/issues/:id", view: IssueView },
  { path: "/runs", view: RunList },
  { path: "/runs/:job", view: RunView },
  { path: "/memory", view: MemoryList },
  { path: "/memory/:run", view: MemoryRunView },
];
