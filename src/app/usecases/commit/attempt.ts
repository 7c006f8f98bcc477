/**
 * One attempt of a commit (SPEC §6.2 step 3): a place in a batch of this process's
 * commits on the store (publishBatch.ts), the merge onto where that place starts, and
 * what the batch's end means for the next attempt. Every decision about retrying is
 * made here and handed back as the next {@link Round}; commit.ts only loops.
 */
import { Clock, Effect, Either, Option } from "effect";
import { domainError, type DomainError } from "../../../domain/errors.js";
import { diffTrees, fileChanges, withoutHeld } from "../../../domain/treeDiff.js";
import type { Tree } from "../../../domain/tree.js";
import type { Author } from "../../Notebook.js";
import type { Setback } from "./contention.js";
import { inBatch, type BatchStart, type Prepared, type Took } from "./publishBatch.js";
import { contended, takeSeen } from "./staging.js";
import { lastWritten } from "./lastWritten.js";
import type { CopyCall } from "../shared/context.js";
import { refuseMassDelete } from "./massDelete.js";
import { refuseOversizedMerge } from "./oversizedMerge.js";
import { runMerge } from "../pull/mergeRun.js";
import type { CopyState, StatCache } from "../workingCopy/privateState.js";
import { conflictError } from "../pull/pull.js";
import { readRemote, samePublication, type RemoteView } from "./remote.js";
import { scanLearnt, scanTree, settle, viewTree } from "../workingCopy/settle.js";
import type { Scan } from "../workingCopy/workingCopy.js";
import {
  concluded,
  planPublication,
  swapCurrent,
  type Conclusion,
  type PlannedAttempt,
} from "./plan.js";
import { complete, completeIncluded, type Committed } from "./completion.js";

/** A scanned working copy that passed every local check: what each attempt publishes. */
export interface ScannedCopy {
  /** The call, with the copy's (possibly resynchronised) state and content source. */
  readonly call: CopyCall;
  readonly state: CopyState;
  readonly scan: Scan;
  readonly stats: StatCache;
  /** The state the copy was last brought to (its baseline). */
  readonly base: RemoteView;
  /** The merge base: the baseline, but for files a person saved during an earlier call. */
  readonly baseIds: Tree;
  /** The copy as scanned. */
  readonly local: Tree;
  readonly author: Author;
  readonly message: string;
  /** Taken once per commit: staged, the commit that has waited longest swaps for all. */
  readonly ticket: string;
}

/** Where a commit stands between two attempts. */
export interface Round {
  /** Attempts counted so far against `commitRetries`. */
  readonly attempt: number;
  /** The next attempt starts without a backoff. */
  readonly atOnce: boolean;
  /**
   * The next attempts read `current` rather than start from what this process last
   * wrote or saw staged (set once an attempt could not trust those; never cleared).
   */
  readonly readCurrent: boolean;
  /** Why the last attempt did not publish: what REMOTE_BUSY says if none is left. */
  readonly setback: Setback;
  /** The newest remote state an attempt has read (what the next merge reports against). */
  readonly known: RemoteView;
  /** What is left of the budget for waiting for a place in a batch. */
  readonly placeWaitLeftMs: number;
}

/** How an attempt ended: the commit's answer, another round, or no place in a batch. */
export type AttemptEnd =
  | { readonly _tag: "Committed"; readonly committed: Committed }
  | { readonly _tag: "Again"; readonly round: Round }
  | { readonly _tag: "NoPlace" };

/** What one attempt learnt as its batch member prepared (the batch reports the rest). */
interface Member {
  /** When the attempt got its place in a batch. */
  placeCameMs: number;
  /** Its publication, once it planned one. */
  planned: PlannedAttempt | undefined;
  /** It started on the tip of its batch, a state not accepted yet. */
  onTip: boolean;
}

/**
 * Where a member's merge starts: the batch's tip; `current` itself once the commit
 * reads it; what was last seen of it while staging (staging.ts); or what this process
 * last wrote (lastWritten.ts). A start other than `current` is trusted only to publish
 * on: the swap checks it.
 */
const startOf = (copy: ScannedCopy, round: Round, start: BatchStart, nowMs: number) => {
  const identity = copy.call.store.identity;
  const fromSeen = start._tag === "Own" && !round.readCurrent && contended(identity, nowMs);
  const startFrom =
    start._tag === "Tip"
      ? Option.some({ manifest: start.manifest, etag: start.etag })
      : round.readCurrent
        ? Option.none()
        : fromSeen
          ? takeSeen(identity)
          : lastWritten(identity, nowMs);
  return { fromSeen, startFrom };
};

/**
 * A batch member's part: reads where it starts, merges the copy onto it, and either
 * concludes (conflict, nothing to publish, or a start it cannot trust) or plans its
 * publication. A mass deletion is refused (INVALID_REQUEST/MASS_DELETE) unless allowed.
 */
const mergeAsMember =
  (copy: ScannedCopy, round: Round, member: Member) =>
  (start: BatchStart): Effect.Effect<Prepared<Conclusion>, DomainError> =>
    Effect.gen(function* () {
      const call = copy.call;
      member.placeCameMs = yield* Clock.currentTimeMillis;
      const { fromSeen, startFrom } = startOf(copy, round, start, member.placeCameMs);
      const remote = yield* readRemote(call, round.known, startFrom, true);
      const fromWritten =
        !fromSeen && Option.isSome(startFrom) && Option.contains(remote.etag, startFrom.value.etag);
      if (start._tag === "Tip") {
        // The tip is not accepted yet: never a state to remember as seen.
        member.onTip = true;
        // Not on the tip (it is older than what this copy has seen, or a pack of it
        // was not at hand and `current` was read instead): try again from `current`.
        if (!fromWritten || !Option.contains(remote.manifest, start.manifest))
          return concluded({ kind: "unverified", remote, merged: copy.local });
      }
      const remoteIds = viewTree(remote.view);
      // Nobody published since the baseline, and no file is held: the merge is the
      // working copy itself.
      const unchanged = copy.state.held.size === 0 && samePublication(remote.view, copy.base);
      const { merged, conflicts, oversized } = unchanged
        ? { merged: copy.local, conflicts: [], oversized: [] }
        : yield* runMerge(copy.baseIds, copy.local, remoteIds, call.blobs);
      // What this process last wrote, or a batch's tip, is trusted only to publish on
      // (the swap checks it); any other conclusion is drawn from `current` itself.
      const unverified = concluded({ kind: "unverified", remote, merged });
      if (conflicts.length > 0)
        return fromWritten
          ? unverified
          : concluded({ kind: "conflict", remote, merged, conflicts });
      if (diffTrees(remoteIds, merged).length === 0)
        return fromWritten ? unverified : concluded({ kind: "nothing", remote, merged });
      const tooLarge = yield* Effect.either(refuseOversizedMerge(oversized));
      if (Either.isLeft(tooLarge))
        return fromWritten ? unverified : yield* Effect.fail(tooLarge.left);
      const massDelete = yield* Effect.either(
        refuseMassDelete(remoteIds, merged, call.options.allowMassDelete ?? false),
      );
      if (Either.isLeft(massDelete))
        return fromWritten ? unverified : yield* Effect.fail(massDelete.left);
      const plan = yield* planPublication(
        call,
        remote,
        copy.scan,
        merged,
        copy.author,
        copy.message,
      );
      member.planned = { remote, merged, plan };
      return {
        _tag: "Publish",
        from: { manifest: remote.manifest, etag: remote.etag, fromWritten },
        next: plan.next,
        upload: plan.upload,
        member: { pack: plan.pack.bytes, ticket: copy.ticket },
        swap: swapCurrent(call.store, member.placeCameMs),
      } as const;
    });

/**
 * A conclusion drawn without publishing: a conflict is written into the copy and
 * reported, nothing to publish settles the copy on `current` and answers OK, and a start
 * that could not be trusted makes the next attempt read `current` (at once, uncounted).
 */
const concludedEnd = (
  copy: ScannedCopy,
  round: Round,
  conclusion: Conclusion,
  known: RemoteView,
): Effect.Effect<AttemptEnd, DomainError> => {
  // Settling on what `current` holds ends the call: its prune can wait for the answer.
  const settleOnRemote = (statsChanged: boolean) =>
    settle(
      copy.call,
      copy.scan,
      conclusion.merged,
      conclusion.remote.view,
      "no",
      statsChanged,
      "afterAnswer",
    );
  switch (conclusion.kind) {
    case "conflict":
      return settleOnRemote(true).pipe(
        Effect.flatMap((settled) => {
          // A conflicted file saved again during the call was left as saved (held): no
          // blocks to resolve there; nothing was published, and the next call merges it.
          const written = withoutHeld(conclusion.conflicts, settled.held);
          return Effect.fail(
            written.length > 0
              ? conflictError(written, { _tag: "Commit" })
              : domainError({
                  code: "ENGINE_FAILED",
                  reason: "LOCAL_IO",
                  message:
                    "A file changed while the call was running; nothing was published. Call notes_commit again.",
                }),
          );
        }),
      );
    case "nothing":
      return settleOnRemote(scanLearnt(copy.scan, copy.stats.stamps)).pipe(
        Effect.map(
          (settled) =>
            ({
              _tag: "Committed",
              committed: {
                generation: conclusion.remote.view.generation,
                files: [],
                incoming: withoutHeld(
                  fileChanges(scanTree(copy.scan), conclusion.merged),
                  settled.held,
                ),
              },
            }) as const,
        ),
      );
    case "unverified":
      return Effect.succeed({
        _tag: "Again",
        round: { ...round, known, readCurrent: true, atOnce: true },
      });
  }
};

/**
 * What a batch's end means for a publishing member: accepted by its own swap or
 * included in another writer's, the commit completes; aborted by another member, the
 * next attempt starts at once and counts; lost, it re-merges after a backoff — at once
 * and uncounted when it started from what this process last wrote, at once but counted
 * while staging (the next round forms as soon as `current` moves; staging.ts).
 */
const publishedEnd = (
  copy: ScannedCopy,
  round: Round,
  planned: PlannedAttempt,
  outcome: Exclude<Took<Conclusion>, { readonly _tag: "Concluded" }>,
  known: RemoteView,
): Effect.Effect<AttemptEnd, DomainError> =>
  Effect.gen(function* () {
    const call = copy.call;
    const counted = { ...round, known, attempt: round.attempt + 1 };
    switch (outcome._tag) {
      case "Accepted":
        return {
          _tag: "Committed",
          committed: yield* complete(call, copy.scan, planned.merged, {
            manifest: outcome.manifest,
            base: planned.remote.view,
            view: planned.plan.view,
            pack: planned.plan.pack,
          }),
        };
      case "Included":
        return {
          _tag: "Committed",
          committed: yield* completeIncluded(call, planned, outcome.manifest),
        };
      case "Aborted":
        yield* Effect.logDebug("another member of the batch failed; trying again");
        return { _tag: "Again", round: { ...counted, atOnce: true, setback: "aborted" } };
      case "Lost": {
        yield* Effect.logDebug("lost the race for current; re-merging").pipe(
          Effect.annotateLogs("attempt", round.attempt + 1),
        );
        const lost = { ...counted, setback: "lost" } as const;
        if (outcome.fromWritten)
          return { _tag: "Again", round: { ...lost, attempt: round.attempt, atOnce: true } };
        const staging = contended(call.store.identity, yield* Clock.currentTimeMillis);
        return { _tag: "Again", round: { ...lost, atOnce: staging } };
      }
    }
  });

/**
 * One attempt: waits for a place in a batch (within what is left of the budget), merges
 * and plans as its member, and says how the commit goes on.
 */
export const attemptOnce = (
  copy: ScannedCopy,
  round: Round,
): Effect.Effect<AttemptEnd, DomainError> =>
  Effect.gen(function* () {
    const waitStartedMs = yield* Clock.currentTimeMillis;
    const member: Member = { placeCameMs: waitStartedMs, planned: undefined, onTip: false };
    const took = yield* inBatch(
      copy.call.store.identity,
      round.placeWaitLeftMs,
      round.readCurrent,
    )(mergeAsMember(copy, round, member));
    if (Option.isNone(took)) {
      yield* Effect.logDebug("no place in a batch within the retry budget");
      return { _tag: "NoPlace" } as const;
    }
    const waited = {
      ...round,
      atOnce: false,
      placeWaitLeftMs: round.placeWaitLeftMs - (member.placeCameMs - waitStartedMs),
    };
    const outcome = took.value;
    if (outcome._tag === "Concluded") {
      const conclusion = outcome.conclusion;
      const known = member.onTip ? round.known : conclusion.remote.view;
      return yield* concludedEnd(copy, waited, conclusion, known);
    }
    const planned = member.planned;
    if (planned === undefined) return yield* Effect.die("a publishing member without a plan");
    const known = member.onTip ? round.known : planned.remote.view;
    return yield* publishedEnd(copy, waited, planned, outcome, known);
  });
