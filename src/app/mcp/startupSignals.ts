/**
 * The signals that reach `quire serve` while it is still starting, before the MCP
 * server listens and installs its own handlers (stdio.ts). Without a handler Node's
 * default applies and kills the process at once, leaving the session directory it has
 * just made; so they are held here and handed over: the server then stops as soon as
 * it serves, exactly as for a signal while it serves. SDK-free, like grace.ts, so the
 * CLI installs it before loading the server.
 */

/** A signal that stops `serve`. */
export type StopSignal = "SIGINT" | "SIGTERM" | "SIGHUP";

/** The exit status of a second signal (one after another): 128 + its number. */
export const forcedExitCodes: Readonly<Record<StopSignal, number>> = {
  SIGINT: 130,
  SIGTERM: 143,
  SIGHUP: 129,
};

const stopSignals: ReadonlyArray<StopSignal> = ["SIGINT", "SIGTERM", "SIGHUP"];

/** Signals held while `serve` starts. */
export interface StartupSignals {
  /**
   * Removes the holding handlers (call it once the server's own are installed, or when
   * the start failed) and returns the first signal received meanwhile, if any.
   */
  readonly handOver: () => StopSignal | undefined;
}

/**
 * How long a start may still take once a signal asked it to stop: a start held up (a
 * store probe that waits for an unanswering server, up to ~40 s) must not make one
 * Ctrl-C or SIGTERM do nothing. Past it the process exits as for a second signal (its
 * empty session directory is then reaped by a later start, as after a kill).
 */
export const startupStopMs = 5_000;

/**
 * Holds SIGINT, SIGTERM and SIGHUP until {@link StartupSignals.handOver}: the first is
 * remembered, and exits with its {@link forcedExitCodes} status if the start has not
 * handed over within `stopMs`; a second exits at once, as a second signal does while a
 * serving process waits for its calls.
 */
export const holdStartupSignals = (stopMs: number = startupStopMs): StartupSignals => {
  let first: StopSignal | undefined;
  let deadline: ReturnType<typeof setTimeout> | undefined;
  const handlers = stopSignals.map((name) => {
    const handler = () => {
      if (first !== undefined) process.exit(forcedExitCodes[name]);
      first = name;
      deadline = setTimeout(() => {
        // One line, as a start that fails says why: the status alone would not.
        process.stderr.write(
          `quire: stopped by ${name}: the start had not finished ${stopMs / 1000} s after it\n`,
        );
        process.exit(forcedExitCodes[name]);
      }, stopMs);
      // Never what keeps the process alive: a start that ends otherwise exits as it would.
      deadline.unref();
    };
    process.on(name, handler);
    return { name, handler };
  });
  return {
    handOver: () => {
      for (const { name, handler } of handlers) process.off(name, handler);
      if (deadline !== undefined) clearTimeout(deadline);
      return first;
    },
  };
};
