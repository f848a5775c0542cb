// Stylesheets of the libraries some views need (diff2html, uPlot): linked when first used, not
// on every page. They go before the page's own, which overrides some of their colours.
const links = new Map();

/** Link the stylesheet at `url` once; resolves when it has loaded, or failed (views still work). */
export function loadStyle(url) {
  let loaded = links.get(url);
  if (loaded === undefined) {
    loaded = new Promise((resolve) => {
      const link = document.createElement("link");
      link.rel = "stylesheet";
      link.href = url;
      link.onload = () => resolve();
      link.onerror = () => resolve();
      const own = document.querySelector('link[rel="stylesheet"][href$="/style.css"]');
      document.head.insertBefore(link, own);
    });
    links.set(url, loaded);
  }
  return loaded;
}

/** A library's file beside this module (`/vendor/…`, under the page's version when it has one). */
export function vendorUrl(name) {
  return new URL(`../../vendor/${name}`, import.meta.url).pathname;
}
