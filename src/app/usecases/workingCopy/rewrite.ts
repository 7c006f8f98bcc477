/**
 * Rewriting the working copy L to a target tree (SPEC §4, §4.1, §6): every change is a
 * guarded replace or remove of the call's rooted tree, so a file saved during the call is
 * never overwritten or deleted. Such a newer edit is merged again with what the rewrite
 * meant to write, in the same call (bounded); when that does not merge cleanly, or the
 * file keeps changing, it is left exactly as the person left it and reported as held,
 * so that the caller records its old baseline and the next call merges it.
 */
import { Effect, Option } from "effect";
import { contentId, decodeText, encodeText, maxFileBytes } from "../../../domain/content.js";
import type { DomainError } from "../../../domain/errors.js";
import { caseFoldKey, compareCodeUnits, forEachDirectory } from "../../../domain/paths.js";
import {
  attributesPath,
  mergePolicyOf,
  parseAttributes,
  type MergePolicy,
  type MergeRules,
} from "../../../domain/attributes.js";
import { mergeText, mergeUnion } from "../../../domain/textMerge.js";
import type { Tree } from "../../../domain/tree.js";
import type {
  Expectation,
  FsError,
  GuardedOutcome,
  PathInfo,
  RootedTree,
} from "../../../ports/FileSystem.js";
import type { BlobSource } from "./blobs.js";
import { workingCopyFailure } from "../shared/failures.js";
import { forEachPooled } from "../shared/pooled.js";
import type { StatStamp } from "./privateState.js";
import {
  noteIo,
  stampsToCache,
  unsettledStamp,
  type Scan,
  type ScannedFile,
} from "./workingCopy.js";
import { putBeside } from "./putBeside.js";

/** What rewriting the working copy changed. */
export interface Materialised {
  /**
   * The stat cache's entries for every file now in the working copy: the scan's stamps
   * of the files this call left as they were (workingCopy.ts `stampsToCache`), and an
   * entry that never matches for a file it wrote or read again (a stamp taken just after
   * a write is racy by definition; recorded with the time the cache is written, it would
   * look settled to every later scan, and a save that landed in its clock tick would
   * never be read: published by no commit, and overwritten by the next pull that
   * changes the note).
   */
  readonly stamps: ReadonlyMap<string, StatStamp>;
  /** Paths whose content changed (written or removed), sorted. */
  readonly changed: ReadonlyArray<string>;
  /**
   * Paths left as found because they changed during the call and could not be merged
   * again cleanly (a newer edit the next call merges), sorted. Their baseline must stay
   * what it was.
   */
  readonly held: ReadonlyArray<string>;
}

/** How many times one file saved during the call is merged again before it is held. */
const maxRemerges = 3;

const parentOf = (path: string): string | undefined => {
  const at = path.lastIndexOf("/");
  return at < 0 ? undefined : path.slice(0, at);
};

/** What the scan saw at a path, as a guard; content is compared only where times cannot tell. */
const expectationOf = (file: ScannedFile | undefined): Expectation =>
  file === undefined
    ? { _tag: "Absent" }
    : {
        _tag: "File",
        ino: file.stamp.ino,
        size: file.stamp.size,
        mtimeMs: file.stamp.mtimeMs,
        ...(file.racy ? { sameContent: (bytes: Uint8Array) => contentId(bytes) === file.id } : {}),
      };

/** A file just read or written: always compared by content too (its time is recent). */
const expectationOfBytes = (info: PathInfo, id: string): Expectation => ({
  _tag: "File",
  ino: info.ino,
  size: info.size,
  mtimeMs: info.mtimeMs,
  sameContent: (bytes: Uint8Array) => contentId(bytes) === id,
});

/**
 * Where one path's rewrite stands: done, or held. A done path carries no stamp for the
 * stat cache: one taken as the file was written or read again is racy (see
 * {@link Materialised.stamps}).
 */
type Settled = { readonly _tag: "Done" } | { readonly _tag: "Held" };

const done: Settled = { _tag: "Done" };
const held: Settled = { _tag: "Held" };

/** Directories ordered so that every one comes before its parent (for removing them). */
export const deepestFirst = (directories: Iterable<string>): ReadonlyArray<string> =>
  [...directories].sort(
    (a, b) => b.split("/").length - a.split("/").length || compareCodeUnits(a, b),
  );

/**
 * Frees `path` for a note when what stands there is a real directory holding nothing but
 * directories (a folder a person made, or one a note directory left empty): they are
 * removed deepest first, each only while it is empty, as git replaces an empty directory
 * with a file it checks out. An empty directory holds nothing to lose; one that holds
 * anything else (a file, a link, a name that is not UTF-8, something saved meanwhile) is
 * left whole. `true` when nothing stands at `path` afterwards.
 */
const clearEmptyDirectories = (tree: RootedTree, path: string): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    const standing = yield* tree.info(path);
    if (Option.isNone(standing)) return true;
    if (standing.value.kind !== "directory") return false;
    const below = yield* tree.subtree(path);
    for (const directory of deepestFirst(yield* below.listDirectories()))
      yield* below.removeEmptyDirectory(directory);
    yield* tree.removeEmptyDirectory(path);
    return Option.isNone(yield* tree.info(path));
  }).pipe(
    // Moved or swapped meanwhile (someone is working there), or not removable (a chain
    // too deep to name, no permission): left as it is, and the note held — never a
    // failure of the call, which would leave the copy to be recovered, again and again.
    Effect.orElseSucceed(() => false),
  );

/** What the path holds now: `undefined` for nothing, `null` for something that is no note. */
type Found = { readonly bytes: Uint8Array; readonly info: PathInfo } | undefined | null;

const reread = (tree: RootedTree, path: string): Effect.Effect<Found, DomainError> =>
  tree.readFile(path, maxFileBytes).pipe(
    Effect.map((read): Found => read),
    Effect.catchTag("FsError", (error: FsError) =>
      error.reason === "NotFound"
        ? Effect.succeed(undefined)
        : error.reason === "NotRegularFile" ||
            error.reason === "IsADirectory" ||
            error.reason === "NotADirectory" ||
            error.reason === "Moved" ||
            // Grown past any note's size while the call ran: someone's, left as it is.
            error.reason === "TooLarge"
          ? Effect.succeed(null)
          : Effect.fail(workingCopyFailure(error, "reading the working copy")),
    ),
  );

/** Whether `bytes` begins with `prefix`. */
const startsWith = (bytes: Uint8Array, prefix: Uint8Array): boolean =>
  bytes.length >= prefix.length && Buffer.compare(bytes.subarray(0, prefix.length), prefix) === 0;

const concatBytes = (a: Uint8Array, b: Uint8Array): Uint8Array => Buffer.concat([a, b]);

const textOf = (bytes: Uint8Array): string | undefined => {
  const decoded = decodeText(bytes);
  return "text" in decoded ? decoded.text : undefined;
};

/**
 * The newer edit `newer` merged onto what the rewrite meant to write (`wanted`, absent
 * for a removal), both from what the scan saw (`scanned`, absent when the scan saw
 * nothing). `undefined` when it does not merge cleanly as text; an absent result means the
 * file is to be removed.
 */
const mergeNewer = (
  scanned: Uint8Array | undefined,
  newer: Uint8Array,
  wanted: Uint8Array | undefined,
  policy: MergePolicy,
): { readonly bytes: Uint8Array | undefined } | undefined => {
  const newerId = contentId(newer);
  if (wanted !== undefined && contentId(wanted) === newerId) return { bytes: wanted };
  if (scanned === undefined) return undefined;
  const scannedId = contentId(scanned);
  // Saved again unchanged: the rewrite's own change applies as it is.
  if (newerId === scannedId) return { bytes: wanted };
  if (wanted === undefined) return undefined;
  const [base, local, remote] = [textOf(scanned), textOf(newer), textOf(wanted)];
  if (base === undefined || local === undefined || remote === undefined) return undefined;
  if (policy === "union") return { bytes: encodeText(mergeUnion(base, local, remote)) };
  const result = mergeText(base, local, remote);
  return result.conflicts.length > 0 ? undefined : { bytes: encodeText(result.text) };
};

/**
 * The writes that go before the removals (`early`: a note moving to a new name, that is
 * a new path whose content is that of a removed file, where no removed path stands in
 * the way, compared case-folded: not a removed name, not below one, not a directory
 * above one, not below a directory above one spelt differently, which must be emptied
 * and removed first) and the rest (`late`), each in the given order. Every other write
 * stays after the removals, which free the space and the names it may need.
 */
export const writesAroundRemovals = (
  writes: ReadonlyArray<string>,
  removals: ReadonlyArray<string>,
  before: ReadonlyMap<string, { readonly id: string }>,
  target: Tree,
): { readonly early: ReadonlyArray<string>; readonly late: ReadonlyArray<string> } => {
  if (removals.length === 0) return { early: [], late: writes };
  const moving = new Set<string>();
  for (const path of removals) {
    const id = before.get(path)?.id;
    if (id !== undefined) moving.add(id);
  }
  const moved = writes.filter((path) => {
    const id = target.get(path);
    return !before.has(path) && id !== undefined && moving.has(id);
  });
  // Nothing moves (most rewrites): no name is folded.
  if (moved.length === 0) return { early: [], late: writes };
  const removed = new Set<string>();
  // Folded directory above a removal → its spellings.
  const aboveRemoved = new Map<string, Set<string>>();
  for (const path of removals) {
    const folded = caseFoldKey(path);
    removed.add(folded);
    forEachDirectory(path, folded, (spelling, directory) => {
      const spellings = aboveRemoved.get(directory) ?? new Set<string>();
      spellings.add(spelling);
      aboveRemoved.set(directory, spellings);
    });
  }
  const inTheWay = (path: string): boolean => {
    const folded = caseFoldKey(path);
    if (removed.has(folded) || aboveRemoved.has(folded)) return true;
    let blocking = false;
    forEachDirectory(path, folded, (spelling, directory) => {
      const spellings = aboveRemoved.get(directory);
      if (removed.has(directory) || (spellings !== undefined && !spellings.has(spelling)))
        blocking = true;
    });
    return blocking;
  };
  const early: string[] = [];
  const late: string[] = [];
  const goFirst = new Set(moved.filter((path) => !inTheWay(path)));
  for (const path of writes) (goFirst.has(path) ? early : late).push(path);
  return { early, late };
};

/**
 * Rewrites the working copy open as `tree` from `before` (its scan) to `target` (path →
 * id): writes each note moving to a new name (moved aside) there, then removes files,
 * then empty directories they leave, then writes each other changed file, each
 * atomically (mode 0644, parents 0755). Only `changed` is touched, each file only if
 * it still is what the scan saw (see the module comment); a file saved meanwhile is merged
 * again under `rules` (restore and revert: as text). Fails only when the file system
 * fails otherwise (ENGINE_FAILED/LOCAL_IO). `wrote` hears of each path as it is done
 * (written or removed): a caller whose rewrite fails part way can say which ones were.
 */
export const materialise = (
  tree: RootedTree,
  before: Scan,
  target: Tree,
  changed: ReadonlyArray<string>,
  blobs: BlobSource,
  rules: MergeRules = "attributes",
  wrote: (path: string) => void = () => {},
): Effect.Effect<Materialised, DomainError> =>
  Effect.gen(function* () {
    const io = (doing: string) => Effect.mapError((e: FsError) => workingCopyFailure(e, doing));
    // The merge policy of a file merged again is that of the tree being written (its
    // `.quireattributes`, as the merge that made it decided): read once, when first needed.
    let policies: ((path: string) => MergePolicy) | undefined;
    const policyOf = (path: string): Effect.Effect<MergePolicy> =>
      Effect.gen(function* () {
        // The attributes file itself always merges as text (as in the merge run).
        if (path === attributesPath || rules === "text") return "text";
        if (policies === undefined) {
          const id = target.get(attributesPath);
          const bytes = id === undefined ? undefined : yield* Effect.option(blobs.load(id));
          const text =
            bytes === undefined || bytes._tag === "None" ? undefined : textOf(bytes.value);
          const attributes = parseAttributes(text ?? "");
          policies = (file) => mergePolicyOf(attributes, file);
        }
        return policies(path);
      });
    const scannedBytes = (path: string): Effect.Effect<Uint8Array | undefined> => {
      const file = before.get(path);
      return file === undefined
        ? Effect.succeed(undefined)
        : blobs.load(file.id).pipe(Effect.orElseSucceed(() => undefined));
    };

    /**
     * After putting `bytes` back at `path` as a person left them: whatever of them, or of
     * the file it replaced, that write did not leave at the name goes beside it.
     */
    const keepWhatWasNotPut = (
      path: string,
      bytes: Uint8Array,
      outcome: GuardedOutcome,
    ): Effect.Effect<void> => {
      switch (outcome._tag) {
        case "Done":
          return Effect.void;
        case "Changed":
          return putBeside(tree, path, bytes);
        case "Overtaken":
          return putBeside(tree, path, outcome.bytes);
        case "Displaced":
          return putBeside(tree, path, bytes).pipe(
            Effect.zipRight(putBeside(tree, path, outcome.bytes)),
          );
      }
    };

    /**
     * Applies one guarded change, and after a newer edit merges it in and tries again,
     * up to {@link maxRemerges} times; the path is held when that cannot be done.
     */
    const settlePath = (
      path: string,
      wanted: { readonly bytes: Uint8Array; readonly id: string } | undefined,
      start?: {
        readonly expected: Expectation;
        readonly goal: { readonly bytes: Uint8Array; readonly id: string } | undefined;
      },
    ): Effect.Effect<Settled, DomainError> =>
      Effect.gen(function* () {
        let expected = start?.expected ?? expectationOf(before.get(path));
        let goal = start === undefined ? wanted : start.goal;
        // What the file held when a newcomer took its name while it was set aside
        // (`Displaced`): kept in every later merge until a write of ours that holds it
        // is done, and put back beside the newcomer if the path ends up held.
        let displaced: Uint8Array | undefined;
        const withDisplaced = (found: Uint8Array): Uint8Array =>
          displaced === undefined || startsWith(found, displaced)
            ? found
            : concatBytes(displaced, found);
        const keepDisplaced = Effect.gen(function* () {
          // A few attempts: the displaced content exists only here now.
          for (let attempt = 0; displaced !== undefined && attempt < 8; attempt++) {
            const found = yield* reread(tree, path);
            if (found === null) break;
            const bytes = found === undefined ? displaced : withDisplaced(found.bytes);
            const where: Expectation =
              found === undefined
                ? { _tag: "Absent" }
                : expectationOfBytes(found.info, contentId(found.bytes));
            const outcome = yield* tree
              .replaceFile(path, bytes, where, 0o644)
              .pipe(io("writing a file"));
            if (outcome._tag === "Done") return held;
            if (outcome._tag === "Displaced") displaced = withDisplaced(outcome.bytes);
            if (outcome._tag === "Overtaken") {
              // Ours (holding the displaced content) is in place; what reached the file it
              // replaced goes after it in the next attempt.
              displaced = bytes;
              const late = outcome.bytes;
              const extra = startsWith(late, found?.bytes ?? new Uint8Array())
                ? late.subarray(found?.bytes.length ?? 0)
                : late;
              if (extra.length === 0) return held;
              displaced = concatBytes(bytes, extra);
            }
          }
          if (displaced === undefined) return held;
          // Its name keeps changing (or holds a directory now): the displaced note goes
          // beside it under a new name, for the person to see and the next commit to
          // publish — never lost.
          yield* putBeside(tree, path, displaced);
          return held;
        });
        // A directory standing where the note goes is cleared once, if it is empty.
        let cleared = false;
        for (let round = 0; round <= maxRemerges; round++) {
          const outcome: GuardedOutcome = yield* (
            goal === undefined
              ? tree.removeFile(path, expected)
              : tree.replaceFile(path, goal.bytes, expected, 0o644)
          ).pipe(io(goal === undefined ? "removing a file" : "writing a file"));
          if (outcome._tag === "Done") return done;
          // Displaced again (a later round's expected file is the newcomer): both are kept.
          if (outcome._tag === "Displaced") displaced = withDisplaced(outcome.bytes);
          if (round === maxRemerges) break;
          const scanned = yield* scannedBytes(path);
          if (outcome._tag === "Overtaken") {
            // Ours is in place, but an edit reached the file it replaced meanwhile. A
            // displaced note goes ahead of that edit (the file it replaced was the
            // newcomer); ours already holds it, so it is no longer kept apart after this.
            const newer = withDisplaced(outcome.bytes);
            displaced = undefined;
            const merged = mergeNewer(scanned, newer, wanted?.bytes, yield* policyOf(path));
            const mine: Expectation = Option.match(outcome.info, {
              onNone: () => ({ _tag: "Absent" }),
              onSome: (info) => expectationOfBytes(info, goal?.id ?? ""),
            });
            if (merged === undefined) {
              // Put the edit back as the person left it.
              const outcome = yield* tree
                .replaceFile(path, newer, mine, 0o644)
                .pipe(io("writing a file"));
              yield* keepWhatWasNotPut(path, newer, outcome);
              return held;
            }
            expected = mine;
            goal =
              merged.bytes === undefined
                ? undefined
                : { bytes: merged.bytes, id: contentId(merged.bytes) };
            continue;
          }
          const found = yield* reread(tree, path);
          if (found === null && goal !== undefined && !cleared && displaced === undefined) {
            cleared = true;
            if (yield* clearEmptyDirectories(tree, path)) {
              expected = { _tag: "Absent" };
              continue;
            }
          }
          if (found === null) return yield* keepDisplaced;
          if (found === undefined) {
            if (displaced !== undefined) {
              // The newcomer is gone again: the displaced file's place is free.
              expected = { _tag: "Absent" };
              const merged = mergeNewer(scanned, displaced, wanted?.bytes, yield* policyOf(path));
              const bytes = merged === undefined ? displaced : merged.bytes;
              goal = bytes === undefined ? undefined : { bytes, id: contentId(bytes) };
              if (goal === undefined) return done;
              continue;
            }
            // Deleted during the call: a removal is done; anything else waits for a merge.
            if (wanted === undefined) return done;
            return held;
          }
          const newer = withDisplaced(found.bytes);
          const merged = mergeNewer(scanned, newer, wanted?.bytes, yield* policyOf(path));
          if (merged === undefined) return yield* keepDisplaced;
          const foundId = contentId(found.bytes);
          if (merged.bytes !== undefined && contentId(merged.bytes) === foundId) return done;
          expected = expectationOfBytes(found.info, foundId);
          goal =
            merged.bytes === undefined
              ? undefined
              : { bytes: merged.bytes, id: contentId(merged.bytes) };
        }
        return yield* keepDisplaced;
      });

    const removals = changed.filter((path) => before.has(path) && !target.has(path));
    const writes = changed.filter((path) => target.has(path));
    // A note moved aside (`~local`: a case collision, a file where the notebook has a
    // directory) is a removal of its old name and a write of its new one. The write goes
    // first, so that a process killed in between leaves the note under both names rather
    // than under none: a first pull has no intent to bring it back from.
    const { early, late: rest } = writesAroundRemovals(writes, removals, before, target);
    const stamps = stampsToCache(before, target);
    const heldPaths: string[] = [];
    const record = (path: string, settled: Settled): void => {
      if (settled._tag === "Held") return void heldPaths.push(path);
      wrote(path);
      // Written (or read again) just now: its path is kept, its stamp is not trusted.
      const id = target.get(path);
      if (id !== undefined) stamps.set(path, unsettledStamp(id));
    };

    // A directory that cannot be made (a file or symlink saved where it must go, or a
    // directory moved away meanwhile) holds every write below it.
    const blocked = new Set<string>();
    const isBlocked = (path: string): boolean => {
      for (let parent = parentOf(path); parent !== undefined; parent = parentOf(parent))
        if (blocked.has(parent)) return true;
      return false;
    };
    const makeParents = (paths: ReadonlyArray<string>): Effect.Effect<void, DomainError> =>
      Effect.gen(function* () {
        const parents = new Set<string>();
        for (const path of paths) {
          const parent = parentOf(path);
          if (parent !== undefined) parents.add(parent);
        }
        for (const parent of [...parents].sort(compareCodeUnits)) {
          const made = yield* Effect.either(tree.makeDirectories(parent, 0o755));
          if (made._tag === "Right") continue;
          if (made.left.reason !== "NotADirectory" && made.left.reason !== "Moved")
            return yield* Effect.fail(workingCopyFailure(made.left, "creating a directory"));
          blocked.add(parent);
        }
      });
    // One short pipeline per file, without a generator on the common path: a pull of
    // 10,000 files spent a fifth of this loop's CPU in the per-file effect machinery.
    const writeOne = (path: string): Effect.Effect<void, DomainError> => {
      if (isBlocked(path)) return Effect.sync(() => heldPaths.push(path));
      const id = target.get(path) ?? "";
      const inMemory = blobs.inMemory(id);
      return (inMemory === undefined ? blobs.load(id) : Effect.succeed(inMemory)).pipe(
        Effect.flatMap((bytes) => settlePath(path, { bytes, id })),
        Effect.map((settled) => record(path, settled)),
      );
    };
    const writeAll = (paths: ReadonlyArray<string>): Effect.Effect<void, DomainError> =>
      paths.length === 0
        ? Effect.void
        : makeParents(paths).pipe(Effect.zipRight(forEachPooled(paths, writeOne, noteIo)));

    yield* writeAll(early);
    // A note whose new name could not be written (taken meanwhile, or its folder) keeps
    // its old one: its content is nowhere else.
    const unmoved = new Set<string>();
    if (heldPaths.length > 0) {
      const held = new Set(heldPaths);
      for (const path of early) {
        const id = target.get(path);
        if (held.has(path) && id !== undefined) unmoved.add(id);
      }
    }
    const removing =
      unmoved.size === 0
        ? removals
        : removals.filter((path) => {
            const id = before.get(path)?.id;
            if (id === undefined || !unmoved.has(id)) return true;
            heldPaths.push(path);
            return false;
          });
    yield* forEachPooled(
      removing,
      (path) => settlePath(path, undefined).pipe(Effect.map((settled) => record(path, settled))),
      noteIo,
    );
    const emptied = new Set<string>();
    for (const path of removing) {
      for (let parent = parentOf(path); parent !== undefined; parent = parentOf(parent))
        emptied.add(parent);
    }
    // One an early write filled is not empty, and stays.
    for (const directory of deepestFirst(emptied))
      yield* tree.removeEmptyDirectory(directory).pipe(io("removing an empty directory"));
    yield* writeAll(rest);

    // A process that had a replaced or removed file open (an append preempted between
    // its open and its write) may have written into it after its last check: merged in
    // as an overtaking edit is, onto whatever the name holds now.
    const bringBack = (path: string, late: Uint8Array): Effect.Effect<Settled, DomainError> =>
      Effect.gen(function* () {
        // Its directory may have gone with the rewrite's removals (a note removed from a
        // folder it emptied): made again, or the write below could not put it back.
        const parent = parentOf(path);
        if (parent !== undefined) yield* Effect.either(tree.makeDirectories(parent, 0o755));
        const found = yield* reread(tree, path);
        if (found === null) {
          // A directory (or something that is no note) has the name now.
          yield* putBeside(tree, path, late);
          return held;
        }
        const here: Expectation =
          found === undefined
            ? { _tag: "Absent" }
            : expectationOfBytes(found.info, contentId(found.bytes));
        const merged = mergeNewer(
          yield* scannedBytes(path),
          late,
          found?.bytes,
          yield* policyOf(path),
        );
        if (merged === undefined) {
          // As the person left it, to be merged by the next call (as after `Overtaken`).
          const outcome = yield* tree
            .replaceFile(path, late, here, 0o644)
            .pipe(io("writing a file"));
          yield* keepWhatWasNotPut(path, late, outcome);
          return held;
        }
        const id = target.get(path);
        const wanted = id === undefined ? undefined : { bytes: yield* blobs.load(id), id };
        const goal =
          merged.bytes === undefined
            ? undefined
            : { bytes: merged.bytes, id: contentId(merged.bytes) };
        return yield* settlePath(path, wanted, { expected: here, goal });
      });
    const late = yield* tree.lateWrites().pipe(io("checking replaced files"));
    for (const { path, bytes } of late) {
      const settled = yield* bringBack(path, bytes);
      if (settled._tag === "Held" && heldPaths.includes(path)) continue;
      stamps.delete(path);
      record(path, settled);
    }
    heldPaths.sort(compareCodeUnits);
    if (heldPaths.length > 0)
      yield* Effect.logWarning(
        "files changed during the call were left as they were saved; the next call merges them",
      ).pipe(Effect.annotateLogs("files", heldPaths.join(",")));
    return { stamps, changed, held: heldPaths };
  });
