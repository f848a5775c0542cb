// Every view's stable URL. A view is a component given { params, query, workspace }, loaded the
// first time its URL is visited: the timeline does not wait for the diff or chart views. The
// timeline, the page's first view, comes with the shell's modules and renders in their first run.
import { TimelineView } from "./views/timeline.js";

const lazy = (load, name) => () => load().then((m) => m[name]);

export const routes = [
  { path: "/timeline", view: TimelineView, load: () => Promise.resolve(TimelineView) },
  { path: "/edits/:id", load: lazy(() => import("./views/edit.js"), "EditView") },
  { path: "/snapshots", load: lazy(() => import("./views/snapshots.js"), "SnapshotList") },
  { path: "/snapshots/:id", load: lazy(() => import("./views/snapshots.js"), "SnapshotView") },
  { path: "/issues", load: lazy(() => import("./views/issues.js"), "IssueList") },
  { path: "/issues/:id", load: lazy(() => import("./views/issues.js"), "IssueView") },
  { path: "/runs", load: lazy(() => import("./views/runs.js"), "RunList") },
  { path: "/runs/:job", load: lazy(() => import("./views/runs.js"), "RunView") },
  { path: "/memory", load: lazy(() => import("./views/memory.js"), "MemoryList") },
  { path: "/memory/:run", load: lazy(() => import("./views/memory.js"), "MemoryRunView") },
];
