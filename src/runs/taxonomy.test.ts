import { describe, expect, it } from "vitest";
import { classifySession } from "./taxonomy.ts";

const base = {
  ackPresent: false,
  toolExited: false,
  deadlinePassed: false,
  heartbeatStale: false,
  requestInFlight: false,
  beatSurvivesBusyLoop: false,
};

describe("classifySession: one precedence", () => {
  it("an ack on disk wins over everything", () => {
    for (const beatSurvivesBusyLoop of [false, true]) {
      expect(
        classifySession({
          ackPresent: true,
          toolExited: true,
          deadlinePassed: true,
          heartbeatStale: true,
          requestInFlight: true,
          beatSurvivesBusyLoop,
        }),
      ).toBe("ACK");
    }
  });
  it("then the tool's death, then the deadline, then the heartbeat", () => {
    const inFlight = { ...base, requestInFlight: true, beatSurvivesBusyLoop: true };
    expect(
      classifySession({
        ...inFlight,
        toolExited: true,
        deadlinePassed: true,
        heartbeatStale: true,
      }),
    ).toBe("INNOVUS_CRASH");
    expect(classifySession({ ...inFlight, deadlinePassed: true, heartbeatStale: true })).toBe(
      "QUEUE_TIMEOUT",
    );
    expect(classifySession({ ...inFlight, heartbeatStale: true })).toBe("HEARTBEAT_LOST");
    expect(classifySession(inFlight)).toBe("HEALTHY");
  });
  it("judges the heartbeat in flight only when the beat survives a busy loop", () => {
    // loop mode: a long command blocks the beat, so a stale one in flight says nothing
    expect(classifySession({ ...base, heartbeatStale: true, requestInFlight: true })).toBe(
      "HEALTHY",
    );
    // thread or sidecar mode: the beat goes on while the script runs
    expect(
      classifySession({
        ...base,
        heartbeatStale: true,
        requestInFlight: true,
        beatSurvivesBusyLoop: true,
      }),
    ).toBe("HEARTBEAT_LOST");
  });
  it("judges the heartbeat while idle in every mode", () => {
    for (const beatSurvivesBusyLoop of [false, true]) {
      expect(classifySession({ ...base, heartbeatStale: true, beatSurvivesBusyLoop })).toBe(
        "HEARTBEAT_LOST",
      );
      expect(classifySession({ ...base, beatSurvivesBusyLoop })).toBe("HEALTHY");
    }
  });
});
