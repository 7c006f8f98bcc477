/**
 * Scanning the working copy L (SPEC §4, §6): listing and validating its files through
 * the call's rooted tree, and tidying what a killed process of ours left behind.
 */
import { Clock, Effect, Either } from "effect";
import { contentId, decodeText, maxFileBytes } from "../../../domain/content.js";
import {
  domainError,
  type DomainError,
  type FileIssue,
  type FileReason,
} from "../../../domain/errors.js";
import {
  compareCodeUnits,
  findCaseCollisions,
  nameOf,
  normalizeNotebookPath,
} from "../../../domain/paths.js";
import {
  type DeepEntry,
  type PathInfo,
  type RootedTree,
  type WalkEntry,
} from "../../../ports/FileSystem.js";
import type { BlobSource } from "./blobs.js";
import { forEachPooled, type PoolShape } from "../shared/pooled.js";
import { workingCopyFailure } from "../shared/failures.js";
import type { StatStamp } from "./privateState.js";
import { diffTrees } from "../../../domain/treeDiff.js";
import { idsOf } from "../../../domain/tree.js";
import { isEditorWorkingFile } from "../../../domain/editorFiles.js";
import { maxScans, movedOn, saveSettleMs, type SaveSign } from "./savesInFlight.js";
import {
  belowSetAside,
  isLeftoverTemp,
  isSetAside,
  keepLateWrites,
  noOwnVersions,
  tidySetAside,
  type OwnVersions,
} from "./leftovers.js";

/**
 * Reading or writing the notes of a working copy: a note is small, so one worker does a
 * few of them faster than a fiber each would (shared/pooled.ts); many still overlap, in up to
 * 16 workers (a pull's thousands of files when the journal is busy and writes wait).
 */
export const noteIo: PoolShape = { workers: 16, itemsPerWorker: 8 };

/** How many times a scan tidies set-aside files, walking again after each (leftovers.ts). */
const tidyPasses = 3;

/** Directory names never treated as notebook state (a user's own version control). */
const ignoredDirectories: ReadonlySet<string> = new Set([".git"]);

/**
 * The paths the notebook already holds for a copy (its merge base): an editor's working
 * file at one of them is scanned as a note, since skipping it would read as its deletion.
 */
export interface Tracked {
  readonly has: (path: string) => boolean;
}

/** One file of a scanned working copy. */
export interface ScannedFile {
  readonly id: string;
  readonly stamp: StatStamp;
  /**
   * Whether the file was modified so close to the scan that a later write could leave
   * its size and times unchanged: a guard must then compare its content too.
   */
  readonly racy: boolean;
}

/** A scanned, valid working copy: notebook path → file. */
export type Scan = ReadonlyMap<string, ScannedFile>;

const stampOf = (
  info: Pick<PathInfo, "size" | "mtimeMs" | "ctimeMs" | "ino">,
  id: string,
): StatStamp => ({
  size: info.size,
  mtimeMs: info.mtimeMs,
  ctimeMs: info.ctimeMs,
  ino: info.ino,
  id,
});

/**
 * How close to a moment a modification may be for its time not to tell it from a later
 * one: whole seconds on file systems that keep seconds only, a clock tick (a few ms) on
 * the others, with room to spare (as git's "racy" check).
 */
const granularityOf = (mtimeMs: number): number => (mtimeMs % 1000 === 0 ? 2000 : 20);

/**
 * How far past a scan's start a file's modification time may be and still be a save in
 * progress: a scan takes seconds at most; a later time is a clock that runs ahead.
 */
const clockSkewMs = 60_000;

/** Whether a file modified at `mtimeMs` is "racy" for something recorded at `atMs`. */
const isRacy = (mtimeMs: number, atMs: number): boolean => mtimeMs + granularityOf(mtimeMs) >= atMs;

/**
 * Whether a cached stamp can be trusted for a file now showing `entry`: identical
 * size, times and inode, and the modification not within the timestamp granularity
 * of when the cache was recorded (the "racy" window, as git does).
 */
const stampMatches = (
  cached: StatStamp | undefined,
  entry: WalkEntry,
  recordedAtMs: number,
): cached is StatStamp => {
  if (cached === undefined) return false;
  if (
    cached.size !== entry.size ||
    cached.mtimeMs !== entry.mtimeMs ||
    cached.ctimeMs !== entry.ctimeMs ||
    cached.ino !== entry.ino
  ) {
    return false;
  }
  return !isRacy(entry.mtimeMs, recordedAtMs);
};

/**
 * A file's change time no file has (the kernel sets it to the current time): a stamp
 * holding it never matches, so the file is read again by the next scan, while its path
 * stays in the cache (the next scan tells a note deleted since from one never seen by
 * the paths the cache holds: `goneSince`, a save caught between its delete and write).
 */
const unsettledCtimeMs = -1;

/**
 * A stat-cache entry for a file whose stamp may not be trusted (see {@link stampsToCache}):
 * it keeps the path and never matches.
 */
export const unsettledStamp = (id: string): StatStamp => ({
  size: 0,
  mtimeMs: 0,
  ctimeMs: unsettledCtimeMs,
  ino: 0,
  id,
});

/**
 * The stat cache's entries for `scan` (of the files whose content is still `target`'s,
 * when given): each file's stamp, but {@link unsettledStamp} for a file modified so close
 * to the scan that a later save could leave size, times and inode unchanged (racy). The
 * racy check of a later scan compares with the time the cache was written, after the
 * stamps were taken: a racy stamp kept would look settled then, and a save that landed
 * in its clock tick would never be read (git's racy-clean entries, kept here as entries
 * that never match).
 */
export const stampsToCache = (
  scan: Scan,
  target?: ReadonlyMap<string, string>,
): Map<string, StatStamp> => {
  const stamps = new Map<string, StatStamp>();
  for (const [path, file] of scan)
    if (target === undefined || target.get(path) === file.id)
      stamps.set(path, file.racy ? unsettledStamp(file.id) : file.stamp);
  return stamps;
};

const issue = (path: string, reason: FileReason): FileIssue => ({ path, reason, ranges: [] });

/**
 * How a report names an entry found below a directory too deep to name (the walk builds
 * no path there: ports/FileSystem.ts `nameablePathBytes`): the deepest directory named on
 * the way, then `<N more directories>` for the levels left out. `<` and `>` never occur
 * in a notebook path, so the marker cannot be taken for a path of one.
 */
const deepPath = ({ directory, levels, name }: DeepEntry): string => {
  const skipped =
    levels === 0
      ? ""
      : `<${levels.toLocaleString("en-US")} more ${levels === 1 ? "directory" : "directories"}>/`;
  return `${directory === "" ? "" : `${directory}/`}${skipped}${name}`;
};

const walked = (tree: RootedTree) =>
  tree
    .walk(ignoredDirectories)
    .pipe(Effect.mapError((e) => workingCopyFailure(e, "scanning the working copy")));

/**
 * Scans and validates every file of the working copy open as `tree`. Reads only files
 * whose stat differs from `stats` (recorded at `recordedAtMs`); registers every file
 * with `blobs`. Skips editors' and desktops' working files (domain/editorFiles.ts) at
 * paths `tracked` does not hold when they are links or not notebook text. Anything that is not notebook state (symlink, special file, bad or
 * undecodable name, case collision, invalid UTF-8, U+0000, too large) fails with
 * INVALID_CONTENT naming every offending file; a FIFO is never opened. Anything below a
 * directory whose path is longer than a notebook path may be is INVALID_NAME under a
 * shortened path marked `<N more directories>`; directories alone there are ignored. Leftovers of a
 * killed process of ours are tidied first (leftovers.ts): temp files removed, set-aside
 * files put back, or removed beside their name when they hold a version `own` names.
 * A scan that catches a save between its steps (a note missing or empty, an editor's
 * backup beside it: savesInFlight.ts) is taken again once, after a short pause, the save
 * moved on — at most {@link maxScans} scans.
 */
export const scanWorkingCopy = (
  tree: RootedTree,
  stats: ReadonlyMap<string, StatStamp>,
  recordedAtMs: number,
  blobs: BlobSource,
  tracked: Tracked,
  own: OwnVersions = noOwnVersions,
): Effect.Effect<Scan, DomainError> =>
  surveyWorkingCopy(tree, stats, recordedAtMs, blobs, tracked, own).pipe(
    Effect.flatMap(({ files, issues }) =>
      issues.length === 0
        ? Effect.succeed(files)
        : Effect.fail(
            domainError({
              code: "INVALID_CONTENT",
              reason: "INVALID_FILES",
              message:
                "The working copy holds files a commit cannot take as they are (listed, each with why: not UTF-8 text, too large, a symlink, a name clash…); fix, rename or remove them, then call again.",
              files: issues,
            }),
          ),
    ),
  );

/**
 * What {@link scanWorkingCopy} finds, the files that are not notebook text reported
 * beside the valid ones (sorted by path) instead of failing the scan: for `quire status`,
 * which shows both. Fails only when the file system does (ENGINE_FAILED/LOCAL_IO).
 */
export const surveyWorkingCopy = (...scanning: Scanning): Effect.Effect<Survey, DomainError> =>
  Effect.gen(function* () {
    const [tree] = scanning;
    // A scan that caught a save between its steps is taken again once it moved on
    // (savesInFlight.ts); the last scan stands.
    for (let scans = 1; ; scans++) {
      const { files, issues, skipped, signs } = yield* surveyOnce(...scanning);
      if (signs.length === 0 || scans === maxScans) return { files, issues, skipped };
      yield* Effect.sleep(saveSettleMs);
      if (!(yield* movedOn(tree, signs))) return { files, issues, skipped };
      yield* Effect.logDebug("a save was in progress as the copy was scanned; scanning again").pipe(
        Effect.annotateLogs({ files: signs.length }),
      );
    }
  });

/**
 * What a scan reads: the tree, the stat cache and when it was recorded, where the
 * contents it reads go, what the notebook holds, and which versions of its notes quire
 * keeps (for what a killed replace set aside: leftovers.ts; none when left out).
 */
type Scanning = readonly [
  tree: RootedTree,
  stats: ReadonlyMap<string, StatStamp>,
  recordedAtMs: number,
  blobs: BlobSource,
  tracked: Tracked,
  own?: OwnVersions,
];

/** The valid files of a survey and the issues of the others. */
interface Survey {
  readonly files: Scan;
  readonly issues: ReadonlyArray<FileIssue>;
  /**
   * Editors' working files the scan skipped (links, files that are not notebook text),
   * each with the reason a commit would refuse it if it were a note, sorted by path: no
   * change and nothing a commit refuses, but there all the same — a call that would
   * write at one of these paths could not (restore and revert refuse it).
   */
  readonly skipped: ReadonlyArray<FileIssue>;
}

/** One scan of {@link surveyWorkingCopy}, with the signs of saves in flight it saw. */
const surveyOnce = (
  ...[tree, stats, recordedAtMs, blobs, tracked, own = noOwnVersions]: Scanning
): Effect.Effect<Survey & { readonly signs: ReadonlyArray<SaveSign> }, DomainError> =>
  Effect.gen(function* () {
    const startedMs = yield* Clock.currentTimeMillis;
    let listing = yield* walked(tree);
    // A set-aside file may itself have been set aside by a removal killed in turn: put
    // back in one pass, it is tidied in the next.
    let removedSetAside = false;
    for (let pass = 1; pass <= tidyPasses; pass++) {
      const tidied = yield* tidySetAside(tree, listing.entries, own);
      removedSetAside ||= tidied.removed;
      if (!tidied.walkAgain) break;
      listing = yield* walked(tree);
    }
    const issues: FileIssue[] = listing.undecodable.map((name) =>
      issue(
        name.directory === "" ? name.lossyName : `${name.directory}/${name.lossyName}`,
        "INVALID_NAME",
      ),
    );
    // Anything below a directory too deep to name is at a path longer than any note's:
    // reported as such a path is (INVALID_NAME), under a marked, shortened path, once per
    // such path. Directories alone there are no state, as empty directories never are.
    for (const path of new Set(listing.tooDeep.map(deepPath)))
      issues.push(issue(path, "INVALID_NAME"));
    const toRead: Array<{ path: string; editorFile: boolean }> = [];
    const skipped: FileIssue[] = [];
    // An editor's file not taken as a note is skipped, with the reason it is not one.
    const skipOrRefuse = (path: string, editorFile: boolean, reason: FileReason): void => {
      (editorFile ? skipped : issues).push(issue(path, reason));
    };
    const signs: SaveSign[] = [];
    const files = new Map<string, ScannedFile>();
    const litter: string[] = [];
    let newNames = 0;
    for (const entry of listing.entries) {
      if (belowSetAside(entry.relativePath)) {
        // Only the set-aside entry itself is reported, not what lies below it.
        if (isSetAside(entry.relativePath)) issues.push(issue(entry.relativePath, "INVALID_NAME"));
        continue;
      }
      if (entry.kind === "directory") continue;
      if (isLeftoverTemp(entry.relativePath)) {
        // A temp file of an atomic write that a killed process never renamed: the scan
        // runs under the copy's lock, so no write of ours is in flight; tidy it away.
        if (entry.kind === "file") litter.push(entry.relativePath);
        continue;
      }
      // An editor's swap or lock file, or a desktop's folder metadata, at a path the
      // notebook does not hold (domain/editorFiles.ts): skipped when it could not be a
      // note anyway (a link, a file that is not notebook text) — never a text file, which
      // is scanned as any note is, so that nothing a commit could publish goes unseen.
      const editorFile =
        isEditorWorkingFile(nameOf(entry.relativePath)) && !tracked.has(entry.relativePath);
      if (entry.kind === "symlink") {
        skipOrRefuse(entry.relativePath, editorFile, "SYMLINK");
        continue;
      }
      if (entry.kind !== "file") {
        issues.push(issue(entry.relativePath, "SPECIAL_FILE"));
        continue;
      }
      const cached = stats.get(entry.relativePath);
      // A path the stat cache records passed these checks when it was recorded; only
      // names new since then are validated (they are pure functions of the name).
      if (cached === undefined) {
        newNames++;
        const normalized = normalizeNotebookPath(entry.relativePath);
        if (Either.isLeft(normalized) || normalized.right !== entry.relativePath) {
          issues.push(issue(entry.relativePath, "INVALID_NAME"));
          continue;
        }
      }
      if (entry.size > maxFileBytes) {
        skipOrRefuse(entry.relativePath, editorFile, "TOO_LARGE");
        continue;
      }
      if (stampMatches(cached, entry, recordedAtMs)) {
        files.set(entry.relativePath, {
          id: cached.id,
          stamp: cached,
          racy: isRacy(entry.mtimeMs, startedMs),
        });
      } else {
        toRead.push({ path: entry.relativePath, editorFile });
      }
    }
    yield* forEachPooled(
      toRead,
      ({ path, editorFile }) =>
        tree.readFile(path, maxFileBytes).pipe(
          Effect.map(({ bytes, info }) => {
            if (bytes.length > maxFileBytes) return skipOrRefuse(path, editorFile, "TOO_LARGE");
            const decoded = decodeText(bytes);
            if ("problem" in decoded) return skipOrRefuse(path, editorFile, decoded.problem);
            const id = contentId(bytes);
            blobs.addBytes(id, bytes);
            // Modified so recently that its writer may still be at it (an in-place save
            // in chunks, caught after its first: the rest would be published as deleted).
            const racy = isRacy(info.mtimeMs, startedMs);
            // Not a file stamped far in the future (a clock ahead on a network share):
            // it would pause every scan, though nobody is writing it.
            const midSave = racy && info.mtimeMs <= startedMs + clockSkewMs;
            if (bytes.length === 0 || editorFile || midSave)
              signs.push({ _tag: "Written", path, seen: { ...info, size: bytes.length } });
            // The stamp of the very file read (its descriptor's fstat), not of the listing.
            files.set(path, {
              id,
              stamp: stampOf({ ...info, size: bytes.length }, id),
              racy,
            });
            return undefined;
          }),
          Effect.catchTag("FsError", (error) => {
            // Deleted (or its directory swapped away) while scanning: absent.
            if (error.reason === "NotFound" || error.reason === "NotADirectory") return Effect.void;
            if (error.reason === "NotRegularFile" || error.reason === "IsADirectory")
              return Effect.sync(() => issues.push(issue(path, "SPECIAL_FILE")));
            // Grown past the limit since it was listed (someone still appending to it).
            if (error.reason === "TooLarge")
              return Effect.sync(() => skipOrRefuse(path, editorFile, "TOO_LARGE"));
            return Effect.fail(workingCopyFailure(error, "reading the working copy"));
          }),
        ),
      noteIo,
    );
    yield* Effect.forEach(litter, (path) => tree.removeLeftover(path).pipe(Effect.ignore), {
      discard: true,
    });
    // The recorded names were collision-free together; only new names can collide.
    if (newNames > 0) {
      for (const group of findCaseCollisions(files.keys())) {
        for (const path of group) issues.push(issue(path, "CASE_COLLISION"));
      }
    }
    blobs.addScan(tree, files);
    // Checked as late as the scan allows: a write into a set-aside file just removed.
    if (removedSetAside) yield* keepLateWrites(tree);
    issues.sort((a, b) => compareCodeUnits(a.path, b.path));
    skipped.sort((a, b) => compareCodeUnits(a.path, b.path));
    signs.push(...goneSince(stats, tracked, files, listing.entries));
    return { files, issues, skipped, signs };
  });

/**
 * Notes the notebook holds that the last recorded scan saw (`stats`) and this one did not
 * find at all: deleted since the last call, or caught between a save's delete and its
 * write. Linear in `stats`; the listing is looked through only when there are some.
 */
const goneSince = (
  stats: ReadonlyMap<string, StatStamp>,
  tracked: Tracked,
  files: Scan,
  entries: ReadonlyArray<WalkEntry>,
): ReadonlyArray<SaveSign> => {
  const missing: string[] = [];
  for (const path of stats.keys()) if (!files.has(path) && tracked.has(path)) missing.push(path);
  if (missing.length === 0) return [];
  // A path listed but refused (a symlink now, say) is not gone: the scan reports it.
  const listed = new Set(entries.map((entry) => entry.relativePath));
  return missing.filter((path) => !listed.has(path)).map((path) => ({ _tag: "Gone", path }));
};

/** Paths (notebook form) whose content differs between `before` and `target`. */
export const changedPaths = (
  before: Scan,
  target: ReadonlyMap<string, string>,
): ReadonlyArray<string> => diffTrees(idsOf(before), target);
