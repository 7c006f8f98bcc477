/** The pull use case (SPEC §6.1): bring the accepted notebook into a working copy. */
import { Effect, Option } from "effect";
import { conflictMessage, type ConflictCall } from "../../../domain/conflictMessage.js";
import {
  domainError,
  earlierCommitLanded,
  withNote,
  type DomainError,
  type FileIssue,
} from "../../../domain/errors.js";
import { idsOf, type FileStat, type Tree } from "../../../domain/tree.js";
import type { Manifest } from "../../../domain/manifest.js";
import { compareCodeUnits } from "../../../domain/paths.js";
import { fileChanges, withoutHeld, type FileChange } from "../../../domain/treeDiff.js";
import type { CopyCall } from "../shared/context.js";
import { runMerge } from "./mergeRun.js";
import { keepingLocal, unresolvedBlocks } from "./unresolvedBlocks.js";
import { withWrittenConflicts } from "./stoppedConflicts.js";
import { deferUntilAwaited } from "../workingCopy/pendingWrites.js";
import { loadFirstPull } from "../workingCopy/firstPull.js";
import { loadStats, mergeBaseOf, type CopyState } from "../workingCopy/privateState.js";
import { emptyView, readRemote, samePublication, type RemoteView } from "../commit/remote.js";
import {
  interruptedConflicts,
  landedGeneration,
  loadIntent,
  ownVersionsOf,
  recoveryInputs,
  type Intent,
} from "../workingCopy/rewriteIntent.js";
import { diffStats, scanLearnt, scanTree, settle, viewTree } from "../workingCopy/settle.js";
import { changedPaths, scanWorkingCopy } from "../workingCopy/workingCopy.js";

/** The view a private state describes (the empty notebook when never pulled). */
export const knownView = (state: Option.Option<CopyState>): RemoteView =>
  Option.match(state, {
    onNone: () => emptyView,
    onSome: (s) => ({ generation: s.generation, head: s.head, tree: s.baseline }),
  });

/**
 * The merge base of a copy never pulled: nothing, but for the files an earlier first
 * pull stopped part way (or a session's removal stopped part way) left exactly as it
 * recorded them (firstPull.ts). Those are published notes, not additions of the copy's
 * own, so the notebook's later changes to them apply cleanly rather than meeting them
 * as conflicting additions. Never fails.
 */
const interruptedFirstPullBase = (call: CopyCall, onDisk: Tree): Effect.Effect<Tree> =>
  loadFirstPull(call).pipe(
    Effect.map(
      Option.match({
        onNone: (): Tree => new Map(),
        onSome: (recorded) =>
          new Map([...onDisk].filter(([path, id]) => recorded.get(path)?.has(id) === true)),
      }),
    ),
  );

/** The outcome of synchronising a working copy with the accepted state. */
export interface Synchronised {
  readonly state: CopyState;
  readonly generation: number;
  /** The on-disk delta of the working copy. */
  readonly files: ReadonlyArray<FileStat>;
  /** Conflicts written into the working copy (empty when the merge was clean). */
  readonly conflicts: ReadonlyArray<FileIssue>;
  /**
   * What the merge wrote over the working copy as scanned, path by path (a held file is
   * left out: it holds what its person saved): computed on demand (only a commit another
   * writer's swap accepted reports it; a pull does not).
   */
  readonly incoming: () => ReadonlyArray<FileChange>;
  /**
   * The generation of an earlier commit of this copy whose process stopped after
   * `current` accepted its publication, before the copy was settled, when this call
   * found it and settled the copy on it; `None` otherwise.
   */
  readonly completed: Option.Option<number>;
}

/**
 * Scans the working copy, merges it with `current` on the recorded baseline, writes
 * the result (clean merges and conflict blocks alike) and records `current` as the new
 * baseline. Never publishes. Also the resynchronisation a flagged copy runs first.
 * `prune`: as for {@link settle} ("afterAnswer" only when nothing follows in the call).
 * `startFrom`: a read of `current` just made (with its ETag) to use instead of reading it.
 */
export const synchronise = (
  given: CopyCall,
  prune: "now" | "afterAnswer" = "now",
  startFrom: Option.Option<{ readonly manifest: Manifest; readonly etag: string }> = Option.none(),
): Effect.Effect<Synchronised, DomainError> =>
  Effect.gen(function* () {
    // The downloaded packs are cached once the working copy is written
    // (workingCopy/pendingWrites.ts).
    const call: CopyCall = { ...given, cacheWrites: deferUntilAwaited(given.cacheWrites) };
    const known = knownView(call.state);
    // The merge base: the baseline, but for files a person saved during an earlier call.
    const mergeBase = Option.match(call.state, { onNone: () => known.tree, onSome: mergeBaseOf });
    call.blobs.addTree(known.tree);
    if (mergeBase !== known.tree) call.blobs.addTree(mergeBase);
    const stats = yield* loadStats(call.fs, call.copyDir, call.memo);
    const scan = yield* scanWorkingCopy(
      call.tree,
      stats.stamps,
      stats.recordedAtMs,
      call.blobs,
      mergeBase,
      ownVersionsOf(call),
    );
    const remote = yield* readRemote(call, known, startFrom);
    // A copy whose rewrite (or whose commit, after its swap) was interrupted is rolled
    // forward and merged against the state it was settling on (see workingCopy/rewriteIntent.ts).
    const onDisk = scanTree(scan);
    const intent = Option.isSome(call.state)
      ? yield* loadIntent(call, call.state.value)
      : Option.none<Intent>();
    const landed = landedGeneration(intent, remote.manifest);
    const recovering =
      Option.isSome(call.state) && (call.state.value.recoveryRequired || Option.isSome(landed));
    if (Option.isSome(intent))
      yield* Effect.logDebug("an interrupted rewrite or commit was found").pipe(
        Effect.annotateLogs({
          recovering,
          publication: intent.value.publication === undefined ? "none" : "recorded",
        }),
      );
    const { base, local } =
      recovering && Option.isSome(call.state)
        ? yield* recoveryInputs(call, call.state.value, intent, onDisk)
        : { base: mergeBase, local: onDisk };
    const baseIds = Option.isNone(call.state)
      ? yield* interruptedFirstPullBase(call, onDisk)
      : idsOf(base);
    // Nobody published since the baseline, and no file is held: the merge is the working
    // copy itself.
    const unchanged =
      !recovering && mergeBase === known.tree && samePublication(remote.view, known);
    // A file still holding blocks the notebook changed again stays as it is (see
    // unresolvedBlocks.ts): merged with itself, held, and its blocks reported again.
    const remoteIds = viewTree(remote.view);
    // Not while recovering: its local tree is rolled forward past the scan and its base
    // is the interrupted rewrite's, so such a file is merged as it always was.
    const unresolved =
      unchanged || recovering ? [] : yield* unresolvedBlocks(call.blobs, baseIds, local, remoteIds);
    const kept = unresolved.map((issue) => issue.path);
    const { merged, conflicts } = unchanged
      ? { merged: local, conflicts: [] }
      : yield* runMerge(baseIds, local, keepingLocal(remoteIds, local, kept), call.blobs);
    // Line counts read the old contents, so they are taken before the rewrite.
    const files = yield* diffStats(call.blobs, changedPaths(scan, merged), onDisk, merged);
    const settled = yield* settle(
      call,
      scan,
      merged,
      remote.view,
      "no",
      scanLearnt(scan, stats.stamps),
      prune,
      kept,
    ).pipe(
      Effect.catchAll((failure) =>
        withWrittenConflicts(call, conflicts, merged, failure).pipe(Effect.flip),
      ),
    );
    // Blocks an interrupted call wrote and nobody resolved since are this call's to report.
    const leftOver = recovering ? yield* interruptedConflicts(call, intent, merged) : [];
    // A held file holds what its person saved, not this pull's change: not reported as one,
    // nor as a conflict (its blocks were never written; the next call merges it again).
    const held = new Set(settled.held);
    return {
      state: settled.state,
      generation: remote.view.generation,
      files: held.size === 0 ? files : files.filter((file) => !held.has(file.path)),
      conflicts: withLeftOver(
        withoutHeld(withLeftOver(conflicts, leftOver), settled.held),
        unresolved,
      ),
      incoming: () => withoutHeld(fileChanges(onDisk, merged), settled.held),
      completed: landed,
    };
  });

/** `conflicts` and the left-over ones of files they do not name, in path order. */
const withLeftOver = (
  conflicts: ReadonlyArray<FileIssue>,
  leftOver: ReadonlyArray<FileIssue>,
): ReadonlyArray<FileIssue> => {
  if (leftOver.length === 0) return conflicts;
  const named = new Set(conflicts.map((conflict) => conflict.path));
  return [...conflicts, ...leftOver.filter((conflict) => !named.has(conflict.path))].sort((a, b) =>
    compareCodeUnits(a.path, b.path),
  );
};

/**
 * The conflict error of a merge that left marker blocks or structural conflicts; the
 * message says which (conflictMessage.ts), and where each file moved aside went.
 */
export const conflictError = (
  conflicts: ReadonlyArray<FileIssue>,
  call: ConflictCall,
): DomainError =>
  domainError({
    code: "CONTENT_CONFLICT",
    reason: "MERGE_CONFLICT",
    message: conflictMessage(call, conflicts),
    files: conflicts,
  });

/**
 * Pull (SPEC §6.1): OK with the on-disk delta, or CONTENT_CONFLICT with every conflicted
 * path and range. `completed`: the generation of an earlier commit of this copy, stopped
 * after the notebook accepted it, that the pull settled the copy on first.
 */
export const pull = (
  call: CopyCall,
): Effect.Effect<
  {
    readonly generation: number;
    readonly files: ReadonlyArray<FileStat>;
    readonly completed: Option.Option<number>;
  },
  DomainError
> =>
  synchronise(call, "afterAnswer").pipe(
    Effect.flatMap((done) =>
      done.conflicts.length > 0
        ? Effect.fail(
            Option.match(done.completed, {
              onNone: () => conflictError(done.conflicts, { _tag: "Pull" }),
              onSome: (generation) =>
                withNote(
                  conflictError(done.conflicts, { _tag: "Pull" }),
                  earlierCommitLanded(generation),
                ),
            }),
          )
        : Effect.succeed(done),
    ),
  );
