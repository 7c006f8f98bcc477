/**
 * The CLI commands as Effects over the configured services, returning the exit status.
 * All behaviour lives in the use cases; this only renders their result.
 */
import { Clock, Effect, LogLevel, type Scope } from "effect";
import { cliErrorJson } from "../../domain/cliErrorJson.js";
import { renderCliError, renderCliSuccess, renderIncoming } from "../../domain/cliReport.js";
import type { DomainError } from "../../domain/errors.js";
import { recordedAuthor } from "../../domain/author.js";
import type { RedactOptions } from "../../domain/redact.js";
import { IdGenerator } from "../../ports/IdGenerator.js";
import type { Invocation, RuntimeConfig } from "../config.js";
import { ObjectStore } from "../../ports/ObjectStore.js";
import { memorySamplesOnSignal } from "../memorySamples.js";
import { forgetSession, isOwnSessionDirectory, reapSessions } from "../sessions.js";
import { type Author, Notebook, type SyncReport } from "../Notebook.js";
import * as NodePath from "node:path";
import { FileSystem } from "../../ports/FileSystem.js";
import * as IdGeneratorAdapter from "../../adapters/idGenerator.js";
import { notebookOptions, type StartupError, withNotebook, type Workspace } from "../layers.js";
import * as NodeFileSystem from "../../adapters/nodeFileSystem.js";
import { placeCopyPath } from "./copyPath.js";
import { isAtOrBelow, overlapsStore, storeOverlapError } from "../usecases/workingCopy/openCopy.js";
import { defaultGraceMs } from "../mcp/grace.js";
import type { StartupSignals } from "../mcp/startupSignals.js";
import { type Terminal, exitCodes } from "./terminal.js";
import { runHistory } from "./history.js";
import { defectsAsInternal } from "./defects.js";
import { workspaceHint } from "./workspaceHint.js";

type Once = Extract<Invocation, { readonly _tag: "Pull" | "Commit" }>;

/**
 * Runs one pull or commit: the report on stdout and status 0, or the candid error text
 * (same facts as the MCP text item) on stderr and status 1. A defect is reported as
 * ENGINE_FAILED/INTERNAL with its cause in the log under the same diagnosticId. Every log
 * record of the run (module `cli`, and the use cases' own) carries that diagnosticId.
 */
export const runOnce = (
  invocation: Once,
  author: Author,
  terminal: Terminal,
  redaction: RedactOptions,
): Effect.Effect<number, never, Notebook | IdGenerator> =>
  Effect.flatMap(
    Effect.flatMap(IdGenerator, (ids) => ids.diagnosticId),
    // Every record of the run (the use cases' included) carries the id the error text reports.
    (diagnosticId) =>
      runWithId(invocation, author, terminal, redaction, diagnosticId).pipe(
        Effect.annotateLogs("diagnosticId", diagnosticId),
      ),
  ).pipe(Effect.annotateLogs({ module: "cli" }));

const runWithId = (
  invocation: Once,
  author: Author,
  terminal: Terminal,
  redaction: RedactOptions,
  diagnosticId: string,
): Effect.Effect<number, never, Notebook> =>
  Effect.gen(function* () {
    const notebook = yield* Notebook;
    const command = invocation._tag === "Pull" ? "pull" : "commit";
    const startedAt = yield* Clock.currentTimeMillis;
    yield* Effect.logDebug(`${command} started`);
    const operation: Effect.Effect<SyncReport, DomainError> =
      invocation._tag === "Pull"
        ? notebook.pull({ path: invocation.path })
        : notebook.commit({ path: invocation.path, message: invocation.message, author });
    const result = yield* defectsAsInternal(operation, command, diagnosticId).pipe(Effect.either);
    const durationMs = (yield* Clock.currentTimeMillis) - startedAt;
    const sets = invocation.config.pathSets;
    if (result._tag === "Right") {
      yield* Effect.logDebug(`${command} completed`).pipe(
        Effect.annotateLogs({ code: "OK", durationMs, generation: result.right.generation }),
      );
      terminal.out(renderCliSuccess(result.right, sets, { color: terminal.outColor }, command));
      terminal.out(renderIncoming(result.right.incoming ?? [], { color: terminal.outColor }));
      return exitCodes.ok;
    }
    const error = result.left;
    yield* Effect.logDebug(`${command} completed`).pipe(
      Effect.annotateLogs({ code: error.code, reason: error.reason, durationMs }),
    );
    terminal.err(
      renderCliError(error, diagnosticId, sets, { color: terminal.errColor }, redaction),
    );
    terminal.err(workspaceHint(error, invocation.config.workspace));
    return exitCodes.reported;
  });

/** What `serve` advertises besides the configuration. */
export interface ServeSettings {
  readonly version: string;
  readonly redaction: RedactOptions;
  /** The signals `serve` held while it started, handed over once it serves. */
  readonly startupSignals?: StartupSignals;
}

/**
 * After `serve` stopped: removes its own session directory (and the copy's private
 * state, and the session's record, sessions.ts) when everything in it is published, and
 * otherwise keeps it and says where it is, so an agent's unpublished notes are never
 * deleted. Never fails.
 */
const endSession = (
  workspace: Workspace,
  sessionId: string,
): Effect.Effect<void, never, Notebook | FileSystem> =>
  Effect.gen(function* () {
    const notebook = yield* Notebook;
    const fs = yield* FileSystem;
    if (!(yield* isOwnSessionDirectory(fs, workspace.notebookDirectory))) {
      return yield* Effect.logWarning(
        "kept the session directory: its path no longer leads to the directory this session made (a symlink stands in it, or it is gone), so nothing was removed through it",
      ).pipe(Effect.annotateLogs("notebookDirectory", workspace.notebookDirectory));
    }
    const removed = yield* notebook
      .discardIfPublished()
      .pipe(
        Effect.catchAll((error) =>
          Effect.logWarning("could not inspect or remove the session directory", error).pipe(
            Effect.as(false),
          ),
        ),
      );
    const log = removed
      ? Effect.logInfo("removed the session directory: everything in it is published")
      : Effect.logWarning("kept the session directory: it holds notes that are not published");
    yield* log.pipe(Effect.annotateLogs("notebookDirectory", workspace.notebookDirectory));
    // The notebook directory's parent is the session's own `quire-<random>` directory.
    if (removed) {
      yield* fs
        .removeEmptyDirectory(NodePath.dirname(workspace.notebookDirectory))
        .pipe(Effect.ignore);
      yield* forgetSession(fs, workspace.privateRoot, sessionId);
    }
  }).pipe(Effect.annotateLogs("module", "cli"));

/**
 * Removes, in the background, what ended sessions of this private root left behind
 * (sessions.ts), logging what it did when it did anything. Ends with the scope.
 */
const reapEndedSessions = (
  config: RuntimeConfig,
  workspace: Workspace,
): Effect.Effect<void, never, Scope.Scope | ObjectStore | FileSystem | IdGenerator> =>
  Effect.gen(function* () {
    const services = {
      store: yield* ObjectStore,
      fs: yield* FileSystem,
      ids: yield* IdGenerator,
      options: notebookOptions(config, workspace),
    };
    yield* Effect.forkScoped(
      reapSessions(services, workspace.sessionId).pipe(
        // Info only when it changed something or failed; sessions kept or alive are routine.
        Effect.flatMap((report) =>
          Effect.logWithLevel(
            report.removed + report.failed + report.deadLocks > 0 ? LogLevel.Info : LogLevel.Debug,
            "reaped ended sessions",
          ).pipe(Effect.annotateLogs({ ...report })),
        ),
        Effect.annotateLogs("module", "cli"),
      ),
    );
  });

/**
 * Once `serve` has stopped serving, the process only ends its session and releases what
 * it holds (locks, the session's record), then exits: a SIGINT/SIGTERM/SIGHUP from then on
 * (hosts close stdin and signal at once) must not cut that short, so they are ignored
 * until the exit. Installed while serveStdio's own handlers are still there.
 */
const absorbLateSignals: Effect.Effect<void> = Effect.sync(() => {
  const ignore = () => undefined;
  process.on("SIGINT", ignore);
  process.on("SIGTERM", ignore);
  process.on("SIGHUP", ignore);
});

/**
 * `quire serve`: reaps ended sessions alongside, serves MCP on stdio until stopped, then
 * ends its own session directory, if it made one.
 */
const serve = (
  config: RuntimeConfig,
  workspace: Workspace,
  settings: ServeSettings,
): Effect.Effect<number, never, Notebook | ObjectStore | FileSystem | IdGenerator> =>
  Effect.scoped(
    Effect.gen(function* () {
      yield* Effect.logInfo("quire serve starting").pipe(
        Effect.annotateLogs({
          module: "cli",
          version: settings.version,
          notebookDirectory: workspace.notebookDirectory,
        }),
      );
      if (config.memorySamples === true) yield* memorySamplesOnSignal;
      // The MCP SDK (and zod) load only for `serve`: pull and commit start faster.
      const { serveStdio } = yield* Effect.promise(() => import("../mcp/stdio.js"));
      // After that load, which the reaper's work would only delay (and with it the
      // answer to the host's first request).
      yield* reapEndedSessions(config, workspace);
      const sessionId = workspace.sessionId;
      yield* serveStdio(
        {
          version: settings.version,
          pathSets: config.pathSets,
          redaction: settings.redaction,
          ...(config.author === undefined ? {} : { author: config.author }),
          ...(config.historyTool === true ? { historyTool: true } : {}),
        },
        defaultGraceMs,
        Effect.zipRight(
          absorbLateSignals,
          sessionId === undefined ? Effect.void : endSession(workspace, sessionId),
        ),
        settings.startupSignals?.handOver,
      );
      return exitCodes.ok;
    }),
  );

/**
 * `quire serve` / `quire pull` / `quire commit` over the services the configuration
 * selects: prepares the workspace, runs the store probe, then the command. Fails with a
 * StartupError when the process must not start.
 */
export const runCommand = (
  invocation: Command,
  author: Author,
  terminal: Terminal,
  settings: ServeSettings,
): Effect.Effect<number, StartupError> =>
  invocation._tag === "Serve"
    ? runPlaced(invocation, author, terminal, settings)
    : placeCopyPath(NodeFileSystem.make(), invocation.path, invocation.config.workspace).pipe(
        Effect.flatMap((path) => runPlaced({ ...invocation, path }, author, terminal, settings)),
      );

/** The commands {@link runCommand} runs. */
type Command = Extract<
  Invocation,
  {
    readonly _tag:
      "Serve" | "Pull" | "Commit" | "Log" | "Status" | "Diff" | "Show" | "Restore" | "Revert";
  }
>;

/** {@link runCommand} once the PATH is placed against the workspace root (copyPath.ts). */
const runPlaced = (
  invocation: Extract<
    Invocation,
    {
      readonly _tag:
        "Serve" | "Pull" | "Commit" | "Log" | "Status" | "Diff" | "Show" | "Restore" | "Revert";
    }
  >,
  author: Author,
  terminal: Terminal,
  settings: ServeSettings,
) => {
  // A PATH overlapping the file store is refused before any layer creates the store's
  // directory or the probe writes into it (SPEC §4.1); symlinks are checked again per call.
  // (A PATH outside the workspace root gets its own reason first, as it does per call.)
  const store = invocation.config.store;
  const workspace = invocation.config.workspace;
  const copy = invocation._tag === "Serve" ? undefined : NodePath.resolve(invocation.path);
  if (
    copy !== undefined &&
    store.kind === "file" &&
    workspace.kind === "root" &&
    isAtOrBelow(copy, NodePath.resolve(workspace.root)) &&
    overlapsStore(copy, NodePath.resolve(store.root))
  )
    return IdGeneratorAdapter.make().diagnosticId.pipe(
      Effect.map((diagnosticId) => {
        if ("json" in invocation && invocation.json)
          terminal.out(
            cliErrorJson(
              storeOverlapError(),
              diagnosticId,
              invocation.config.pathSets,
              settings.redaction,
            ),
          );
        else
          terminal.err(
            renderCliError(
              storeOverlapError(),
              diagnosticId,
              invocation.config.pathSets,
              { color: terminal.errColor },
              settings.redaction,
            ),
          );
        return exitCodes.reported;
      }),
    );
  return withNotebook(
    invocation.config,
    (workspace) =>
      invocation._tag === "Serve"
        ? serve(invocation.config, workspace, settings)
        : invocation._tag === "Pull" || invocation._tag === "Commit"
          ? runOnce(
              invocation,
              recordedAuthor(author, invocation.config.author),
              terminal,
              settings.redaction,
            )
          : runHistory(invocation, terminal, settings.redaction),
    // Whether it shares is the configuration's (`config.share`: serve only, see canShare).
    { release: settings.version, graceMs: defaultGraceMs },
  );
};
