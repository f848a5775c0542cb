// The dashboard's shell: skip link, header, navigation, keyboard shortcuts, and the view for the
// current URL.
import { render } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { html } from "./lib/html.js";
import { LazyView, loadView } from "./lib/lazy-view.js";
import { ProgressStatus } from "./lib/progress.js";
import { interceptLinks, matchRoute, useLocation } from "./lib/router.js";
import { ShortcutsDialog, useShortcuts } from "./lib/shortcuts.js";
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

/** Whether the nav entry `href` is where `path` is (an edit belongs to the timeline). */
function isCurrent(href, path) {
  if (path === "/" || path.startsWith("/edits/")) return href === "/timeline";
  return path === href || path.startsWith(`${href}/`);
}

/**
 * After a navigation (not the first load: Tab then starts at the skip link), focus moves to the
 * main region, as a page load would put a screen reader there, and the new page's title is
 * announced once the view has set it.
 */
function useFocusOnNavigation(path, main) {
  const first = useRef(true);
  const [announced, setAnnounced] = useState("");
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    main.current?.focus({ preventScroll: true });
    window.scrollTo(0, 0);
    const t = setTimeout(() => setAnnounced(document.title), 400);
    return () => clearTimeout(t);
  }, [path]);
  return announced;
}

function Header({ path, workspace, onHelp }) {
  return html`<header class="top">
    <a class="brand" href="/timeline">timewarp</a>
    <nav aria-label="Views">
      <ul>
        ${NAV.map(
          ([href, label]) =>
            html`<li><a href=${href} aria-current=${isCurrent(href, path) ? "page" : undefined}>${label}</a></li>`,
        )}
      </ul>
    </nav>
    <div class="workspace">
      <${Loaded} state=${workspace}>
        ${(w) => html`<code title="workspace">${w.root}</code>
          ${w.allow_actions ? html`<${Badge} kind="warn">actions allowed<//>` : html`<${Badge}>read-only<//>`}`}
      <//>
      <button type="button" class="help" onClick=${onHelp} aria-label="Keyboard shortcuts" title="Keyboard shortcuts (?)">?</button>
    </div>
  </header>`;
}

function App() {
  const loc = useLocation();
  const workspace = useApi("/api/workspace");
  const main = useRef(null);
  const [help, setHelp] = useState(false);
  const openHelp = useCallback(() => setHelp(true), []);
  useShortcuts(openHelp);
  const announced = useFocusOnNavigation(loc.path, main);
  const found = currentView(loc.path === "/" ? "/timeline" : loc.path);
  const skip = (e) => {
    e.preventDefault();
    main.current?.focus();
  };
  return html`
    <a class="skip" href="#main" onClick=${skip}>Skip to content</a>
    <${Header} path=${loc.path} workspace=${workspace} onHelp=${openHelp} />
    <main id="main" tabindex="-1" ref=${main}>
      ${
        found === undefined
          ? html`<h1>Not found</h1><p>No view at <code>${loc.path}</code>. <a href="/timeline">Go to the timeline</a>.</p>`
          : html`<${LazyView} route=${found.route} params=${found.params} query=${loc.query} workspace=${workspace.data} />`
      }
    </main>
    <aside aria-label="Running work"><${ProgressStatus} /></aside>
    <p class="visually-hidden" aria-live="polite">${announced}</p>
    <${ShortcutsDialog} open=${help} onClose=${() => setHelp(false)} />`;
}

interceptLinks();
const first = currentView(location.pathname === "/" ? "/timeline" : location.pathname);
if (first !== undefined) await loadView(first.route);
render(html`<${App} />`, document.getElementById("app"));
