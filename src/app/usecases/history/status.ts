/**
 * `quire status` (SPEC §11): what a working copy holds that is not published — files
 * added, modified or deleted since its baseline, files with unresolved conflict marker
 * blocks, files a commit would refuse (not notebook text, symlinks, special files) —
 * and how many publications `current` has that the copy has not pulled. One scan (as a
 * commit's, with the stat cache) and one read of `current`; nothing is published and no
 * note is written (the scan only tidies what a killed process of ours left behind:
 * workingCopy/leftovers.ts).
 */
import { Effect, Option } from "effect";
import type { CopyStatus, LocalChange } from "../../../domain/copyStatus.js";
import type { DomainError, FileIssue } from "../../../domain/errors.js";
import type { Manifest } from "../../../domain/manifest.js";
import { compareCodeUnits } from "../../../domain/paths.js";
import { idsOf, type Tree } from "../../../domain/tree.js";
import type { CopyCall } from "../shared/context.js";
import { filesWithBlocks } from "../shared/markerBlocks.js";
import { pulledState } from "../shared/pulled.js";
import { loadIntent, ownVersionsOf, publicationLanded } from "../workingCopy/rewriteIntent.js";
import { invalidAttributesIssue } from "../commit/attributesGuard.js";
import { notContinuing, readManifest } from "../commit/remote.js";
import {
  type CopyState,
  loadStats,
  mergeBaseOf,
  type StatStamp,
} from "../workingCopy/privateState.js";
import { rememberSurvey } from "../workingCopy/settle.js";
import { type Scan, surveyWorkingCopy } from "../workingCopy/workingCopy.js";

/**
 * How many publications `manifest` holds above `generation`: its increments (each one
 * publication; its checkpoint too when it is the first, at generation 1), in every chain
 * it names. `atLeast` when the copy is older than the oldest chain.
 */
export const publicationsAhead = (
  manifest: Manifest,
  generation: number,
): { readonly ahead: number; readonly atLeast: boolean } => {
  const chains = [
    { checkpoint: manifest.checkpoint, increments: manifest.increments },
    ...manifest.retained,
  ];
  let ahead = 0;
  let oldest = manifest.checkpoint.generation;
  for (const chain of chains) {
    oldest = Math.min(oldest, chain.checkpoint.generation);
    ahead += chain.increments.filter((d) => d.generation > generation).length;
    if (chain.checkpoint.generation === 1 && generation < 1) ahead += 1;
  }
  return { ahead, atLeast: generation < oldest && oldest > 1 };
};

/** What a copy holds against its merge base: the scan and the changes it makes. */
export interface Unpublished {
  readonly state: CopyState;
  /** The merge base's ids (the baseline, but for held files). */
  readonly base: Tree;
  /** The scan's valid files. */
  readonly scan: Scan;
  /** The stat cache the scan started from (see settle.ts rememberSurvey). */
  readonly cached: ReadonlyMap<string, StatStamp>;
  /** Their ids. */
  readonly local: Tree;
  /** Unpublished changes, sorted by path. */
  readonly changes: ReadonlyArray<LocalChange>;
  /** Files a commit refuses as they are. */
  readonly issues: ReadonlyArray<FileIssue>;
  /**
   * Editors' working files the scan skipped (workingCopy.ts), with why they are no
   * notes: neither changes nor issues, but a write at their path would find them.
   */
  readonly skipped: ReadonlyArray<FileIssue>;
}

/**
 * Scans the copy `call` holds (as a commit does, with the stat cache) and compares it
 * with what the next commit merges against. NOT_PULLED for a copy never pulled;
 * ENGINE_FAILED/LOCAL_IO when it cannot be scanned.
 */
export const unpublished = (call: CopyCall): Effect.Effect<Unpublished, DomainError> =>
  Effect.gen(function* () {
    const state = yield* pulledState(call);
    // Compared with what the next commit merges against: the baseline, but for held files.
    const mergeBase = mergeBaseOf(state);
    call.blobs.addTree(state.baseline);
    if (mergeBase !== state.baseline) call.blobs.addTree(mergeBase);
    const stats = yield* loadStats(call.fs, call.copyDir, call.memo);
    const { files, issues, skipped } = yield* surveyWorkingCopy(
      call.tree,
      stats.stamps,
      stats.recordedAtMs,
      call.blobs,
      mergeBase,
      ownVersionsOf(call),
    );
    const base = idsOf(mergeBase);
    const local = idsOf(files);
    const refused = new Set(issues.map((issue) => issue.path));
    const changes: LocalChange[] = [];
    for (const [path, id] of local) {
      const before = base.get(path);
      if (before === undefined) changes.push({ path, change: "added" });
      else if (before !== id) changes.push({ path, change: "modified" });
    }
    // A file the scan refused is not deleted: it is there, in a form a commit refuses.
    for (const path of base.keys())
      if (!local.has(path) && !refused.has(path)) changes.push({ path, change: "deleted" });
    changes.sort((a, b) => compareCodeUnits(a.path, b.path));
    return { state, base, scan: files, cached: stats.stamps, local, changes, issues, skipped };
  });

/**
 * `issues` and, when a commit would refuse the copy's `.quireattributes` for its lines
 * (commit/attributesGuard.ts), that file as INVALID_ATTRIBUTES too, sorted by path: the
 * scan takes it as text, so without this status would show it as a change ready to
 * publish. Kept out of {@link unpublished}, whose issues restore and revert refuse to
 * write over: restoring a good `.quireattributes` is how one mends a bad one.
 */
const withInvalidAttributes = (
  call: CopyCall,
  base: Tree,
  local: Tree,
  issues: ReadonlyArray<FileIssue>,
): Effect.Effect<ReadonlyArray<FileIssue>, DomainError> =>
  Effect.map(invalidAttributesIssue(call.blobs, base, local), (attributes) =>
    attributes === undefined
      ? issues
      : [...issues, attributes].sort((a, b) => compareCodeUnits(a.path, b.path)),
  );

/**
 * The status of the copy `call` holds (see the module comment). INVALID_REQUEST/
 * NOT_PULLED for a copy never pulled; STORAGE_FAILURE when `current` cannot be read;
 * ENGINE_FAILED/LOCAL_IO when the copy cannot be scanned.
 */
export const copyStatus = (call: CopyCall): Effect.Effect<CopyStatus, DomainError> =>
  Effect.gen(function* () {
    const { state, base, scan, cached, local, changes, issues, skipped } = yield* unpublished(call);
    yield* rememberSurvey(call, scan, cached, issues);
    const invalid = yield* withInvalidAttributes(call, base, local, issues);
    const markers = yield* filesWithBlocks(
      call.blobs,
      local,
      changes.filter((c) => c.change !== "deleted").map((c) => c.path),
    );
    const { manifest } = yield* readManifest(call.store);
    // A store that went back behind the copy: "up to date" would be false, as pull says.
    const diverged = notContinuing(manifest, state);
    if (diverged !== undefined) return yield* Effect.fail(diverged);
    // A commit whose publication landed but whose copy was never settled (its process
    // stopped after the swap): the changes it published are still listed, since the
    // baseline lacks them, and the next pull or commit settles the copy — said as for
    // an interrupted rewrite, so that they do not read as simply unpublished.
    const unsettled = publicationLanded(yield* loadIntent(call, state), manifest);
    const remote = Option.match(manifest, {
      onNone: () => ({ remoteGeneration: 0, ahead: 0, atLeast: false }),
      onSome: (m) => ({
        remoteGeneration: m.generation,
        ...publicationsAhead(m, state.generation),
      }),
    });
    return {
      generation: state.generation,
      remoteGeneration: remote.remoteGeneration,
      ahead: remote.ahead,
      ...(remote.atLeast ? { aheadAtLeast: true as const } : {}),
      changes,
      markers,
      invalid,
      recoveryPending: state.recoveryRequired || unsettled,
      ...(state.held.size === 0 ? {} : { held: [...state.held.keys()].sort(compareCodeUnits) }),
      ...keptOutOf(state.held.keys(), skipped),
    };
  });

/**
 * The held paths a skipped editor's file stands in the way of (at the path or one of
 * its folders), each with that file, sorted; `{}` when there are none. Linear in the
 * held paths' lengths.
 */
const keptOutOf = (
  held: Iterable<string>,
  skipped: ReadonlyArray<FileIssue>,
): { readonly keptOut?: ReadonlyArray<{ readonly path: string; readonly by: string }> } => {
  if (skipped.length === 0) return {};
  const standing = new Set(skipped.map((issue) => issue.path));
  const keptOut: Array<{ readonly path: string; readonly by: string }> = [];
  for (const path of held)
    for (let end = path.length; end > 0; end = path.lastIndexOf("/", end - 1)) {
      const prefix = path.slice(0, end);
      if (standing.has(prefix)) {
        keptOut.push({ path, by: prefix });
        break;
      }
    }
  keptOut.sort((a, b) => compareCodeUnits(a.path, b.path));
  return keptOut.length === 0 ? {} : { keptOut };
};
