// Path routing with the History API: every view has a stable URL the server also answers.
import { useEffect, useState } from "preact/hooks";

/** Match `/runs/:job` against `/runs/job-1`: the params, or undefined. */
export function matchRoute(pattern, path) {
  const p = pattern.split("/").filter(Boolean);
  const s = path.split("/").filter(Boolean);
  if (p.length !== s.length) return undefined;
  const params = {};
  for (let i = 0; i < p.length; i++) {
    if (p[i].startsWith(":")) params[p[i].slice(1)] = decodeURIComponent(s[i]);
    else if (p[i] !== s[i]) return undefined;
  }
  return params;
}

export function navigate(url, { replace = false } = {}) {
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  dispatchEvent(new PopStateEvent("popstate"));
}

/** The current location, re-rendered on navigation. */
export function useLocation() {
  const read = () => ({ path: location.pathname, query: new URLSearchParams(location.search) });
  const [loc, setLoc] = useState(read);
  useEffect(() => {
    const on = () => setLoc(read());
    addEventListener("popstate", on);
    return () => removeEventListener("popstate", on);
  }, []);
  return loc;
}

/** Same-origin link clicks become navigations without a page load. */
export function interceptLinks() {
  document.addEventListener("click", (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey)
      return;
    const a = e.target.closest?.("a[href]");
    if (!a || a.target || a.hasAttribute("download")) return;
    const url = new URL(a.href);
    if (url.origin !== location.origin || url.pathname.startsWith("/api/")) return;
    // a link within this page (`#main`) is the browser's to follow: it moves focus there
    if (url.hash !== "" && url.pathname === location.pathname && url.search === location.search)
      return;
    e.preventDefault();
    navigate(url.pathname + url.search);
  });
}
