/**
 * Settling a working copy on an accepted state: rewrite L to the merged tree under the
 * `recoveryRequired` guard, then record the accepted tree as the new baseline
 * (SPEC §6.1 step 4, §6.2 step 7, §8).
 */
import { Clock, Effect, Either, Option } from "effect";
import { domainError, type DomainError, type FileIssue } from "../../../domain/errors.js";
import { idsOf, type Tree } from "../../../domain/tree.js";
import { countChanges } from "../../../domain/diffstat.js";
import { compareCodeUnits } from "../../../domain/paths.js";
import type { FileStat } from "../../../domain/tree.js";
import type { BlobSource } from "./blobs.js";
import type { CopyCall } from "../shared/context.js";
import { materialisationTree, reach } from "../shared/failpoints.js";
import { lineCountOf, textOf } from "../pull/mergeRun.js";
import { alongside, forEachPooled } from "../shared/pooled.js";
import {
  markRecoveryRequired,
  recordBaseline,
  saveBaseline,
  saveStats,
  writeBaselineFile,
  type BaselineFile,
  mergeBaseOf,
  type BlobRef,
  type CopyState,
  type StatStamp,
} from "./privateState.js";
import { samePublication, type RemoteView } from "../commit/remote.js";
import { saveIntent, scannedContents } from "./rewriteIntent.js";
import {
  forgetFirstPull,
  loadFirstPull,
  recordFirstPull,
  type FirstPullRecord,
} from "./firstPull.js";
import { fixableCause, stoppedFirstPull, stoppedRewrite } from "./stoppedRewrite.js";
import { materialise } from "./rewrite.js";
import { changedPaths, stampsToCache, unsettledStamp, type Scan } from "./workingCopy.js";

/**
 * The line counts of one path from its old to its new bytes (`undefined` = absent), or
 * the integrity failure of stored content that is not text. An added or deleted file's
 * lines are counted in its bytes: a cold pull of 10,000 notes would otherwise decode
 * all of them only to count newlines.
 */
const statOf = (
  path: string,
  from: Uint8Array | undefined,
  to: Uint8Array | undefined,
): Either.Either<FileStat, DomainError> => {
  if (from === undefined || to === undefined) {
    const bytes = from ?? to;
    const lines = bytes === undefined ? Either.right(0) : lineCountOf(bytes);
    return Either.map(lines, (count) => ({
      path,
      insertions: from === undefined ? count : 0,
      deletions: from === undefined ? 0 : count,
    }));
  }
  return Either.flatMap(textOf(from), (before) =>
    Either.map(textOf(to), (after) => ({ path, ...countChanges(before, after) })),
  );
};

/** Line counts of every path whose content differs between two trees (sorted paths given). */
export const diffStats = (
  blobs: BlobSource,
  paths: ReadonlyArray<string>,
  before: Tree,
  after: Tree,
): Effect.Effect<ReadonlyArray<FileStat>, DomainError> =>
  Effect.suspend(() => {
    // Contents already in memory are counted in one plain loop: an effect per path cost
    // more than the counting when a pull brought 10,000 files. The rest are loaded.
    const stats: Array<FileStat> = [];
    const loads: Array<{ readonly at: number; readonly path: string }> = [];
    for (const path of paths) {
      const from = before.get(path);
      const to = after.get(path);
      const fromBytes = from === undefined ? undefined : blobs.inMemory(from);
      const toBytes = to === undefined ? undefined : blobs.inMemory(to);
      if (
        (from !== undefined && fromBytes === undefined) ||
        (to !== undefined && toBytes === undefined)
      ) {
        loads.push({ at: stats.length, path });
        stats.push({ path, insertions: 0, deletions: 0 });
        continue;
      }
      const stat = statOf(path, fromBytes, toBytes);
      if (Either.isLeft(stat)) return Effect.fail(stat.left);
      stats.push(stat.right);
    }
    return forEachPooled(
      loads,
      ({ at, path }) =>
        Effect.gen(function* () {
          const from = before.get(path);
          const to = after.get(path);
          const fromBytes = from === undefined ? undefined : yield* blobs.load(from);
          const toBytes = to === undefined ? undefined : yield* blobs.load(to);
          stats[at] = yield* statOf(path, fromBytes, toBytes);
        }),
      { workers: 8, itemsPerWorker: 1 },
    ).pipe(Effect.as(stats));
  });

/**
 * Leaves `tidy` for after the call's answer (shared/afterAnswer.ts), replacing what an earlier
 * settle of the same call left under `key`: only the last stat cache is worth writing.
 */
const afterAnswer =
  (call: CopyCall, key: "prune" | "stats") =>
  (tidy: Effect.Effect<void>): Effect.Effect<void> =>
    Effect.sync(() => call.afterAnswer(key, tidy));

/** The ids of a scan. */
export const scanTree = (scan: Scan): Tree => idsOf(scan);

/** The ids of a view's tree. */
export const viewTree = (view: RemoteView): Tree => idsOf(view.tree);

/** Whether `state` already records `accepted` as a clean baseline (its very tree). */
export const isCurrent = (state: CopyState, accepted: RemoteView): boolean =>
  !state.recoveryRequired && state.held.size === 0 && samePublication(state, accepted);

/** Whether a scan read any file the stat cache could not vouch for. */
export const scanLearnt = (scan: Scan, cached: ReadonlyMap<string, StatStamp>): boolean => {
  if (scan.size !== cached.size) return true;
  for (const [path, file] of scan) if (cached.get(path) !== file.stamp) return true;
  return false;
};

/**
 * Leaves for after the answer the stat cache of a scan that only looked at the copy
 * (status, diff), when it read a file the cache did not vouch for: otherwise each such
 * call after a pull that wrote many files reads them all again (stampsToCache keeps a
 * written file unsettled), until a pull or commit saves the cache. The entries of paths
 * the scan did not find are kept, never matching, so that the next call's scan still
 * tells a note deleted since the last pull or commit from one never seen
 * (workingCopy.ts goneSince), as it did without this save. The paths of `issues` (what
 * a commit's scan would refuse) are left out: a scan checks only names the cache does
 * not hold for case collisions (the recorded ones were collision-free together), and
 * the survey, unlike a commit's scan, keeps both files of a collision. Never fails: a
 * cache not saved only costs reads.
 */
export const rememberSurvey = (
  call: CopyCall,
  scan: Scan,
  cached: ReadonlyMap<string, StatStamp>,
  issues: ReadonlyArray<FileIssue>,
): Effect.Effect<void> =>
  Effect.gen(function* () {
    let read = false;
    for (const [path, file] of scan)
      if (cached.get(path) !== file.stamp) {
        read = true;
        break;
      }
    if (!read) return;
    const stamps = stampsToCache(scan);
    const refused = new Set(issues.map((issue) => issue.path));
    for (const path of refused) stamps.delete(path);
    for (const [path, stamp] of cached)
      if (!scan.has(path) && !refused.has(path)) stamps.set(path, unsettledStamp(stamp.id));
    const now = yield* Clock.currentTimeMillis;
    yield* afterAnswer(
      call,
      "stats",
    )(saveStats(call.fs, call.copyDir, call.memo, { stamps, recordedAtMs: now }));
  });

/** The result of settling: the new state and the working copy's on-disk delta. */
export interface Settled {
  readonly state: CopyState;
  /** Paths of the working copy whose content changed, sorted. */
  readonly changed: ReadonlyArray<string>;
  /**
   * Paths left as a person saved them during the call (rewrite.ts), sorted: their
   * baseline stays the previous one, so the next call merges them.
   */
  readonly held: ReadonlyArray<string>;
}

/**
 * The merge base the next call must use for each path the rewrite held (left as a person
 * saved it during the call). Where the rewrite's target for the path is what was
 * accepted (a commit that published the copy's edit, or a merge that kept nothing of the
 * copy's own), the accepted state includes the content the scan read, and the person's
 * file descends from that content too: it is the base, taken from the rewrite intent
 * (which holds it in a durable cached pack). The previous base would present the
 * published lines as the person's own edits again — a conflict with their own
 * publication. Elsewhere (a pull merging edits that are not published, a conflict)
 * nothing of the file was accepted: the base stays the one this call merged against, as
 * it does when no intent names the path.
 */
const heldBases = (
  call: CopyCall,
  scan: Scan,
  held: ReadonlyArray<string>,
  merged: Tree,
  accepted: RemoteView,
): Effect.Effect<ReadonlyMap<string, BlobRef | null>> =>
  Effect.gen(function* () {
    const previous = Option.match(call.state, {
      onNone: () => new Map<string, BlobRef>(),
      onSome: mergeBaseOf,
    });
    const bases = new Map(held.map((path) => [path, previous.get(path) ?? null]));
    // The scan had the file, and the accepted state has exactly what the call wrote: a
    // path neither has (moved aside by a conflict) or one the copy had deleted keeps the
    // previous base, which is the right one there.
    const included = held.filter((path) => {
      const target = merged.get(path);
      return scan.has(path) && target !== undefined && target === accepted.tree.get(path)?.id;
    });
    if (included.length === 0 || Option.isNone(call.state)) return bases;
    const scanned = yield* scannedContents(call, call.state.value, included);
    for (const [path, ref] of scanned) bases.set(path, ref);
    return bases;
  });

/**
 * Rewrites the working copy from `scan` to `merged` and records `accepted` as the
 * baseline. When files must change, the rewrite intent and then `recoveryRequired` are
 * persisted first; with `remoteAccepted` "yes" (an accepted commit) the caller has
 * already written the intent, naming its publication, before its swap. A failure
 * after that point is RECOVERY_FAILURE: recovery re-runs the rewrite once and reports
 * whether it succeeded; the flag stays set if not, so the next call resynchronises.
 * Uninterruptible: a cancelled call or a shutdown waits for this local rewrite to reach
 * its end rather than leave a half-rewritten copy behind.
 *
 * With `remoteAccepted` "yes" every failure is RECOVERY_FAILURE, also when no file had
 * to change: the publication stands, and the intent its commit wrote before the swap
 * lets the next call settle the copy (SPEC §4.1 "acceptance is never denied").
 *
 * A file saved during the call is never overwritten (rewrite.ts): one that cannot be
 * merged again is held, keeps the merge base the next call needs (the state's `held`,
 * see heldBases), and is listed in the result.
 *
 * `kept`: paths the caller left as the copy holds them (not in `changed`; pull.ts keeps a
 * file with unresolved blocks the notebook changed again): held like those.
 *
 * The stat cache is written after the call's answer (shared/afterAnswer.ts). So is the prune
 * of baseline files and cached packs the new baseline no longer needs, when `prune` is
 * "afterAnswer": only for a call's last settle, since it keeps nothing the call writes
 * into private state after it (a commit's intent and packs, say).
 */
export const settle = (
  call: CopyCall,
  scan: Scan,
  merged: Tree,
  accepted: RemoteView,
  remoteAccepted: "yes" | "no",
  statsChanged = true,
  prune: "now" | "afterAnswer" = "now",
  kept: ReadonlyArray<string> = [],
): Effect.Effect<Settled, DomainError> =>
  Effect.uninterruptible(
    settleNow(call, scan, merged, accepted, remoteAccepted, statsChanged, prune, kept),
  );

const settleNow = (
  call: CopyCall,
  scan: Scan,
  merged: Tree,
  accepted: RemoteView,
  remoteAccepted: "yes" | "no",
  statsChanged: boolean,
  prune: "now" | "afterAnswer",
  kept: ReadonlyArray<string>,
): Effect.Effect<Settled, DomainError> =>
  Effect.gen(function* () {
    const changed = changedPaths(scan, merged);
    if (
      changed.length === 0 &&
      kept.length === 0 &&
      Option.isSome(call.state) &&
      isCurrent(call.state.value, accepted)
    ) {
      // Nothing to rewrite and the baseline is already this accepted state: the only
      // thing worth writing is a stat cache that learnt something.
      if (statsChanged) {
        const now = yield* Clock.currentTimeMillis;
        const stamps = stampsToCache(scan);
        yield* afterAnswer(
          call,
          "stats",
        )(saveStats(call.fs, call.copyDir, call.memo, { stamps, recordedAtMs: now }));
      }
      return { state: call.state.value, changed, held: [] };
    }
    const guarded = Option.isSome(call.state) && changed.length > 0;
    const suffix = (yield* call.ids.uuidv7).slice(-12);
    const next = {
      generation: accepted.generation,
      head: accepted.head,
      baseline: accepted.tree,
    };
    // Nothing names the new baseline file until the record does, so it is written
    // alongside the guard rather than after the rewrite: one durable write less on the
    // way to the answer. If that early write fails, the rewrite writes it again, so a
    // failure there keeps the meaning it always had.
    let early = Option.none<BaselineFile>();
    if (guarded && Option.isSome(call.state)) {
      // An accepted commit wrote this very intent, naming its publication, before its
      // swap (the same state, scan, merge and accepted view): writing it again would
      // change nothing on disk. What the flag needs durable first is the packs it names.
      const state = call.state.value;
      const guard = (
        remoteAccepted === "yes"
          ? call.cacheWrites.awaitAll
          : saveIntent(call, state, scan, merged, accepted)
      ).pipe(Effect.zipRight(markRecoveryRequired(call.fs, call.copyDir, call.memo, state)));
      const file = Effect.option(writeBaselineFile(call.fs, call.copyDir, next, suffix));
      early = (yield* alongside(guard, file))[1];
    }
    // A copy never pulled has no state to guard its rewrite with: what it is being given
    // is recorded instead, so that a process killed (or a disk filled) during it leaves a
    // copy whose files can still be told from a person's (firstPull.ts), and the next pull
    // takes them as the notebook's: beside what an earlier interrupted first pull wrote,
    // which the copy may still hold. A person's own files there are in no record (one that
    // a merge moves aside neither), so they stay theirs: a removal judging the copy by the
    // record keeps it, and the next pull merges them as additions.
    const firstPull = Option.isNone(call.state) && changed.length > 0;
    if (firstPull) {
      const earlier = scan.size > 0 ? yield* loadFirstPull(call) : Option.none<FirstPullRecord>();
      yield* recordFirstPull(call, idsOf(accepted.tree), Option.getOrUndefined(earlier));
    }
    const schedulePrune = prune === "now" ? undefined : afterAnswer(call, "prune");
    const hook = call.options.failpoint;
    const writer = materialisationTree(call.tree, hook);
    // How many files the rewrite changed: a copy without state that failed before any is
    // as it was (LOCAL_IO says so truthfully).
    let wrote = 0;
    const rewrite = Effect.gen(function* () {
      const done = yield* materialise(
        writer,
        scan,
        merged,
        changed,
        call.blobs,
        "attributes",
        () => wrote++,
      );
      yield* reach(hook, "before-state-record");
      const now = yield* Clock.currentTimeMillis;
      const held = kept.length === 0 ? done.held : [...done.held, ...kept].sort(compareCodeUnits);
      // Held files keep the base the next call needs: the early file does not say so.
      const record =
        held.length === 0
          ? { file: early, of: next }
          : {
              file: Option.none<BaselineFile>(),
              of: { ...next, held: yield* heldBases(call, scan, held, merged, accepted) },
            };
      // The baseline names blobs in cached packs: those still being written must be
      // durable before the record names it.
      const state = yield* Option.match(record.file, {
        onSome: (file) =>
          call.cacheWrites.awaitAll.pipe(
            Effect.zipRight(recordBaseline(call.fs, call.copyDir, call.memo, file, schedulePrune)),
          ),
        onNone: () =>
          saveBaseline(
            call.fs,
            call.copyDir,
            call.memo,
            record.of,
            suffix,
            call.cacheWrites.awaitAll,
            schedulePrune,
          ),
      });
      // Also a record left by an earlier first pull, or by a removal stopped part way
      // (sessionEnd.ts): once the copy has state, it is judged by its state.
      if (Option.isNone(call.state)) yield* forgetFirstPull(call);
      // The stat cache only saves later scans some reads: written after the answer.
      yield* afterAnswer(
        call,
        "stats",
      )(saveStats(call.fs, call.copyDir, call.memo, { stamps: done.stamps, recordedAtMs: now }));
      return { state, changed, held };
    });
    // After a publication was accepted nothing may read as "not published" (SPEC §4.1).
    const recoverable = guarded || remoteAccepted === "yes";
    // A copy without state whose rewrite changed a file is changed too: never "before the
    // working copy was changed" (LOCAL_IO), and its record, if written, stays for the next pull.
    const started = () => Option.isNone(call.state) && wrote > 0;
    return yield* rewrite.pipe(
      Effect.catchAll((failure) =>
        recoverable
          ? Effect.logError("rewriting the working copy failed; recovering", failure).pipe(
              Effect.zipRight(
                rewrite.pipe(
                  Effect.as(Option.none<DomainError>()),
                  Effect.catchAll((again) => Effect.succeed(Option.some(again))),
                ),
              ),
              Effect.flatMap((again) => {
                const resynchronized = Option.isNone(again);
                // A cause a person can fix (a full disk, a permission) is theirs to fix,
                // then the next pull completes the rewrite: not an operator's matter.
                if (Option.isSome(again) && fixableCause(again.value) !== undefined)
                  return Effect.fail(stoppedRewrite(again.value, remoteAccepted));
                return Effect.fail(
                  domainError({
                    code: "RECOVERY_FAILURE",
                    reason: resynchronized ? "UNEXPECTED_FAILURE" : "RECOVERY_PENDING",
                    message:
                      (remoteAccepted === "yes" ? "Your changes were published. " : "") +
                      (resynchronized
                        ? "Rewriting the working copy failed and was repaired; call notes_pull to check it."
                        : "Rewriting the working copy failed and could not be repaired; the next call resynchronises it.") +
                      // What failed, so that whoever can fix it (a permission, a full
                      // disk, a name too long) knows what: the next call needs it fixed.
                      (failure.code === "ENGINE_FAILED"
                        ? ` The cause: ${failure.message}${failure.detail === undefined ? "" : ` (${failure.detail})`}`
                        : ""),
                    recovery: { stage: "rewrite-working-copy", remoteAccepted, resynchronized },
                  }),
                );
              }),
            )
          : started()
            ? Effect.logError("writing a new working copy failed part way", failure).pipe(
                Effect.zipRight(Effect.fail(stoppedFirstPull(failure))),
              )
            : Effect.fail(failure),
      ),
    );
  });
