// diff2html (≈ 1 MB) is loaded by the first view that shows a diff, not by every page.
import { useEffect, useState } from "preact/hooks";

let loading;

export function loadDiff2Html() {
  if (window.Diff2Html) return Promise.resolve(window.Diff2Html);
  loading ??= new Promise((resolve, reject) => {
    const script = document.createElement("script");
    // beside this module's own URL: under /v/<version>/ when the page loaded it from there
    script.src = new URL("../../vendor/diff2html.min.js", import.meta.url).pathname;
    script.onload = () => resolve(window.Diff2Html);
    script.onerror = () => {
      loading = undefined;
      reject(new Error("diff2html did not load"));
    };
    document.head.append(script);
  });
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
