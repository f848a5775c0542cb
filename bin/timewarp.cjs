#!/usr/bin/env node
// The `timewarp` command. Runs the bundled CLI (dist/bin/timewarp.cjs, from `npm run build`)
// through V8's code cache; in a source checkout without a build it runs the sources through tsx,
// so the bin works during development.
//
// The cache: Node 20 has no compile cache for ES modules, and hooks start this bin on every
// agent tool call. The bundle is one CommonJS script, so it can be compiled by `vm.Script` with
// `cachedData`: the first run writes the compiled code next to the bundle (atomically, one per
// Node version and bundle), later runs skip compiling. A missing, stale or torn cache is only
// slower: V8 rejects it and the run writes a fresh one. An unwritable dist/ (a system-wide
// install) just runs without a cache. TIMEWARP_CODE_CACHE=0 turns it off.
//
// CommonJS on purpose: an ES-module bin would start Node's ES-module loader (~5 ms) for nothing.
//
// `timewarp hook …` first asks the workspace's hook server (the watch daemon's worker, which
// keeps the code loaded) through dist/bin/hook-client.cjs, a few KiB: when it answers, the CLI
// bundle is never loaded. When it does not run the hook, the bundle does, with the payload the
// client may have read from stdin already.
"use strict";
const {
  closeSync,
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} = require("node:fs");
const { basename, dirname, join } = require("node:path");

const root = join(__dirname, "..");
const bundle = join(root, "dist", "bin", "timewarp.cjs");
const hookClient = join(root, "dist", "bin", "hook-client.cjs");

/**
 * V8 flags for a small heap, set by the process for itself (issue 22, item 5: <= 150 MiB for any
 * command at 100k files). V8's defaults favour throughput: its young generation grows towards
 * 3 x 16 MiB and pages freed by a collection stay resident. `--optimize-for-size` keeps the young
 * generation small and gives freed pages back; `--semi-space-growth-factor=1` keeps it the size
 * it starts with. A first snapshot of 104k files: 250 -> 169 MiB, for more collections (about
 * +40% CPU there; nothing measurable at 10k). Both are read by the running heap, so the bin can
 * set them (`--max-semi-space-size` is fixed at start). Set before the bundle is compiled: V8's
 * code cache is bound to the flags it was made under, and a cache written after a change was
 * rejected by every later run. Not in the library: a program embedding it keeps its own.
 */
function preferSmallHeap() {
  const { setFlagsFromString } = require("node:v8");
  setFlagsFromString("--semi-space-growth-factor=1");
  setFlagsFromString("--optimize-for-size");
}

function runBundle(file) {
  preferSmallHeap();
  // Loaded here, not above: a hook the hook server answers never needs them.
  const Module = require("node:module");
  const vm = require("node:vm");
  const useCache = process.env.TIMEWARP_CODE_CACHE !== "0";
  // V8 checks a cache against the source's length only, so the name binds it to this very bundle
  // (size and mtime: a rebuild or reinstall gets a new cache) and to this Node.
  const st = statSync(file);
  const cacheFile = `${file}.${process.version}-${process.arch}-${st.size}-${Math.trunc(st.mtimeMs)}.v8cache`;
  let cachedData;
  if (useCache) {
    try {
      cachedData = readFileSync(cacheFile);
    } catch {
      cachedData = undefined; // first run, or no cache kept here
    }
  }
  const script = new vm.Script(Module.wrap(readFileSync(file, "utf8")), {
    filename: file,
    ...(cachedData !== undefined ? { cachedData } : {}),
  });
  if (useCache && (cachedData === undefined || script.cachedDataRejected)) {
    // After the command ran, so the cache holds the functions it compiled, not only the top level;
    // at "exit" too, since a long-lived command (`timewarp ui`) only ever ends by process.exit.
    let written = false;
    const writeCache = () => {
      if (written) return;
      written = true;
      const temp = `${cacheFile}.${process.pid}.tmp`;
      let fd;
      try {
        fd = openSync(temp, "wx");
      } catch {
        return; // a read-only install: skip the serialisation too, not only the write
      }
      try {
        writeFileSync(fd, script.createCachedData());
        closeSync(fd);
        fd = undefined;
        renameSync(temp, cacheFile);
        // This Node's caches of earlier bundles are dead weight now. (Other Node versions keep
        // theirs: a machine that switches between two would otherwise rewrite both every run.)
        const name = basename(cacheFile);
        const mine = `${basename(file)}.${process.version}-${process.arch}-`;
        for (const other of readdirSync(dirname(file)))
          if (other.startsWith(mine) && other.endsWith(".v8cache") && other !== name)
            rmSync(join(dirname(file), other), { force: true });
      } catch {
        if (fd !== undefined) closeSync(fd);
        rmSync(temp, { force: true }); // full disk: run uncached
      }
    };
    process.once("beforeExit", writeCache);
    process.once("exit", writeCache);
  }
  const module = new Module(file);
  module.filename = file;
  script.runInThisContext()(
    module.exports,
    Module.createRequire(file),
    module,
    file,
    dirname(file),
  );
}

if (existsSync(bundle)) {
  let tried = { served: false };
  // Set by bin/timewarp-hook when it already asked the hook server (no server, or it declined):
  // asking again would only cost time. The bundle's entry reads and removes it.
  if (
    process.argv[2] === "hook" &&
    process.env.TIMEWARP_HOOK_TRIED !== "1" &&
    existsSync(hookClient)
  ) {
    tried = require(hookClient).runViaHookServer(process.argv.slice(2));
    // Tells the bundle's entry that the server was asked, and hands it the payload if read.
    globalThis[Symbol.for("timewarp.hookServerTried")] = tried;
  }
  if (!tried.served) runBundle(bundle);
} else {
  const { pathToFileURL } = require("node:url");
  import("tsx/esm/api").then(({ register }) => {
    register();
    return import(pathToFileURL(join(root, "src", "cli", "entry.ts")).href);
  });
}
