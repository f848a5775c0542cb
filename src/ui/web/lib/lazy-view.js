// A route's view, imported on first use; a failed import says so instead of a blank page.
import { useEffect, useState } from "preact/hooks";
import { html } from "./html.js";
import { ErrorBox, Loading } from "./ui.js";

const loaded = new Map();

/**
 * Import `route`'s view now (the page's first view, before the first render: it then renders
 * at once, without a loading frame). A failure is left for `LazyView` to show.
 */
export function loadView(route) {
  if (route.view !== undefined) return Promise.resolve();
  return route.load().then(
    (view) => loaded.set(route.path, view),
    () => {},
  );
}

export function LazyView({ route, ...props }) {
  if (route.view !== undefined) return html`<${route.view} ...${props} />`;
  return html`<${Lazy} route=${route} ...${props} />`;
}

function Lazy({ route, ...props }) {
  const [state, setState] = useState(() => ({ view: loaded.get(route.path) }));
  useEffect(() => {
    if (loaded.has(route.path)) {
      setState({ view: loaded.get(route.path) });
      return;
    }
    let live = true;
    setState({});
    route.load().then(
      (view) => {
        loaded.set(route.path, view);
        if (live) setState({ view });
      },
      (e) =>
        live &&
        setState({
          error: { code: "LOAD_FAILED", message: `this view did not load: ${e.message}` },
        }),
    );
    return () => {
      live = false;
    };
  }, [route.path]);
  if (state.error) return html`<${ErrorBox} error=${state.error} />`;
  if (state.view === undefined) return html`<${Loading} />`;
  return html`<${state.view} ...${props} />`;
}
