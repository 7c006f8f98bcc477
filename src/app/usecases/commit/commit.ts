/** The commit use case (SPEC §6.2): publish a working copy's edits with one compare-and-swap. */
import { Effect, Option } from "effect";
import { textFault, textFaultMessage } from "../../../domain/content.js";
import {
  domainError,
  earlierCommitLanded,
  withNote,
  type DomainError,
} from "../../../domain/errors.js";
import { diffTrees } from "../../../domain/treeDiff.js";
import { idsOf, type Tree } from "../../../domain/tree.js";
import { utf8Length } from "../../../domain/paths.js";
import { noPathSets } from "../../../domain/pathSets.js";
import type { Author } from "../../Notebook.js";
import { makeBlobSource } from "../workingCopy/blobs.js";
import { backoff, busyError, placeWaitBudgetMs } from "./contention.js";
import type { CopyCall } from "../shared/context.js";
import { pulledState } from "../shared/pulled.js";
import { clearIntent, loadIntent, ownVersionsOf } from "../workingCopy/rewriteIntent.js";
import { loadStats, mergeBaseOf, type CopyState } from "../workingCopy/privateState.js";
import { enforcePathSets } from "./pathSetGuard.js";
import { refuseInvalidAttributes } from "./attributesGuard.js";
import { filesWithBlocks } from "../shared/markerBlocks.js";
import { conflictError, knownView, synchronise } from "../pull/pull.js";
import { scanTree } from "../workingCopy/settle.js";
import { scanWorkingCopy } from "../workingCopy/workingCopy.js";
import { attemptOnce, type Round, type ScannedCopy } from "./attempt.js";
import { withdrawStaged } from "./staging.js";
import type { Committed } from "./completion.js";

export type { Committed } from "./completion.js";

/** The most bytes a commit message may have. */
export const maxMessageBytes = 16_384;

/**
 * Validates a commit message (SPEC §2.1): UTF-8 text (no lone surrogate, which has no
 * UTF-8 form and would be stored as U+FFFD, not byte for byte), non-blank, no U+0000, at
 * most 16,384 bytes.
 */
export const validateMessage = (message: string): Effect.Effect<void, DomainError> => {
  const fault = textFault(message);
  if (fault !== undefined) {
    return Effect.fail(
      domainError({
        code: "INVALID_REQUEST",
        reason: "INVALID_ARGUMENT",
        message: `${textFaultMessage("The message", fault)}.`,
      }),
    );
  }
  if (/^\p{White_Space}*$/u.test(message)) {
    return Effect.fail(
      domainError({
        code: "INVALID_REQUEST",
        reason: "MESSAGE_BLANK",
        message: "The message must contain visible text.",
      }),
    );
  }
  if (utf8Length(message) > maxMessageBytes) {
    return Effect.fail(
      domainError({
        code: "INVALID_REQUEST",
        reason: "MESSAGE_TOO_LONG",
        message: "The message is longer than 16,384 UTF-8 bytes.",
      }),
    );
  }
  return Effect.void;
};

/** Refuses complete marker blocks in any file the copy changed (SPEC §6.3). */
const refuseMarkers = (call: CopyCall, base: Tree, local: Tree): Effect.Effect<void, DomainError> =>
  Effect.gen(function* () {
    const found = yield* filesWithBlocks(call.blobs, local, diffTrees(base, local));
    if (found.length === 0) return;
    return yield* Effect.fail(
      domainError({
        code: "CONTENT_CONFLICT",
        reason: "UNRESOLVED_MARKERS",
        message:
          "Conflict marker blocks are still in these files; resolve them, then call notes_commit again. Nothing was published.",
        files: found,
      }),
    );
  });

/**
 * Step 1, once the copy's state is there (shared/pulled.ts): a rewrite that was interrupted, or an earlier commit that may have
 * been accepted without its copy being settled, resynchronises the copy first
 * (workingCopy/rewriteIntent.ts); its conflicts fail the commit. Answers the call to
 * go on with, and the generation of the earlier commit's publication when it had landed
 * (the commit's answer says so: otherwise it would report only what it publishes itself,
 * often nothing, as if the earlier commit had published nothing).
 */
const recoverFirst = (
  call: CopyCall,
  pulled: CopyState,
): Effect.Effect<
  { readonly call: CopyCall; readonly completed: Option.Option<number> },
  DomainError
> =>
  Effect.gen(function* () {
    let state = pulled;
    let completed = Option.none<number>();
    const intent = yield* loadIntent(call, state);
    const unsettled = Option.isSome(intent) && intent.value.publication !== null;
    if (state.recoveryRequired || unsettled) {
      yield* Effect.logDebug("resynchronising before the commit").pipe(
        Effect.annotateLogs({ recoveryRequired: state.recoveryRequired, unsettled }),
      );
      // The earlier commit's staged record, if still alive, goes before `current` is read
      // for its fate: a swap that took it after that read would be unseen, and this
      // commit would stage the same edits again and conflict with its own earlier text.
      if (Option.isSome(intent) && intent.value.publication !== null)
        yield* withdrawStaged(call.store, intent.value.publication, intent.value.generation);
      const resynchronised = yield* synchronise(call);
      if (unsettled) yield* clearIntent(call);
      if (resynchronised.conflicts.length > 0)
        return yield* Effect.fail(conflictError(resynchronised.conflicts, { _tag: "Commit" }));
      state = resynchronised.state;
      completed = resynchronised.completed;
    }
    // After a resynchronisation the content source may point into cached packs that
    // settling it pruned, so the commit starts from a fresh one.
    return {
      call: {
        ...call,
        state: Option.some(state),
        blobs: state === pulled ? call.blobs : makeBlobSource(call.fs, call.copyDir),
      },
      completed,
    };
  });

/**
 * Step 2: scans the copy and refuses, before any remote work, marker blocks, path-set
 * violations and invalid attribute files.
 */
const scanAndCheck = (
  call: CopyCall,
  author: Author,
  message: string,
): Effect.Effect<ScannedCopy, DomainError> =>
  Effect.gen(function* () {
    const state = yield* pulledState(call);
    const mergeBase = mergeBaseOf(state);
    call.blobs.addTree(state.baseline);
    if (mergeBase !== state.baseline) call.blobs.addTree(mergeBase);
    const stats = yield* loadStats(call.fs, call.copyDir, call.memo);
    const scan = yield* scanWorkingCopy(
      call.tree,
      stats.stamps,
      stats.recordedAtMs,
      call.blobs,
      mergeBase,
      ownVersionsOf(call),
    );
    const baseIds = idsOf(mergeBase);
    const local = scanTree(scan);
    yield* refuseMarkers(call, baseIds, local);
    yield* enforcePathSets(call, call.options.pathSets ?? noPathSets, scan, baseIds, local);
    yield* refuseInvalidAttributes(call.blobs, baseIds, local);
    const ticket = yield* call.ids.uuidv7;
    const base = knownView(call.state);
    return { call, state, scan, stats, base, baseIds, local, author, message, ticket };
  });

/**
 * Steps 3 and 4: attempt after attempt (attempt.ts), a backoff before each counted
 * retry that is not to start at once, until one answers or `commitRetries` are spent
 * (REMOTE_BUSY, saying why the last one did not publish).
 */
const publishWithRetries = (copy: ScannedCopy): Effect.Effect<Committed, DomainError> =>
  Effect.gen(function* () {
    const retries = copy.call.options.commitRetries;
    let round: Round = {
      attempt: 0,
      atOnce: false,
      readCurrent: false,
      setback: "lost",
      known: copy.base,
      // Only the time spent waiting for a place in a batch counts against this budget.
      placeWaitLeftMs: placeWaitBudgetMs(retries),
    };
    while (round.attempt <= retries) {
      if (round.attempt > 0 && !round.atOnce) yield* backoff(round.attempt - 1);
      const end = yield* attemptOnce(copy, round);
      if (end._tag === "Committed") return end.committed;
      if (end._tag === "NoPlace") return yield* Effect.fail(busyError("noPlace"));
      round = end.round;
    }
    return yield* Effect.fail(busyError(round.setback));
  });

/**
 * Commit (SPEC §6.2), in steps:
 * 1. requires a prior pull; resynchronises first a copy whose rewrite (or whose last
 *    commit, after its swap) was interrupted — the answer then names the generation of
 *    that commit's publication (`interruptedCommit`) when it had landed;
 * 2. scans; refuses marker blocks and path-set violations before any remote work;
 * 3. per attempt: reads `current` and merges; writes conflicts into the working copy
 *    without publishing; publishes nothing when the merge equals `current`; refuses a
 *    mass deletion (INVALID_REQUEST/MASS_DELETE, working copy untouched) unless
 *    allowed; uploads a pack and compare-and-swaps `current`;
 * 4. re-merges after each lost race (full-jitter backoff) up to `commitRetries` →
 *    REMOTE_BUSY; each attempt is a member of a batch of this process's commits on
 *    the store, published with one swap (publishBatch.ts), and a commit that gets no
 *    place in a batch within the retry budget is REMOTE_BUSY too;
 * 5. once acceptance is proven: settles the working copy, then runs store maintenance
 *    (checkpoint, cleanup) that never fails the commit. OK only after acceptance.
 */
export const commit = (
  call: CopyCall,
  message: string,
  author: Author,
): Effect.Effect<Committed, DomainError> =>
  Effect.gen(function* () {
    const recovered = yield* recoverFirst(call, yield* pulledState(call));
    const committed = yield* scanAndCheck(recovered.call, author, message).pipe(
      Effect.flatMap(publishWithRetries),
      // Whatever this commit's own outcome, the earlier one is published: a failure must
      // not read as "nothing of yours was published".
      Effect.mapError((error) =>
        Option.match(recovered.completed, {
          onNone: () => error,
          onSome: (generation) => withNote(error, earlierCommitLanded(generation)),
        }),
      ),
    );
    return Option.match(recovered.completed, {
      onNone: () => committed,
      onSome: (generation) => ({ ...committed, interruptedCommit: { generation } }),
    });
  });
