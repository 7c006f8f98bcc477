/**
 * Wires the pull/commit use cases into the {@link Notebook} service: path resolution,
 * per-copy serialisation inside the process, the cross-process lock on private state,
 * and the per-call content source.
 */
import { Effect, Layer, Option } from "effect";
import { domainError, type DomainError } from "../../domain/errors.js";
import type { PathSets } from "../../domain/pathSets.js";
import { FileSystem } from "../../ports/FileSystem.js";
import { IdGenerator } from "../../ports/IdGenerator.js";
import { ObjectStore } from "../../ports/ObjectStore.js";
import { Notebook, type NotebookService, type SyncReport } from "../Notebook.js";
import { tidyAfterAnswer, tidyUpsDone } from "./afterAnswer.js";
import { makeBlobSource } from "./blobs.js";
import { commit, validateMessage } from "./commit.js";
import { holdsOnlyPublished } from "./sessionEnd.js";
import type { CopyCall, Services } from "./context.js";
import type { Failpoint } from "./failpoints.js";
import { localFailure } from "./failures.js";
import {
  copyDirectory,
  ensureCopyDirectory,
  loadState,
  lockFile,
  makePrivateStateMemo,
} from "./privateState.js";
import { refuseNestedCopies } from "./nesting.js";
import { makePendingWrites } from "./pendingWrites.js";
import { pull } from "./pull.js";
import { resolveWorkingCopy } from "./workingCopy.js";

/** The settings the use cases need, already validated by configuration. */
export interface NotebookOptions {
  /** Absolute, canonical workspace root: every working copy is at or below it. */
  readonly workspaceRoot: string;
  /** Absolute notebook directory that an omitted/empty `path` means. */
  readonly notebookDirectory: string;
  /** Absolute private root (never at or below the workspace root). */
  readonly privateRoot: string;
  /** The user's home directory, for `~/` expansion. */
  readonly homeDirectory: string;
  /** Maximum CAS retries before REMOTE_BUSY (0..100). */
  readonly commitRetries: number;
  /** Increments after which a checkpoint is written. */
  readonly checkpointPacks: number;
  /** Previous checkpoint chains kept in the manifest (0..64). */
  readonly retainedCheckpoints: number;
  /** The writable and read-only path sets commits are confined to (none when omitted). */
  readonly pathSets?: PathSets;
  /**
   * Tail bytes (sum of the active increments' sizes) beyond which a checkpoint is
   * written even below `checkpointPacks`; default 64 MiB.
   */
  readonly checkpointBytes?: number;
  /** Publish commits that delete most or all of the notebook (default false: MASS_DELETE). */
  readonly allowMassDelete?: boolean;
  /** Fault injection for tests: called at each failpoint stage; absent in production. */
  readonly failpoint?: Failpoint;
}

/** How long a call waits for another process holding the same working copy. */
const lockTimeoutMs = 30_000;

/** Builds the Notebook service from its ports. */
export const makeNotebook = (services: Services): Effect.Effect<NotebookService> =>
  Effect.gen(function* () {
    const { fs, store, options } = services;
    // One permit per private directory: calls on one copy queue, different copies run in
    // parallel. A permit is kept only while a call holds or awaits it (`users`), so a
    // long-lived server does not keep one for every copy it ever served.
    const permits = new Map<string, { readonly semaphore: Effect.Semaphore; users: number }>();
    const memo = makePrivateStateMemo();
    const permitFor = (copyDir: string): Effect.Effect<Effect.Semaphore> =>
      Effect.sync(() => {
        const existing = permits.get(copyDir);
        if (existing !== undefined) {
          existing.users += 1;
          return existing.semaphore;
        }
        const semaphore = Effect.unsafeMakeSemaphore(1);
        permits.set(copyDir, { semaphore, users: 1 });
        return semaphore;
      });
    const permitDone = (copyDir: string): Effect.Effect<void> =>
      Effect.sync(() => {
        const entry = permits.get(copyDir);
        if (entry === undefined) return;
        entry.users -= 1;
        if (entry.users === 0) permits.delete(copyDir);
      });

    const lockCopy = (copyDir: string): Effect.Effect<Effect.Effect<void>, DomainError> =>
      ensureCopyDirectory(fs, copyDir).pipe(
        Effect.zipRight(
          fs.lock(lockFile(copyDir), lockTimeoutMs).pipe(
            Effect.mapError((error) =>
              error.reason === "Busy"
                ? domainError({
                    code: "ENGINE_FAILED",
                    reason: "BUSY",
                    message:
                      "Another process is working on this working copy; call again when it has finished.",
                  })
                : localFailure(error, "locking the working copy"),
            ),
          ),
        ),
      );

    /**
     * Runs `body` holding the copy (its permit, then its lock). The call's housekeeping
     * (`afterAnswer`), the end of its cache writes and the release of the copy run after
     * it has answered (afterAnswer.ts), or before it answers with `tidyFirst` (a caller
     * that removes the private directory once the lock is released).
     */
    const withCopy = <A>(
      rawPath: string | undefined,
      create: boolean,
      body: (call: CopyCall) => Effect.Effect<A, DomainError>,
      tidyFirst = false,
    ): Effect.Effect<{ readonly path: string; readonly value: A }, DomainError> =>
      Effect.gen(function* () {
        const resolved = yield* resolveWorkingCopy(fs, options, rawPath, create);
        const copyDir = copyDirectory(options.privateRoot, resolved.path, store.identity);
        const cacheWrites = makePendingWrites();
        // Keyed: a later step under the same key replaces an earlier one (context.ts).
        const housekeeping = new Map<string, Effect.Effect<void>>();
        const value = yield* Effect.uninterruptibleMask((restore) =>
          Effect.gen(function* () {
            const permit = yield* permitFor(copyDir);
            yield* restore(permit.take(1)).pipe(Effect.onError(() => permitDone(copyDir)));
            const release = yield* restore(lockCopy(copyDir)).pipe(
              Effect.onError(() => Effect.zipRight(permit.release(1), permitDone(copyDir))),
            );
            const outcome = yield* restore(
              Effect.gen(function* () {
                const state = yield* loadState(fs, copyDir, memo);
                return yield* body({
                  ...services,
                  dir: resolved.path,
                  copyDir,
                  blobs: makeBlobSource(fs, copyDir),
                  state,
                  memo,
                  cacheWrites,
                  afterAnswer: (key, tidy) => {
                    housekeeping.delete(key);
                    housekeeping.set(key, tidy);
                  },
                });
              }),
            ).pipe(Effect.exit);
            const tidy = Effect.forEach(
              [...housekeeping.values()],
              (step) =>
                Effect.catchAllCause(step, (cause) =>
                  Effect.logWarning("housekeeping after a call failed", cause),
                ),
              { discard: true },
            ).pipe(
              // Cache writes of this call end before its lock is released (pendingWrites.ts).
              Effect.zipRight(cacheWrites.drain),
              Effect.ensuring(release),
              Effect.ensuring(permit.release(1)),
              Effect.ensuring(permitDone(copyDir)),
            );
            yield* tidyFirst ? tidy : tidyAfterAnswer(tidy);
            return yield* outcome;
          }),
        );
        return { path: resolved.path, value };
      });

    const notPulled = domainError({
      code: "INVALID_REQUEST",
      reason: "NOT_PULLED",
      message: "This working copy was never pulled; call notes_pull first.",
    });

    const service: NotebookService = {
      notebookDirectory: options.notebookDirectory,
      pull: (request) =>
        withCopy(request.path, true, (call) =>
          Option.isSome(call.state)
            ? pull(call)
            : refuseNestedCopies(
                fs,
                options.privateRoot,
                options.workspaceRoot,
                call.dir,
                store.identity,
              ).pipe(Effect.zipRight(pull(call))),
        ).pipe(
          Effect.map(({ path, value }): SyncReport => ({
            path,
            generation: value.generation,
            files: value.files,
          })),
          Effect.withLogSpan("pull"),
          Effect.annotateLogs("module", "notebook"),
        ),
      commit: (request) =>
        validateMessage(request.message).pipe(
          Effect.zipRight(
            resolveWorkingCopy(fs, options, request.path, false).pipe(
              Effect.flatMap((resolved) =>
                resolved.exists ? Effect.void : Effect.fail(notPulled),
              ),
            ),
          ),
          Effect.zipRight(
            withCopy(request.path, false, (call) => commit(call, request.message, request.author)),
          ),
          Effect.map(({ path, value }): SyncReport => ({
            path,
            generation: value.generation,
            files: value.files,
          })),
          Effect.withLogSpan("commit"),
          Effect.annotateLogs("module", "notebook"),
        ),
      discardIfPublished: (path) =>
        Effect.gen(function* () {
          const resolved = yield* resolveWorkingCopy(fs, options, path, false);
          if (!resolved.exists) return false;
          const { value: removed } = yield* withCopy(
            path,
            false,
            (call) =>
              holdsOnlyPublished(call).pipe(
                Effect.flatMap((published) =>
                  published
                    ? fs.removeTree(call.dir).pipe(
                        Effect.mapError((error) =>
                          localFailure(error, "removing the working copy"),
                        ),
                        Effect.as(Option.some(call.copyDir)),
                      )
                    : Effect.succeedNone,
                ),
              ),
            true,
          );
          // After the lock is released: the lock file lives in the private directory.
          if (Option.isNone(removed)) return false;
          yield* fs
            .removeTree(removed.value)
            .pipe(Effect.mapError((error) => localFailure(error, "removing private state")));
          return true;
        }).pipe(Effect.annotateLogs("module", "notebook")),
    };
    return service;
  });

/**
 * The Notebook service built from the ports. Closing the layer waits for the
 * housekeeping of calls that have answered (afterAnswer.ts).
 */
export const notebookLayer = (
  options: NotebookOptions,
): Layer.Layer<Notebook, never, ObjectStore | FileSystem | IdGenerator> =>
  Layer.scoped(
    Notebook,
    Effect.gen(function* () {
      yield* Effect.addFinalizer(() => tidyUpsDone);
      const store = yield* ObjectStore;
      const fs = yield* FileSystem;
      const ids = yield* IdGenerator;
      return yield* makeNotebook({ store, fs, ids, options });
    }),
  );
