/**
 * Let a closed stdout or stderr end the command quietly. `timewarp … --json | head -c 100`
 * closes the pipe while timewarp still writes: Node reports EPIPE as an 'error' event on the
 * stream, and unhandled it crashed the process with a stack trace (issue 16, class 10). A reader
 * that stopped reading wants no more output: the rest is dropped, and the process ends with the
 * command's own status (`process.exitCode`, set by the command as usual). Imports nothing: the
 * hook path loads this before anything else.
 */
export function dropOutputOnceClosed(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (error: NodeJS.ErrnoException) => {
      // EPIPE, or a write after the stream was destroyed by it: the reader is gone either way.
      if (error.code === "EPIPE" || error.code === "ERR_STREAM_DESTROYED") return;
      // Any other failure of our own output (EIO on a vanished terminal…): nowhere to report it.
      process.exitCode = process.exitCode || 1;
    });
  }
}
