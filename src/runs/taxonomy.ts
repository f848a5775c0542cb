import { ErrorCode, isTimewarpError, TimewarpError } from "../core/index.ts";
import type { ErrorType } from "./protocol.ts";

/** What the supervisor sees about a session at one moment. */
export interface SessionObservation {
  /** The request's ack is on disk. */
  ackPresent: boolean;
  /** The tool (or its launcher) has exited. */
  toolExited: boolean;
  /** A request is in flight and its deadline has passed. */
  deadlinePassed: boolean;
  /** The heartbeat counter has not moved for longer than the threshold (runner's clock). */
  heartbeatStale: boolean;
  /** A request is in flight. */
  requestInFlight: boolean;
  /**
   * The heartbeat is written by something a busy Tcl loop does not block (a thread or the
   * sidecar: ready.json's `heartbeat_mode`), so it is judged during a request too. False in
   * `loop` mode: a long command blocks the loop and with it the beat.
   */
  beatSurvivesBusyLoop: boolean;
}

/**
 * The one precedence for session faults, when several apply at once:
 * an ack on disk wins (the tool answered; its own verdict stands), then INNOVUS_CRASH (the
 * process is gone, the most concrete fact), then QUEUE_TIMEOUT (the request's own deadline), then
 * HEARTBEAT_LOST — while idle always, and during a request only when the beat survives a busy
 * loop (thread or sidecar mode).
 */
export function classifySession(
  o: SessionObservation,
): "ACK" | "INNOVUS_CRASH" | "QUEUE_TIMEOUT" | "HEARTBEAT_LOST" | "HEALTHY" {
  if (o.ackPresent) return "ACK";
  if (o.toolExited) return "INNOVUS_CRASH";
  if (o.requestInFlight && o.deadlinePassed) return "QUEUE_TIMEOUT";
  if (o.heartbeatStale && (!o.requestInFlight || o.beatSurvivesBusyLoop)) return "HEARTBEAT_LOST";
  return "HEALTHY";
}

/** A job failure: the taxonomy value plus an optional finer code and a short, actionable message. */
export interface JobFailure {
  error_type: Exclude<ErrorType, "OK">;
  detail_code?: string;
  message: string;
}

/**
 * A JobFailure as the error that carries it through the job's steps to the one place that ends
 * the job: JOB_FAILED, with the failure in `data.failure`.
 */
export function jobFailed(failure: JobFailure): TimewarpError {
  return new TimewarpError(ErrorCode.JOB_FAILED, failure.message, {
    data: { error_type: failure.error_type, failure },
  });
}

/** The JobFailure an error carries (made by `jobFailed`), or undefined. */
export function failureOf(error: unknown): JobFailure | undefined {
  return isTimewarpError(error, ErrorCode.JOB_FAILED)
    ? (error.data?.failure as JobFailure | undefined)
    : undefined;
}
