// diff2html (≈ 1 MB) is loaded by the first view that shows a diff, not by every page.
import { useEffect, useState } from "preact/hooks";
import { loadStyle, vendorUrl } from "./styles.js";

let loading;

function loadScript(url) {
  return new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = url;
    script.onload = () => resolve(window.Diff2Html);
    script.onerror = () => reject(new Error("diff2html did not load"));
    document.head.append(script);
  });
}

/** diff2html and its stylesheet (a diff is shown once both are there). */
export function loadDiff2Html() {
  if (window.Diff2Html) return Promise.resolve(window.Diff2Html);
  loading ??= Promise.all([
    loadScript(vendorUrl("diff2html.min.js")),
    loadStyle(vendorUrl("diff2html.min.css")),
  ]).then(
    ([lib]) => lib,
    (e) => {
      loading = undefined;
      throw e;
    },
  );
  return loading;
}

/** diff2html once it is loaded (undefined until then: show the patch as text meanwhile). */
export function useDiff2Html() {
  const [lib, setLib] = useState(() => window.Diff2Html);
  useEffect(() => {
    if (lib === undefined) loadDiff2Html().then(setLib, () => {});
  }, []);
  return lib;
}
