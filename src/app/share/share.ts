/**
 * Sharing one process among the `serve` processes of one file store on one host. Each
 * process's commits publish in batches (usecases/commit/publishBatch.ts), but separate
 * processes can only race each other for `current`, and every lost race repeats the
 * work. So the first `serve` process of a store listens on a local channel named for the
 * store and the release, and the others send it their calls, each with its own
 * settings; it runs them as its own, in the same batches. Correctness never depends on
 * it: a call that cannot be sent, or whose answer does not come back whole, runs in its
 * own process, exactly as a retried call after a crash would (an interrupted rewrite or
 * an unsettled publication is recovered first, never published twice).
 *
 * A sharing process that stops (SIGSTOP, a debugger, a wedged thread) after it has
 * acknowledged a call sends no more signs of life; after 10 s of silence the caller
 * hangs up and takes the call over, waiting at most 2 s for the working copy's lock
 * ({@link defaultShareTiming}). Free, the call runs here like any retry (the lock
 * orders it with whatever the stopped process did or will do). Still held — nearly
 * always by the stopped process, in the middle of this very call — the caller answers
 * at once: a pull ENGINE_FAILED/BUSY (retryable), a commit STORAGE_FAILURE/
 * PUBLICATION_UNKNOWN (PULL_TO_VERIFY), because the stopped process may have published
 * it or may still publish it when it resumes. Never OK, never a second publication; the
 * holder is named only as the copy's lock file names it.
 *
 * A sharing process that does not acknowledge a call within 2 s never runs it; the
 * caller runs it, and its calls of the next 30 s, itself, each waiting at most the same
 * 2 s for its working copy's lock, which the stopped process may still hold, tidying up
 * after a call it answered; still held, the call answers ENGINE_FAILED/BUSY (retryable:
 * nothing of it ran) — about 4 s after the call, not the lock's usual 30 s.
 */
import {
  Cause,
  Clock,
  Effect,
  Either,
  ExecutionStrategy,
  Exit,
  FiberRef,
  HashMap,
  LogLevel,
  Option,
  Scope,
} from "effect";
import { type DomainError, domainError } from "../../domain/errors.js";
import type { ChannelHandler, LocalChannelService } from "../../ports/LocalChannel.js";
import { keyDigest } from "../keyDigest.js";
import { callPrivatePaths } from "../logging.js";
import type { NotebookService, SyncReport } from "../Notebook.js";
import type { Services } from "../usecases/shared/context.js";
import { copyLockBusyMessage, copyLockWaitMs, makeNotebook } from "../usecases/notebookLayer.js";
import { makeRecentMap } from "../usecases/shared/recentMap.js";
import {
  decodeAnswer,
  decodeRequest,
  encodeAnswer,
  encodeRefusal,
  encodeRequest,
  maxAnswerBytes,
  maxRequestBytes,
  optionsKey,
  requestOptionsKey,
  type ShareRequest,
} from "./protocol.js";

/** How a process shares: the channel, and the name and grace of its listener. */
export interface ShareSettings {
  readonly channel: LocalChannelService;
  /** The release (package version): only processes of one release share. */
  readonly release: string;
  /** How long calls run for others may finish once this process stops. */
  readonly graceMs: number;
  /** The waits of sharing (default {@link defaultShareTiming}). */
  readonly timing?: ShareTiming;
  /**
   * The largest answer sent or read (default {@link maxAnswerBytes}); lower only in
   * tests (the hidden QUIRE_SHARE_ANSWER_BYTES).
   */
  readonly maxAnswerBytes?: number;
}

/** The waits of sharing (see the module comment); tests may shorten them. */
export interface ShareTiming {
  /**
   * How long a sharing process may take to acknowledge a call (it does so as soon as it
   * has read it, before running it); beyond that the caller runs the call itself.
   */
  readonly acknowledgementMs: number;
  /** How often a sharing process running a call sends its caller a sign of life. */
  readonly heartbeatMs: number;
  /**
   * The longest gap without a sign of life or an answer that a caller waits out after
   * the acknowledgement, before it takes the call over.
   */
  readonly silenceMs: number;
  /** How long a taken-over call waits for its working copy's lock. */
  readonly takeoverLockMs: number;
  /**
   * How long a sharing process waits for a connection's whole request (a real caller
   * sends it at once, and gives up after `acknowledgementMs`); beyond it the connection
   * is closed, so a peer that stalls ties nothing up.
   */
  readonly requestMs: number;
}

/**
 * The defaults. 10 s of silence is far beyond any pause of a healthy process's event
 * loop (a heartbeat is due every second) and well within an MCP client's request
 * timeout: a caller answers at most ~12 s after its sharing process stopped.
 */
export const defaultShareTiming: ShareTiming = {
  acknowledgementMs: 2_000,
  heartbeatMs: 1_000,
  silenceMs: 10_000,
  takeoverLockMs: 2_000,
  requestMs: 10_000,
};

/**
 * How long a caller runs its calls itself after the sharing process did not acknowledge
 * one, or went silent during one.
 */
const unresponsivePauseMs = 30_000;

/**
 * The most connections a sharing process keeps open at once, each with a request of up
 * to {@link maxRequestBytes} (so at most ~150 MB of buffered requests): far beyond the
 * calls real callers have in flight at once, and a bound on the descriptors a peer
 * opening connections without end can take from the process, which also serves its own
 * MCP client. A connection beyond it is closed at once; its caller runs the call itself.
 */
export const maxConnections = 64;

/** The most distinct settings whose notebooks a sharing process keeps. */
const maxNotebooks = 64;

/**
 * The answer to a call taken over from a silent sharing process whose working copy is
 * still held: nearly always by the stopped process, in the middle of it, but the caller
 * cannot tell, so the holder is named only as the lock file names it (`pid 123 on
 * host`; a lock naming none gets no name). A pull may be retried; a commit may have
 * been published, or may still be when that process resumes.
 */
const stillHeld = (op: "pull" | "commit", holder: string | undefined): DomainError => {
  const held =
    holder === undefined
      ? "and this working copy is still held (most likely by that process, which may be stopped)"
      : `and this working copy is still held by ${holder}, which may be that process (it may be stopped) or another process working on this copy, such as a quire commit`;
  return op === "pull"
    ? domainError({
        code: "ENGINE_FAILED",
        reason: "BUSY",
        message: `The serve process running this call for this one stopped answering in the middle of it, ${held}. Call again once it has finished, resumed or ended.`,
      })
    : domainError({
        code: "STORAGE_FAILURE",
        reason: "PUBLICATION_UNKNOWN",
        message: `The serve process running this commit for this one stopped answering in the middle of it, ${held}, so whether the commit was published is unknown. Once that process has finished, resumed or ended, call notes_pull; if the changes are not in the notebook, commit them again.`,
      });
};

/**
 * The message of the BUSY answering a call run here, never sent, while the sharing
 * process is not answering, whose working copy stayed held beyond the takeover's bound:
 * by that process, tidying up after a call it already answered for this one, or by
 * another process working on the copy (a person's `quire commit`). The holder the lock
 * file names is said as it is (this process cannot tell whether it is the sharing one);
 * only a lock that names none gets the old guess. Nothing of this call ran anywhere, so
 * a commit is not published and may simply be retried.
 */
const heldWhileUnanswering = (holder: string | undefined): string =>
  holder === undefined
    ? "Another process holds this working copy, most likely the serve process that runs this store's calls, which is not answering (it may be stopped). Nothing of this call ran; call again once that process has resumed or ended."
    : `Another process holds this working copy: ${holder}, which may be the serve process that runs this store's calls (not answering; it may be stopped) or another process working on this copy, such as a quire commit. Nothing of this call ran; call again once that process has finished, resumed or ended.`;

/** The channel name of a store for a release: a digest, so it is short and opaque. */
export const channelName = (storeIdentity: string, release: string): string =>
  `store-${keyDigest([storeIdentity, release]).slice(0, 24)}`;

const outcomeOf = (
  request: ShareRequest,
  notebook: NotebookService,
): Effect.Effect<Either.Either<SyncReport, DomainError>> =>
  Effect.either(request.op === "pull" ? notebook.pull(request) : notebook.commit(request));

/**
 * The handler of calls sent by other processes: each runs on a notebook built from this
 * process's ports and the caller's settings (one per distinct settings, `own` reused for
 * this process's own; the least recently used beyond {@link maxNotebooks} are dropped).
 * A frame that does not decode, or comes from another build, is answered with a
 * refusal, which makes the caller run the call itself. A defect is logged with the
 * caller's diagnosticId and answered as ENGINE_FAILED/INTERNAL, as it would be there.
 * Records of a call carry only the caller's diagnosticId and hide its private root.
 */
const handleCalls = (
  services: Omit<Services, "options">,
  release: string,
  own: NotebookService,
  ownKey: string,
  answerBytes: number,
): ChannelHandler => {
  // This process's own notebook is always kept; the others make up the rest of the bound.
  const others = makeRecentMap<NotebookService>(maxNotebooks - 1);
  const notebookFor = (request: ShareRequest): Effect.Effect<NotebookService> => {
    const key = requestOptionsKey(request);
    const known = key === ownKey ? own : others.get(key);
    if (known !== undefined) return Effect.succeed(known);
    return Effect.tap(makeNotebook({ ...services, options: request.options }), (made) =>
      Effect.sync(() => others.set(key, made)),
    );
  };
  const run = (request: ShareRequest): Effect.Effect<string> => {
    if (request.release !== release)
      return Effect.succeed(encodeRefusal("this process runs another build of quire"));
    const id = request.diagnosticId;
    return Effect.gen(function* () {
      const notebook = yield* notebookFor(request);
      yield* Effect.logDebug("running a call for another process").pipe(
        Effect.annotateLogs("op", request.op),
      );
      return encodeAnswer(yield* outcomeOf(request, notebook), answerBytes);
    }).pipe(
      Effect.catchAllDefect((defect) =>
        Effect.logError("a call for another process failed unexpectedly").pipe(
          Effect.annotateLogs("cause", Cause.pretty(Cause.die(defect))),
          Effect.as(
            encodeAnswer(
              Either.left(
                domainError({
                  code: "ENGINE_FAILED",
                  reason: "INTERNAL",
                  message: `An unexpected internal error occurred; the log record with diagnosticId ${id ?? "(none)"} has the cause.`,
                }),
              ),
            ),
          ),
        ),
      ),
      Effect.annotateLogs(id === undefined ? {} : { diagnosticId: id }),
      Effect.locally(callPrivatePaths, [request.options.privateRoot]),
    );
  };
  return (frame) =>
    Either.match(decodeRequest(frame), {
      onLeft: (why) =>
        Effect.logWarning("refused a call from another process").pipe(
          Effect.annotateLogs("why", why),
          Effect.as(encodeRefusal("the request did not decode")),
        ),
      onRight: run,
    }).pipe(
      Effect.annotateLogs("module", "share"),
      // The listener may have been started inside one of this process's calls: none of
      // that call's annotations belong on another's records.
      Effect.locally(FiberRef.currentLogAnnotations, HashMap.empty()),
    );
};

/** The diagnosticId the calling fiber's log records carry, if any. */
const currentDiagnosticId: Effect.Effect<string | undefined> = Effect.map(
  FiberRef.get(FiberRef.currentLogAnnotations),
  (annotations) => {
    const id = Option.getOrUndefined(HashMap.get(annotations, "diagnosticId"));
    return typeof id === "string" ? id : undefined;
  },
);

/**
 * The Notebook service of a sharing `serve` process: `local` (built from `services`)
 * for calls this process runs, and the channel to the sharing process of the store for
 * the rest. At start, and whenever the sharing process is gone, this process tries to
 * become it, listening until `scope` closes; then it runs others' calls too (see the
 * module comment). `discardIfPublished` always runs here.
 */
export const sharedNotebook = (
  services: Services,
  local: NotebookService,
  settings: ShareSettings,
): Effect.Effect<NotebookService, never, Scope.Scope> =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope;
    const { options, ...ports } = services;
    const answerBytes = settings.maxAnswerBytes ?? maxAnswerBytes;
    // Processes with different bounds never meet (as different builds do not): a sharer
    // sending up to its bound to a caller reading less would have its answer dropped after
    // the work was done, and the caller's own run would report only what was left.
    const release =
      answerBytes === maxAnswerBytes
        ? settings.release
        : `${settings.release}+answer-${answerBytes}`;
    const name = channelName(services.store.identity, release);
    const timing = settings.timing ?? defaultShareTiming;
    const handler = handleCalls(ports, release, local, optionsKey(options), answerBytes);
    const lock = yield* Effect.makeSemaphore(1);
    // `listening`: this process runs others' calls; `off`: sharing is impossible here, or
    // this process is stopping.
    let role: "listening" | "sending" | "off" = "sending";
    // The listener's own scope, so that a stop (or finding it unreachable) can end it
    // before the layer's.
    let listening = yield* Scope.fork(scope, ExecutionStrategy.sequential);
    let reachable: Effect.Effect<boolean> = Effect.succeed(false);
    // Until when calls run here without asking an unresponsive sharing process.
    let quietUntilMs = 0;

    const tryToListen: Effect.Effect<void> = lock.withPermits(1)(
      Effect.suspend(() => {
        if (role !== "sending") return Effect.void;
        return settings.channel
          .listen(name, handler, {
            maxBytes: maxRequestBytes,
            graceMs: settings.graceMs,
            heartbeatMs: timing.heartbeatMs,
            requestMs: timing.requestMs,
            maxConnections,
          })
          .pipe(
            Scope.extend(listening),
            Effect.matchEffect({
              onSuccess: (listener) =>
                Effect.logInfo("running the calls of other serve processes of this store").pipe(
                  Effect.tap(() => {
                    role = "listening";
                    reachable = listener.reachable;
                  }),
                ),
              // Only a channel that can never work here ends sharing; a passing failure
              // (out of descriptors, say) leaves this process sending, and a later call
              // that finds nobody listening tries again.
              onFailure: (error) =>
                error.reason === "InUse"
                  ? Effect.void
                  : error.reason === "Unusable"
                    ? Effect.logWarning("cannot share this process; every call runs here").pipe(
                        Effect.annotateLogs({ reason: error.reason, why: error.message }),
                        Effect.tap(() => {
                          role = "off";
                        }),
                      )
                    : Effect.logInfo("cannot listen for other processes for now").pipe(
                        Effect.annotateLogs({ reason: error.reason, why: error.message }),
                      ),
            }),
            Effect.annotateLogs("module", "share"),
          );
      }),
    );
    yield* tryToListen;

    // A listener nobody reaches (another process took the name over at the same
    // instant) stops listening once its calls in flight are done, and this process sends
    // its later calls to the one that is reached.
    const stillReached: Effect.Effect<void> = Effect.flatMap(
      Effect.suspend(() => reachable),
      (reached) =>
        reached
          ? Effect.void
          : lock.withPermits(1)(
              Effect.gen(function* () {
                if (role !== "listening") return;
                role = "sending";
                const unreached = listening;
                listening = yield* Scope.fork(scope, ExecutionStrategy.sequential);
                yield* Effect.forkDaemon(Scope.close(unreached, Exit.void));
                yield* Effect.logInfo(
                  "another process runs the calls of this store; sending ours there",
                );
              }),
            ),
    ).pipe(Effect.annotateLogs("module", "share"));

    /**
     * Runs `here` waiting for its working copy's lock no longer than
     * `timing.takeoverLockMs`: a silent or stopped sharing process may hold it. A copy
     * still held then is answered with `held` given the holder its lock file names
     * (logged with `warning`), not the generic BUSY of a local writer; a BUSY of another
     * lock is answered as it is.
     */
    const withShortLockWait = (
      here: Effect.Effect<SyncReport, DomainError>,
      warning: string,
      held: (holder: string | undefined) => DomainError,
    ): Effect.Effect<SyncReport, DomainError> =>
      Effect.suspend(() => {
        // Set when the copy's own lock stayed held: who its lock file names, if anyone.
        let copyHeld: { readonly holder: string | undefined } | undefined;
        return here.pipe(
          Effect.locally(copyLockWaitMs, timing.takeoverLockMs),
          Effect.locally(copyLockBusyMessage, (holder) => {
            copyHeld = { holder };
            return held(holder).message;
          }),
          Effect.catchIf(
            (error) =>
              error.code === "ENGINE_FAILED" && error.reason === "BUSY" && copyHeld !== undefined,
            () =>
              Effect.logWarning(warning).pipe(Effect.zipRight(Effect.fail(held(copyHeld?.holder)))),
          ),
        );
      });

    /**
     * Runs a call whose sharing process went silent after acknowledging it (see the
     * module comment): here, if its working copy's lock comes free within the bound;
     * else the answer that says what is known.
     */
    const takeOver = (
      op: "pull" | "commit",
      here: Effect.Effect<SyncReport, DomainError>,
    ): Effect.Effect<SyncReport, DomainError> =>
      withShortLockWait(
        here,
        "the working copy is still held, most likely by the silent sharing process",
        (holder) => stillHeld(op, holder),
      );

    /**
     * Runs here a call not sent because the sharing process is not answering (no
     * acknowledgement, or silent mid-call, within the last {@link unresponsivePauseMs}),
     * waiting for its working copy's lock no longer than a taken-over call does: a
     * stopped sharing process may hold it, tidying up after a call it answered.
     */
    const whileUnanswering = (
      here: Effect.Effect<SyncReport, DomainError>,
    ): Effect.Effect<SyncReport, DomainError> =>
      withShortLockWait(
        here,
        "the working copy is still held while the sharing process is not answering",
        (holder) =>
          domainError({
            code: "ENGINE_FAILED",
            reason: "BUSY",
            message: heldWhileUnanswering(holder),
          }),
      );

    const viaShared = (
      operation: Parameters<typeof encodeRequest>[0],
      here: Effect.Effect<SyncReport, DomainError>,
    ): Effect.Effect<SyncReport, DomainError> =>
      Effect.suspend(() => {
        if (role === "listening") return Effect.zipRight(stillReached, here);
        if (role !== "sending") return here;
        return Effect.gen(function* () {
          if ((yield* Clock.currentTimeMillis) < quietUntilMs) return yield* whileUnanswering(here);
          const frame = encodeRequest(operation, release, options, yield* currentDiagnosticId);
          // Larger than any sharing process reads (settings far beyond real ones).
          if (Buffer.byteLength(frame) > maxRequestBytes) {
            yield* Effect.logDebug("the call is too large to send; running it here");
            return yield* here;
          }
          const answer = yield* Effect.either(
            settings.channel.request(name, frame, {
              maxBytes: answerBytes,
              ackTimeoutMs: timing.acknowledgementMs,
              silenceMs: timing.silenceMs,
            }),
          );
          if (Either.isLeft(answer) && answer.left.reason === "Silent") {
            yield* Effect.logWarning(
              "the sharing process went silent during the call; taking the call over",
            ).pipe(Effect.annotateLogs("why", answer.left.message));
            quietUntilMs = (yield* Clock.currentTimeMillis) + unresponsivePauseMs;
            return yield* takeOver(operation.op, here);
          }
          if (Either.isLeft(answer)) {
            const reason = answer.left.reason;
            yield* Effect.logWithLevel(
              reason === "Broken" || reason === "Unresponsive" ? LogLevel.Info : LogLevel.Debug,
              "the sharing process did not answer; running the call here",
            ).pipe(Effect.annotateLogs({ reason, why: answer.left.message }));
            // Nobody listens: this process may become the sharing one. The channel's
            // directory failed its check (removed and made again by someone else, say):
            // trying to listen finds that too, says so once, and ends sharing here. A
            // passing failure (Other: out of descriptors, say) runs this call here only.
            if (reason === "Unreachable" || reason === "Unusable" || reason === "Other")
              yield* tryToListen;
            // A stopped or wedged sharing process still holds the name: stop asking it
            // for a while rather than wait for it on every call.
            if (reason === "Unresponsive") {
              quietUntilMs = (yield* Clock.currentTimeMillis) + unresponsivePauseMs;
              return yield* whileUnanswering(here);
            }
            return yield* here;
          }
          const decoded = decodeAnswer(answer.right);
          if (Either.isLeft(decoded)) {
            yield* Effect.logWarning(
              "the sharing process's answer did not decode; running the call here",
            ).pipe(Effect.annotateLogs("why", decoded.left));
            return yield* here;
          }
          if (decoded.right._tag === "Refused") {
            yield* Effect.logDebug("the sharing process refused the call; running it here").pipe(
              Effect.annotateLogs("why", decoded.right.why),
            );
            return yield* here;
          }
          return yield* decoded.right.outcome;
        }).pipe(Effect.annotateLogs("module", "share"));
      });

    const service: NotebookService = {
      notebookDirectory: local.notebookDirectory,
      pull: (request) => viaShared({ op: "pull", ...request }, local.pull(request)),
      commit: (request) => viaShared({ op: "commit", ...request }, local.commit(request)),
      // Read-only, and never a swap of `current`: nothing to gain from the sharing process.
      log: local.log,
      status: local.status,
      diff: local.diff,
      show: local.show,
      restore: local.restore,
      revert: local.revert,
      discardIfPublished: local.discardIfPublished,
      stopSharing: lock.withPermits(1)(
        Effect.suspend(() => {
          role = "off";
          return Scope.close(listening, Exit.void);
        }),
      ),
    };
    return service;
  });
