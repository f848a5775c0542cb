import { describe, expect, it } from "vitest";
import { classifySession } from "./taxonomy.ts";

const base = {
  ackPresent: false,
  toolExited: false,
  deadlinePassed: false,
  heartbeatStale: false,
  requestInFlight: false,
};

describe("classifySession: one precedence", () => {
  it("an ack on disk wins over everything", () => {
    expect(
      classifySession({
        ...base,
        ackPresent: true,
        toolExited: true,
        deadlinePassed: true,
        heartbeatStale: true,
        requestInFlight: true,
      }),
    ).toBe("ACK");
  });
  it("then the tool's death, then the deadline", () => {
    expect(
      classifySession({ ...base, toolExited: true, deadlinePassed: true, requestInFlight: true }),
    ).toBe("INNOVUS_CRASH");
    expect(
      classifySession({
        ...base,
        deadlinePassed: true,
        heartbeatStale: true,
        requestInFlight: true,
      }),
    ).toBe("QUEUE_TIMEOUT");
  });
  it("never judges the heartbeat while a request is in flight", () => {
    expect(classifySession({ ...base, heartbeatStale: true, requestInFlight: true })).toBe(
      "HEALTHY",
    );
    expect(classifySession({ ...base, heartbeatStale: true })).toBe("HEARTBEAT_LOST");
    expect(classifySession(base)).toBe("HEALTHY");
  });
});
