/**
 * Wires the pull/commit use cases into the {@link Notebook} service: path resolution,
 * per-copy serialisation inside the process, the cross-process lock on private state,
 * and the per-call content source.
 */
import { Clock, Effect, Either, FiberRef, Layer, Option, Random, type Scope } from "effect";
import { domainError, type DomainError } from "../../domain/errors.js";
import { FileSystem, type RootedTree } from "../../ports/FileSystem.js";
import { IdGenerator } from "../../ports/IdGenerator.js";
import { ObjectStore } from "../../ports/ObjectStore.js";
import { Notebook, type NotebookService, type SyncReport } from "../Notebook.js";
import { tidyAfterAnswer, tidyUpsDone } from "./shared/afterAnswer.js";
import { makeBlobSource } from "./workingCopy/blobs.js";
import { commit, validateMessage } from "./commit/commit.js";
import { checkedRequests } from "./shared/requestShapes.js";
import { publishedOnly, removePublished } from "./workingCopy/sessionEnd.js";
import type { CopyCall, Services } from "./shared/context.js";
import { localFailure, privateRootNamed } from "./shared/failures.js";
import {
  copyDirectory,
  ensureTurnsDirectory,
  firstPullsLockFile,
  ensureCopyDirectory,
  loadState,
  lockFile,
  makePrivateStateMemo,
} from "./workingCopy/privateState.js";
import { refuseEnclosingCopy, refuseNestedCopies } from "./workingCopy/nesting.js";
import {
  claimedFirstPull,
  forgetStoreOfCopy,
  recordStoreOfCopy,
  refuseCopyOfOtherStore,
} from "./workingCopy/storeOfCopy.js";
import { makePendingWrites } from "./workingCopy/pendingWrites.js";
import { openWorkingCopy, rootChangedDuring } from "./workingCopy/openCopy.js";
import { pull } from "./pull/pull.js";
import { historyLog } from "./history/log.js";
import { copyStatus } from "./history/status.js";
import { copyDiff } from "./history/diff.js";
import { showPublication } from "./history/show.js";
import { restoreFiles, revertPublication } from "./history/restore.js";
import {
  checkedFiles,
  checkedGeneration,
  checkedLog,
  checkedRestored,
} from "./history/requestChecks.js";
import type { NotebookOptions } from "./shared/notebookOptions.js";
import { notPulledError, pulledState } from "./shared/pulled.js";
import { clearIntent } from "./workingCopy/rewriteIntent.js";

/** How long a call waits for another process holding the same working copy. */
const lockTimeoutMs = 30_000;

/** The pause between two attempts to take a held lock (plus as much jitter at most). */
const lockPollMs = 25;

/**
 * How long a call waits for another process holding its working copy's lock (default
 * 30 s), read when the call takes the lock; set it with `Effect.locally`. A call taken
 * over from a sharing process that went silent mid-call (app/share) waits less: the
 * holder is most likely that stopped process, which may hold it indefinitely.
 */
export const copyLockWaitMs: FiberRef.FiberRef<number> = FiberRef.unsafeMake(lockTimeoutMs);

/**
 * The message of the BUSY a call answers when its working copy's lock stays held,
 * given the holder the lock file names (`pid 123 on host`), when it names one; `undefined`
 * for the usual message. Set it with `Effect.locally` (app/share: a call run while the
 * sharing process is not answering says who holds the copy, which may or may not be it).
 */
export const copyLockBusyMessage: FiberRef.FiberRef<
  ((holder: string | undefined) => string) | undefined
> = FiberRef.unsafeMake<((holder: string | undefined) => string) | undefined>(undefined);

/**
 * Logs what the host reported for a local failure that no `detail` classifies (the
 * error's `hostCause`): the answer says only "a local file operation failed", and
 * errors.md promises that the log record with the call's diagnosticId holds the cause.
 */
const logHostCause = <A, R>(
  call: Effect.Effect<A, DomainError, R>,
): Effect.Effect<A, DomainError, R> =>
  Effect.tapError(call, (error) =>
    error.hostCause === undefined
      ? Effect.void
      : Effect.logWarning("a local file operation failed").pipe(
          Effect.annotateLogs({ reason: error.reason, cause: error.hostCause }),
        ),
  );

/**
 * Builds the Notebook service from its ports. Each call checks its request's shape
 * first (shared/requestShapes.ts): a malformed one from plain JavaScript fails with
 * INVALID_REQUEST/INVALID_ARGUMENT, never throws or dies.
 */
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

    /**
     * Takes the copy's lock, waiting up to `waitMs` for another holder; to be run
     * uninterruptibly. Only the pauses between attempts can be interrupted, and each
     * attempt (`fs.lock` with no wait) is uninterruptible, so an interruption never
     * falls between the lock being taken and its release being handed over here. (An
     * interrupted `fs.lock` wait could lose a lock taken at that very instant: a caller
     * that hung up, seen when a stopped sharing process resumes, would leave its copy
     * locked until this process exits.)
     */
    const takeLock = (path: string, waitMs: number) =>
      Effect.gen(function* () {
        const start = yield* Clock.currentTimeMillis;
        for (;;) {
          const attempt = yield* Effect.either(fs.lock(path, 0));
          if (Either.isRight(attempt)) return attempt.right;
          const elapsed = (yield* Clock.currentTimeMillis) - start;
          if (attempt.left.reason !== "Busy" || elapsed >= waitMs) return yield* attempt.left;
          const pause = lockPollMs + (yield* Random.nextIntBetween(0, lockPollMs));
          yield* Effect.interruptible(Effect.sleep(Math.min(pause, waitMs - elapsed)));
        }
      });

    /** The lock at `path` once `made` made its directory; BUSY says `busyMessage`. */
    const lockAt = (
      made: Effect.Effect<void, DomainError>,
      path: string,
      busyMessage: string,
      /** Whether {@link copyLockBusyMessage} words its BUSY (the working copy's own lock). */
      ofCopy = false,
    ): Effect.Effect<Effect.Effect<void>, DomainError> =>
      made.pipe(
        Effect.zipRight(
          Effect.all([FiberRef.get(copyLockWaitMs), FiberRef.get(copyLockBusyMessage)]),
        ),
        Effect.flatMap(([waitMs, busyMessageOf]) =>
          takeLock(path, waitMs).pipe(
            Effect.mapError((error) =>
              error.reason === "Busy"
                ? domainError({
                    code: "ENGINE_FAILED",
                    reason: "BUSY",
                    message:
                      busyMessageOf === undefined || !ofCopy
                        ? busyMessage
                        : busyMessageOf(error.holder),
                  })
                : localFailure(
                    error,
                    `locking the working copy, whose lock is in the ${privateRootNamed}`,
                  ),
            ),
          ),
        ),
      );

    const lockCopy = (copyDir: string): Effect.Effect<Effect.Effect<void>, DomainError> =>
      lockAt(
        ensureCopyDirectory(fs, copyDir),
        lockFile(copyDir),
        "Another process is working on this working copy; call again when it has finished.",
        true,
      );

    /**
     * The working copy `rawPath` names, open for the call's scope; `None` when it does not
     * exist. Directories created for it are removed again if the call fails while they are
     * still empty (a refused first pull leaves nothing behind).
     */
    const openCopy = (
      rawPath: string | undefined,
      create: boolean,
    ): Effect.Effect<
      Option.Option<{
        readonly path: string;
        readonly tree: RootedTree;
        readonly created: boolean;
      }>,
      DomainError,
      Scope.Scope
    > =>
      openWorkingCopy(fs, options, rawPath, create).pipe(
        Effect.tap((opened) =>
          Effect.addFinalizer((exit) =>
            exit._tag === "Failure" ? opened.undoCreated : Effect.void,
          ),
        ),
        Effect.flatMap((opened) =>
          Option.match(opened.tree, {
            onSome: (tree) =>
              Effect.succeedSome({ path: opened.path, tree, created: opened.created }),
            // A missing directory inside a copy names that copy (NESTED_WORKING_COPY).
            onNone: () =>
              create
                ? Effect.succeedNone
                : refuseEnclosingCopy(fs, options.privateRoot, opened.path, store.identity).pipe(
                    Effect.as(Option.none()),
                  ),
          }),
        ),
      );

    /**
     * Runs `body` holding the copy (its permit, then its lock). The call's housekeeping
     * (`afterAnswer`), the end of its cache writes and the release of the copy run after
     * it has answered (shared/afterAnswer.ts), or before it answers with `tidyFirst` (a caller
     * that removes the private directory once the lock is released).
     */
    const withCopy = <A>(
      resolved: { readonly path: string; readonly tree: RootedTree },
      body: (call: CopyCall) => Effect.Effect<A, DomainError>,
      tidyFirst = false,
    ): Effect.Effect<{ readonly path: string; readonly value: A }, DomainError> =>
      Effect.gen(function* () {
        const copyDir = copyDirectory(options.privateRoot, resolved.path, store.identity);
        const cacheWrites = makePendingWrites();
        // Keyed: a later step under the same key replaces an earlier one (shared/context.ts).
        const housekeeping = new Map<string, Effect.Effect<void>>();
        const value = yield* Effect.uninterruptibleMask((restore) =>
          Effect.gen(function* () {
            const permit = yield* permitFor(copyDir);
            yield* restore(permit.take(1)).pipe(Effect.onError(() => permitDone(copyDir)));
            // Not restored: lockCopy lets only its wait be interrupted (see takeLock).
            const release = yield* lockCopy(copyDir).pipe(
              Effect.onError(() => Effect.zipRight(permit.release(1), permitDone(copyDir))),
            );
            const outcome = yield* restore(
              Effect.gen(function* () {
                const state = yield* loadState(fs, copyDir, memo);
                return yield* body({
                  ...services,
                  dir: resolved.path,
                  tree: resolved.tree,
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
              // Cache writes of this call end before its lock is released
              // (workingCopy/pendingWrites.ts).
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

    /**
     * {@link withCopy} for a call that needs a pulled copy (every call but a pull). A copy
     * without a private directory was never pulled: it is refused (NOT_PULLED, or
     * NESTED_WORKING_COPY naming the copy it lies in or holds) before anything is made
     * for it — taking its lock made that directory, left empty below the private root
     * by every such call. A first pull of the same directory racing this call has not
     * finished, so "never pulled" is still the truth.
     */
    const withPulledCopy = <A>(
      resolved: { readonly path: string; readonly tree: RootedTree },
      body: (call: CopyCall) => Effect.Effect<A, DomainError>,
    ): Effect.Effect<{ readonly path: string; readonly value: A }, DomainError> =>
      Effect.gen(function* () {
        const copyDir = copyDirectory(options.privateRoot, resolved.path, store.identity);
        // Unknown (the private root unreadable, say): the locked path says what it is.
        const present = yield* fs.info(copyDir).pipe(Effect.orElseSucceed(() => undefined));
        if (present !== undefined && Option.isNone(present)) {
          yield* refuseCopyOfOtherStore(fs, options.privateRoot, resolved.path, store.identity);
          yield* refuseNestedCopies(
            fs,
            options.privateRoot,
            resolved.path,
            resolved.tree,
            store.identity,
          );
          return yield* Effect.fail(notPulledError);
        }
        return yield* withCopy(resolved, body);
      });

    /**
     * A call that failed because files or directories it worked on vanished says
     * ROOT_CHANGED when the workspace root itself is gone or replaced since it was opened
     * (openCopy.ts, rootChangedDuring): checked on this failure path only.
     */
    const rootChecked = <A>(call: Effect.Effect<A, DomainError>): Effect.Effect<A, DomainError> =>
      Effect.catchAll(call, (error) =>
        Effect.flatMap(rootChangedDuring(fs, options, error), Effect.fail),
      );

    /**
     * A call on an existing copy (`NOT_PULLED` when there is none), with its path. One that
     * `changesCopy` (restore, revert) is not answered ROOT_CHANGED after a failure: having
     * changed part of the copy, it says what it changed in its own error.
     */
    const onPulledCopy = <A extends object>(
      path: string | undefined,
      span: string,
      body: (call: CopyCall) => Effect.Effect<A, DomainError>,
      changesCopy = false,
    ): Effect.Effect<A & { readonly path: string }, DomainError> =>
      openCopy(path, false).pipe(
        Effect.flatMap(
          Option.match({
            onNone: () => Effect.fail(notPulledError),
            onSome: (resolved) => withPulledCopy(resolved, body),
          }),
        ),
        Effect.scoped,
        Effect.map(({ path: resolved, value }) => ({ ...value, path: resolved })),
        Effect.withLogSpan(span),
        logHostCause,
        changesCopy ? (call) => call : rootChecked,
        Effect.annotateLogs("module", "notebook"),
      );

    /**
     * A copy's first pull: refused when it would nest in or around another copy of the
     * store, else pulled. First pulls of the store take turns (a lock of their own,
     * across this private root's processes, held until the new copy's state is written):
     * two directories pulled at once, one inside the other, would each find no copy
     * around or below them and both answer OK, and the outer copy would then publish the
     * inner one's notes again under its own paths.
     */
    const firstPull = (call: CopyCall) =>
      Effect.acquireUseRelease(
        lockAt(
          ensureTurnsDirectory(fs, options.privateRoot),
          firstPullsLockFile(options.privateRoot, store.identity),
          "Another working copy of this notebook is being pulled for the first time; call again when it has finished.",
        ),
        () =>
          refuseNestedCopies(fs, options.privateRoot, call.dir, call.tree, store.identity).pipe(
            // The directory's store recorded before anything is written there, and a
            // first pull of it from another store at the same moment waiting for this one.
            Effect.zipRight(
              claimedFirstPull(
                fs,
                options.privateRoot,
                call.dir,
                store.identity,
                call.tree,
                pull(call),
              ),
            ),
          ),
        (release) => release,
      );

    const service: NotebookService = {
      notebookDirectory: options.notebookDirectory,
      pull: (request) =>
        openCopy(request.path, true).pipe(
          Effect.flatMap(
            Option.match({
              // Created when missing, so only a copy swapped away while it was made.
              onNone: () =>
                Effect.fail(
                  domainError({
                    code: "ENGINE_FAILED",
                    reason: "LOCAL_IO",
                    message: "The working copy changed while it was being created; call again.",
                  }),
                ),
              onSome: (resolved) =>
                withCopy(resolved, (call) => {
                  // A copy whose directory is gone (moved or deleted, so status and
                  // commit said NOT_PULLED) is pulled afresh: its old state would read
                  // every note as deleted by the person, and its rewrite intent belongs
                  // to that directory.
                  const afresh = clearIntent(call).pipe(
                    Effect.zipRight(firstPull({ ...call, state: Option.none() })),
                  );
                  if (resolved.created) return afresh;
                  // A directory last pulled from another store is not pulled from this
                  // one (its notes would be published here at the next commit) unless
                  // it holds nothing; then it is pulled afresh even where this store
                  // has old state for it (the directory emptied to come back here).
                  return refuseCopyOfOtherStore(
                    fs,
                    options.privateRoot,
                    resolved.path,
                    store.identity,
                    resolved.tree,
                  ).pipe(
                    Effect.flatMap((emptiedFromOther) =>
                      Option.isSome(call.state) && !emptiedFromOther ? pull(call) : afresh,
                    ),
                  );
                }),
            }),
          ),
          Effect.tap(({ path }) =>
            recordStoreOfCopy(fs, options.privateRoot, path, store.identity),
          ),
          Effect.scoped,
          Effect.map(({ path, value }): SyncReport => ({
            path,
            generation: value.generation,
            files: value.files,
            ...(Option.isSome(value.completed)
              ? { interruptedCommit: { generation: value.completed.value } }
              : {}),
          })),
          Effect.withLogSpan("pull"),
          logHostCause,
          rootChecked,
          Effect.annotateLogs("module", "notebook"),
        ),
      commit: (request) =>
        validateMessage(request.message).pipe(
          Effect.zipRight(openCopy(request.path, false)),
          Effect.flatMap(
            Option.match({
              onNone: () => Effect.fail(notPulledError),
              onSome: (resolved) =>
                withPulledCopy(resolved, (call) => commit(call, request.message, request.author)),
            }),
          ),
          Effect.scoped,
          Effect.map(({ path, value }): SyncReport => ({
            path,
            generation: value.generation,
            files: value.files,
            // Only when the merge brought something in: most commits bring nothing.
            ...(value.incoming.length === 0 ? {} : { incoming: value.incoming }),
            ...(value.interruptedCommit === undefined
              ? {}
              : { interruptedCommit: value.interruptedCommit }),
          })),
          Effect.withLogSpan("commit"),
          logHostCause,
          Effect.annotateLogs("module", "notebook"),
        ),
      log: (request) =>
        checkedLog(request).pipe(
          Effect.flatMap((checked) =>
            onPulledCopy(request.path, "log", (call) =>
              pulledState(call).pipe(Effect.flatMap((state) => historyLog(call, checked, state))),
            ),
          ),
        ),
      status: (request) => onPulledCopy(request.path, "status", copyStatus),
      diff: (request) =>
        checkedFiles(request.files).pipe(
          Effect.flatMap((files) =>
            onPulledCopy(request.path, "diff", (call) => copyDiff(call, files)),
          ),
        ),
      show: (request) =>
        Effect.all([checkedGeneration(request.generation), checkedFiles(request.files)]).pipe(
          Effect.flatMap(([generation, files]) =>
            onPulledCopy(request.path, "show", (call) =>
              pulledState(call).pipe(
                Effect.flatMap((state) => showPublication(call, generation, files, state)),
              ),
            ),
          ),
        ),
      restore: (request) =>
        Effect.all([checkedGeneration(request.generation), checkedRestored(request.files)]).pipe(
          Effect.flatMap(([generation, files]) =>
            onPulledCopy(
              request.path,
              "restore",
              (call) => restoreFiles(call, generation, files, request.force),
              true,
            ),
          ),
        ),
      revert: (request) =>
        checkedGeneration(request.generation).pipe(
          Effect.flatMap((generation) =>
            onPulledCopy(
              request.path,
              "revert",
              (call) => revertPublication(call, generation),
              true,
            ),
          ),
        ),
      discardIfPublished: (path) =>
        Effect.gen(function* () {
          const opened = yield* openCopy(path, false);
          if (Option.isNone(opened)) return false;
          const { value: removed } = yield* withCopy(
            opened.value,
            (call) =>
              publishedOnly(call).pipe(
                Effect.flatMap(
                  Option.match({
                    onNone: () => Effect.succeedNone,
                    onSome: (removal) =>
                      removePublished(call, removal).pipe(
                        // The copy is gone: so is the record of its store (every session
                        // pulls into a directory of its own, and the records would pile
                        // up). Under the copy's lock: a pull of this path with this store
                        // waiting for it records its store again only after.
                        Effect.tap((gone) =>
                          gone
                            ? forgetStoreOfCopy(
                                fs,
                                options.privateRoot,
                                opened.value.path,
                                store.identity,
                              )
                            : Effect.void,
                        ),
                        Effect.map((gone) =>
                          gone ? Option.some(call.copyDir) : Option.none<string>(),
                        ),
                      ),
                  }),
                ),
              ),
            true,
          );
          // After the lock is released: the lock file lives in the private directory.
          if (Option.isNone(removed)) return false;
          // Its state record went first (removePublished): a stop part way through this
          // leaves a copy that reads as never pulled.
          yield* fs
            .removeTree(removed.value)
            .pipe(
              Effect.mapError((error) =>
                localFailure(error, `removing private state in the ${privateRootNamed}`),
              ),
            );
          return true;
        }).pipe(Effect.scoped, Effect.annotateLogs("module", "notebook")),
    };
    // The service is part of the library API: plain JavaScript may call it with anything.
    return checkedRequests(service);
  });

/**
 * The Notebook service built from the ports. Closing the layer waits for the
 * housekeeping of calls that have answered (shared/afterAnswer.ts).
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
