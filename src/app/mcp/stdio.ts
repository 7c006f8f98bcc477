/**
 * `quire serve`'s transport loop: the MCP server on stdio until the host closes stdin
 * or the process gets SIGINT/SIGTERM/SIGHUP, then a graceful stop. Stdout carries only
 * JSON-RPC (the transport writes nothing else; logs go to stderr).
 */
import { Deferred, Effect } from "effect";
import type { IdGenerator } from "../../ports/IdGenerator.js";
import { Notebook } from "../Notebook.js";
import { defaultGraceMs } from "./grace.js";
import { type McpServerSettings, makeMcpServer } from "./server.js";
import { type StopSignal, forcedExitCodes } from "./startupSignals.js";
import { StdioLineTransport } from "./stdioTransport.js";

/**
 * Serves MCP over the process's stdin/stdout until stopped. On the first SIGINT,
 * SIGTERM, SIGHUP (a closed terminal; Node's default would kill the process before it
 * ends its session), end of stdin, stdout failure or transport close: stop taking calls (also other
 * serve processes' calls, when this one runs them), let the calls in flight finish for
 * up to `graceMs` (then interrupt them; the use cases keep their critical sections
 * uninterruptible), close the server, run `afterStop` and succeed. A second signal
 * (one of the three after one of them) during that wait exits at once with 130/143/129;
 * a signal that follows another cause (hosts often close stdin and signal together) or
 * arrives while `afterStop` runs does not interrupt anything: the process still ends
 * with `afterStop` done (it must be short: the session directory's check).
 *
 * `startupSignal` hands over the signals the process held while it started
 * (startupSignals.ts), once this one's handlers are installed: a signal received then
 * stops the server as soon as it serves, and counts as the first signal.
 */
export const serveStdio = <R = never>(
  settings: McpServerSettings,
  graceMs: number = defaultGraceMs,
  afterStop: Effect.Effect<void, never, R> = Effect.void,
  startupSignal: () => StopSignal | undefined = () => undefined,
): Effect.Effect<void, never, Notebook | IdGenerator | R> =>
  Effect.scoped(
    Effect.gen(function* () {
      const { server, connect, drain } = yield* makeMcpServer(settings);
      const stop = yield* Deferred.make<string>();
      const requestStop = (why: string) => Effect.runSync(Deferred.succeed(stop, why));

      // `draining`: waiting for calls in flight, when a second signal forces the exit.
      let stage: "serving" | "draining" | "ending" = "serving";
      let signals = 0;
      const onSignal = (name: StopSignal) => () => {
        signals += 1;
        if (signals > 1 && stage === "draining") process.exit(forcedExitCodes[name]);
        requestStop(name);
      };
      const onSigint = onSignal("SIGINT");
      const onSigterm = onSignal("SIGTERM");
      const onSighup = onSignal("SIGHUP");
      const onStdinEnd = () => requestStop("stdin closed");
      const onStdoutError = () => requestStop("stdout failed");
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          process.on("SIGINT", onSigint);
          process.on("SIGTERM", onSigterm);
          process.on("SIGHUP", onSighup);
          process.stdin.on("end", onStdinEnd);
          process.stdout.on("error", onStdoutError);
          // Only now: between the hand-over and these handlers a signal would kill.
          const early = startupSignal();
          if (early !== undefined) onSignal(early)();
        }),
        () =>
          Effect.sync(() => {
            process.off("SIGINT", onSigint);
            process.off("SIGTERM", onSigterm);
            process.off("SIGHUP", onSighup);
            process.stdin.off("end", onStdinEnd);
            process.stdout.off("error", onStdoutError);
          }),
      );
      server.onclose = () => requestStop("transport closed");

      yield* Effect.promise(() => connect(new StdioLineTransport()));
      yield* Effect.logInfo("serving MCP on stdio").pipe(Effect.annotateLogs({ module: "mcp" }));

      const why = yield* Deferred.await(stop);
      stage = "draining";
      yield* Effect.logInfo("stopping").pipe(Effect.annotateLogs({ module: "mcp", why }));
      // Calls this process runs for other serve processes (app/share) stop alongside.
      const notebook = yield* Notebook;
      yield* Effect.all([drain(graceMs), notebook.stopSharing ?? Effect.void], {
        concurrency: 2,
        discard: true,
      });
      stage = "ending";
      server.onclose = () => undefined;
      yield* Effect.promise(() => server.close());
      // Still inside the scope: the handlers above keep a late signal from killing the
      // process before `afterStop` is done.
      yield* afterStop;
    }),
  );
