// The dashboard's shell: header, navigation, and the view for the current URL.
import { render } from "preact";
import { useEffect, useRef } from "preact/hooks";
import { html } from "./lib/html.js";
import { ProgressStatus } from "./lib/progress.js";
import { interceptLinks, matchRoute, useLocation } from "./lib/router.js";
import { Badge, Loaded, useApi } from "./lib/ui.js";
import { routes } from "./routes.js";

const NAV = [
  ["/timeline", "Timeline"],
  ["/snapshots", "Snapshots"],
  ["/issues", "Issues"],
  ["/runs", "Runs"],
  ["/memory", "Memory"],
];

function currentView(path) {
  for (const route of routes) {
    const params = matchRoute(route.path, path);
    if (params !== undefined) return { route, params };
  }
  return undefined;
}

function App() {
  const loc = useLocation();
  const workspace = useApi("/api/workspace");
  const main = useRef(null);
  const found = currentView(loc.path === "/" ? "/timeline" : loc.path);
  useEffect(() => {
    // A navigation moves focus to the new view, as a page load would (screen readers, keyboard).
    main.current?.focus({ preventScroll: true });
  }, [loc.path]);
  return html`
    <a class="skip" href="#main">Skip to content</a>
    <header class="top">
      <a class="brand" href="/timeline">timewarp</a>
      <nav aria-label="views">
        <ul>
          ${NAV.map(
            ([href, label]) =>
              html`<li><a href=${href} aria-current=${loc.path.startsWith(href) || (loc.path === "/" && href === "/timeline") ? "page" : undefined}>${label}</a></li>`,
          )}
        </ul>
      </nav>
      <${Loaded} state=${workspace}>
        ${(w) => html`<div class="workspace">
          <code title="workspace">${w.root}</code>
          ${w.allow_actions ? html`<${Badge} kind="warn">actions allowed<//>` : html`<${Badge}>read-only<//>`}
        </div>`}
      <//>
    </header>
    <main id="main" tabindex="-1" ref=${main}>
      ${
        found === undefined
          ? html`<h1>Not found</h1><p>No view at <code>${loc.path}</code>. <a href="/timeline">Go to the timeline</a>.</p>`
          : html`<${found.route.view} params=${found.params} query=${loc.query} workspace=${workspace.data} />`
      }
    </main>
    <${ProgressStatus} />`;
}

interceptLinks();
render(html`<${App} />`, document.getElementById("app"));
