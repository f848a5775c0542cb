// Live updates: the event bus as server-sent events (/api/stream), one EventSource per page
// shared by every view that listens. The browser reconnects by itself and sends the last event's
// id, so the server resumes where the stream broke; nothing is lost or repeated.
import { useEffect, useRef, useState } from "preact/hooks";

const listeners = new Set();
const statusListeners = new Set();
let source;
let status = "closed";

function setStatus(next) {
  status = next;
  for (const l of [...statusListeners]) l(next);
}

function deliver(event) {
  for (const l of [...listeners]) {
    try {
      l(event);
    } catch (e) {
      console.error("a live listener failed", e);
    }
  }
}

function open() {
  // same origin: the token's cookie goes with it
  source = new EventSource("/api/stream");
  setStatus("connecting");
  source.addEventListener("open", () => setStatus("open"));
  source.addEventListener("error", () =>
    setStatus(source?.readyState === EventSource.CLOSED ? "closed" : "connecting"),
  );
  source.addEventListener("bus", (m) => {
    let event;
    try {
      event = JSON.parse(m.data);
    } catch {
      return;
    }
    deliver(event);
  });
  // the page was away for longer than the server replays: views reload what they show
  source.addEventListener("gap", () =>
    deliver({ type: "stream.gap", ts: new Date().toISOString(), data: {} }),
  );
}

function close() {
  source?.close();
  source = undefined;
  setStatus("closed");
}

/**
 * Call `onEvent({ type, ts, data })` for every bus event from now on (`type: "stream.gap"` when
 * some were skipped: reload). Returns the connection's state: "connecting", "open" or "closed".
 */
export function useLive(onEvent) {
  const ref = useRef(onEvent);
  ref.current = onEvent;
  const [state, setState] = useState(status);
  useEffect(() => {
    const listener = (event) => ref.current(event);
    listeners.add(listener);
    statusListeners.add(setState);
    if (source === undefined) open();
    setState(status);
    return () => {
      listeners.delete(listener);
      statusListeners.delete(setState);
      if (listeners.size === 0) close();
    };
  }, []);
  return state;
}
