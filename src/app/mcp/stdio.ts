/**
 * `quire serve`'s transport loop: the MCP server on stdio until the host closes stdin
 * or the process gets SIGINT/SIGTERM, then a graceful stop. Stdout carries only
 * JSON-RPC (the transport writes nothing else; logs go to stderr).
 */
import { Deferred, Effect } from "effect";
import type { IdGenerator } from "../../ports/IdGenerator.js";
import { Notebook } from "../Notebook.js";
import { defaultGraceMs } from "./grace.js";
import { type McpServerSettings, makeMcpServer } from "./server.js";
import { StdioLineTransport } from "./stdioTransport.js";

/**
 * Serves MCP over the process's stdin/stdout until stopped. On the first SIGINT,
 * SIGTERM, end of stdin, stdout failure or transport close: stop taking calls (also other
 * serve processes' calls, when this one runs them), let the calls in flight finish for
 * up to `graceMs` (then interrupt them; the use cases keep their critical sections
 * uninterruptible), close the server and succeed. A second
 * SIGINT/SIGTERM during that wait exits at once with 130/143.
 */
export const serveStdio = (
  settings: McpServerSettings,
  graceMs: number = defaultGraceMs,
): Effect.Effect<void, never, Notebook | IdGenerator> =>
  Effect.scoped(
    Effect.gen(function* () {
      const { server, connect, drain } = yield* makeMcpServer(settings);
      const stop = yield* Deferred.make<string>();
      const requestStop = (why: string) => Effect.runSync(Deferred.succeed(stop, why));

      const onSigint = () => requestStop("SIGINT");
      const onSigterm = () => requestStop("SIGTERM");
      const onStdinEnd = () => requestStop("stdin closed");
      const onStdoutError = () => requestStop("stdout failed");
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          process.on("SIGINT", onSigint);
          process.on("SIGTERM", onSigterm);
          process.stdin.on("end", onStdinEnd);
          process.stdout.on("error", onStdoutError);
        }),
        () =>
          Effect.sync(() => {
            process.off("SIGINT", onSigint);
            process.off("SIGTERM", onSigterm);
            process.stdin.off("end", onStdinEnd);
            process.stdout.off("error", onStdoutError);
          }),
      );
      server.onclose = () => requestStop("transport closed");

      yield* Effect.promise(() => connect(new StdioLineTransport()));
      yield* Effect.logInfo("serving MCP on stdio").pipe(Effect.annotateLogs({ module: "mcp" }));

      const why = yield* Deferred.await(stop);
      yield* Effect.logInfo("stopping").pipe(Effect.annotateLogs({ module: "mcp", why }));
      const forceExit = (code: number) => () => process.exit(code);
      const forceOnSigint = forceExit(130);
      const forceOnSigterm = forceExit(143);
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          process.once("SIGINT", forceOnSigint);
          process.once("SIGTERM", forceOnSigterm);
        }),
        () =>
          Effect.sync(() => {
            process.off("SIGINT", forceOnSigint);
            process.off("SIGTERM", forceOnSigterm);
          }),
      );
      // Calls this process runs for other serve processes (app/share) stop alongside.
      const notebook = yield* Notebook;
      yield* Effect.all([drain(graceMs), notebook.stopSharing ?? Effect.void], {
        concurrency: 2,
        discard: true,
      });
      server.onclose = () => undefined;
      yield* Effect.promise(() => server.close());
    }),
  );
