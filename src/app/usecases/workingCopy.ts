/**
 * The working copy L (SPEC §4, §6): resolving the caller's path, scanning and
 * validating its files, and rewriting it atomically per file.
 */
import { isAbsolute, join, resolve, sep } from "node:path";
import { Effect, Either, Option } from "effect";
import { contentId, decodeText } from "../../domain/content.js";
import {
  domainError,
  type DomainError,
  type FileIssue,
  type FileReason,
} from "../../domain/errors.js";
import {
  compareCodeUnits,
  findCaseCollisions,
  normalizeNotebookPath,
  utf8Length,
} from "../../domain/paths.js";
import type { FileSystemService, PathInfo, WalkEntry } from "../../ports/FileSystem.js";
import type { BlobSource } from "./blobs.js";
import { forEachPooled, type PoolShape } from "./pooled.js";
import { localFailure } from "./failures.js";
import type { StatStamp } from "./privateState.js";
import { diffTrees } from "../../domain/treeDiff.js";
import { idsOf } from "../../domain/tree.js";

/** The largest file a notebook accepts (TOO_LARGE beyond). */
export const maxFileBytes = 32 * 1024 * 1024;

/**
 * Reading or writing the notes of a working copy: a note is small, so one worker does a
 * few of them faster than a fiber each would (pooled.ts); many still overlap, in up to
 * 16 workers (a pull's thousands of files when the journal is busy and writes wait).
 */
const noteIo: PoolShape = { workers: 16, itemsPerWorker: 8 };

/** Directory names never treated as notebook state (a user's own version control). */
const ignoredDirectories: ReadonlySet<string> = new Set([".git"]);

/** Temp files of an interrupted atomic write (ours): transient, never notebook state. */
const atomicTempFile = /(^|\/)\.[^/]*\.quire-[0-9a-z]+\.tmp$/;

/** The settings path resolution needs. */
export interface PathSettings {
  readonly workspaceRoot: string;
  readonly notebookDirectory: string;
  readonly homeDirectory: string;
  /** The private root: no working copy may overlap it. */
  readonly privateRoot: string;
}

const invalidPath = (
  reason:
    | "PATH_OUTSIDE_ROOT"
    | "PATH_NOT_ABSOLUTE"
    | "PATH_TOO_LONG"
    | "PATH_NOT_DIRECTORY"
    | "INVALID_ARGUMENT",
  message: string,
): DomainError => domainError({ code: "INVALID_REQUEST", reason, message });

const isAtOrBelow = (path: string, root: string): boolean =>
  path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);

/**
 * Resolves a caller's raw path (omitted/empty = the notebook directory; `~/` = home)
 * to the canonical absolute directory of the working copy: absolute, at most 4,096
 * bytes, at or below the workspace root also after resolving symlinks. With `create`
 * a missing directory is created (pull); without it, a missing one is returned as is.
 */
export const resolveWorkingCopy = (
  fs: FileSystemService,
  settings: PathSettings,
  raw: string | undefined,
  create: boolean,
): Effect.Effect<{ readonly path: string; readonly exists: boolean }, DomainError> =>
  Effect.gen(function* () {
    let requested = raw === undefined || raw === "" ? settings.notebookDirectory : raw;
    if (requested.includes("\u0000"))
      return yield* Effect.fail(invalidPath("INVALID_ARGUMENT", "The path contains U+0000."));
    if (requested === "~") requested = settings.homeDirectory;
    else if (requested.startsWith("~/"))
      requested = join(settings.homeDirectory, requested.slice(2));
    if (utf8Length(requested) > 4096) {
      return yield* Effect.fail(
        invalidPath("PATH_TOO_LONG", "The path is longer than 4,096 UTF-8 bytes."),
      );
    }
    if (!isAbsolute(requested)) {
      return yield* Effect.fail(
        invalidPath("PATH_NOT_ABSOLUTE", "The path must be absolute (or start with ~/)."),
      );
    }
    const lexical = resolve(requested);
    if (!isAtOrBelow(lexical, settings.workspaceRoot)) {
      return yield* Effect.fail(
        invalidPath("PATH_OUTSIDE_ROOT", "The path is outside the workspace root."),
      );
    }
    let info = yield* fs
      .info(lexical)
      .pipe(Effect.mapError((e) => localFailure(e, "resolving the path")));
    if (Option.isNone(info) && create) {
      yield* fs
        .makeDirectory(lexical, 0o755)
        .pipe(Effect.mapError((e) => localFailure(e, "creating the working copy")));
      info = yield* fs
        .info(lexical)
        .pipe(Effect.mapError((e) => localFailure(e, "resolving the path")));
    }
    if (Option.isNone(info)) return { path: lexical, exists: false };
    const canonical = yield* fs
      .realPath(lexical)
      .pipe(Effect.mapError((e) => localFailure(e, "resolving the path")));
    const canonicalRoot = yield* fs
      .realPath(settings.workspaceRoot)
      .pipe(Effect.mapError((e) => localFailure(e, "resolving the workspace root")));
    if (!isAtOrBelow(canonical, canonicalRoot)) {
      return yield* Effect.fail(
        invalidPath(
          "PATH_OUTSIDE_ROOT",
          "The path leads outside the workspace root through a symlink.",
        ),
      );
    }
    const privateRoot = yield* fs
      .realPath(settings.privateRoot)
      .pipe(
        Effect.catchTag("FsError", (error) =>
          error.reason === "NotFound"
            ? Effect.succeed(resolve(settings.privateRoot))
            : Effect.fail(localFailure(error, "resolving the private root")),
        ),
      );
    if (isAtOrBelow(privateRoot, canonical) || isAtOrBelow(canonical, privateRoot)) {
      return yield* Effect.fail(
        invalidPath("PATH_OUTSIDE_ROOT", "The path overlaps the server's private state."),
      );
    }
    const target = yield* fs
      .info(canonical)
      .pipe(Effect.mapError((e) => localFailure(e, "resolving the path")));
    if (Option.isNone(target) || target.value.kind !== "directory") {
      return yield* Effect.fail(invalidPath("PATH_NOT_DIRECTORY", "The path is not a directory."));
    }
    return { path: canonical, exists: true };
  });

/** One file of a scanned working copy. */
export interface ScannedFile {
  readonly id: string;
  readonly stamp: StatStamp;
}

/** A scanned, valid working copy: notebook path → file. */
export type Scan = ReadonlyMap<string, ScannedFile>;

/** The host path of a notebook path inside `dir`. */
export const hostPath = (dir: string, notebookPath: string): string =>
  join(dir, ...notebookPath.split("/"));

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
  const granularity = entry.mtimeMs % 1000 === 0 ? 2000 : 20;
  return entry.mtimeMs + granularity < recordedAtMs;
};

const issue = (path: string, reason: FileReason): FileIssue => ({ path, reason, ranges: [] });

/**
 * Scans and validates every file of the working copy `dir`. Reads only files whose
 * stat differs from `stats` (recorded at `recordedAtMs`); registers every file with
 * `blobs`. Anything that is not notebook state (symlink, special file, bad name,
 * case collision, invalid UTF-8, U+0000, too large) fails with INVALID_CONTENT naming
 * every offending file; a FIFO is never opened.
 */
export const scanWorkingCopy = (
  fs: FileSystemService,
  dir: string,
  stats: ReadonlyMap<string, StatStamp>,
  recordedAtMs: number,
  blobs: BlobSource,
): Effect.Effect<Scan, DomainError> =>
  Effect.gen(function* () {
    const entries = yield* fs
      .walk(dir, ignoredDirectories)
      .pipe(Effect.mapError((e) => localFailure(e, "scanning the working copy")));
    const issues: FileIssue[] = [];
    const toRead: Array<{ path: string; entry: WalkEntry }> = [];
    const files = new Map<string, ScannedFile>();
    const litter: string[] = [];
    let newNames = 0;
    for (const entry of entries) {
      if (entry.kind === "directory") continue;
      if (atomicTempFile.test(entry.relativePath)) {
        // A temp file of an atomic write that a killed process never renamed: the scan
        // runs under the copy's lock, so no write of ours is in flight; tidy it away.
        if (entry.kind === "file") litter.push(entry.relativePath);
        continue;
      }
      if (entry.kind === "symlink") {
        issues.push(issue(entry.relativePath, "SYMLINK"));
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
        issues.push(issue(entry.relativePath, "TOO_LARGE"));
        continue;
      }
      if (stampMatches(cached, entry, recordedAtMs)) {
        files.set(entry.relativePath, { id: cached.id, stamp: cached });
      } else {
        toRead.push({ path: entry.relativePath, entry });
      }
    }
    yield* forEachPooled(
      toRead,
      ({ path, entry }) =>
        fs.readFile(hostPath(dir, path)).pipe(
          Effect.map((bytes) => {
            if (bytes.length > maxFileBytes) return issues.push(issue(path, "TOO_LARGE"));
            const decoded = decodeText(bytes);
            if ("problem" in decoded) return issues.push(issue(path, decoded.problem));
            const id = contentId(bytes);
            blobs.addBytes(id, bytes);
            files.set(path, { id, stamp: stampOf({ ...entry, size: bytes.length }, id) });
            return undefined;
          }),
          Effect.catchTag("FsError", (error) => {
            if (error.reason === "NotFound") return Effect.void; // deleted while scanning: absent
            if (error.reason === "NotRegularFile")
              return Effect.sync(() => issues.push(issue(path, "SPECIAL_FILE")));
            return Effect.fail(localFailure(error, "reading the working copy"));
          }),
        ),
      noteIo,
    );
    yield* Effect.forEach(
      litter,
      (path) => fs.removeFile(hostPath(dir, path)).pipe(Effect.ignore),
      {
        discard: true,
      },
    );
    // The recorded names were collision-free together; only new names can collide.
    if (newNames > 0) {
      for (const group of findCaseCollisions(files.keys())) {
        for (const path of group) issues.push(issue(path, "CASE_COLLISION"));
      }
    }
    blobs.addScan(dir, files);
    if (issues.length > 0) {
      issues.sort((a, b) => compareCodeUnits(a.path, b.path));
      return yield* Effect.fail(
        domainError({
          code: "INVALID_CONTENT",
          reason: "INVALID_FILES",
          message:
            "The working copy holds files that are not notebook text; fix or remove them, then call again.",
          files: issues,
        }),
      );
    }
    return files;
  });

/** What rewriting the working copy changed. */
export interface Materialised {
  /** Stamps of every file now in the working copy, for the stat cache. */
  readonly stamps: ReadonlyMap<string, StatStamp>;
  /** Paths whose content changed (written or removed), sorted. */
  readonly changed: ReadonlyArray<string>;
}

const parentOf = (path: string): string | undefined => {
  const at = path.lastIndexOf("/");
  return at < 0 ? undefined : path.slice(0, at);
};

/** Paths (notebook form) whose content differs between `before` and `target`. */
export const changedPaths = (
  before: Scan,
  target: ReadonlyMap<string, string>,
): ReadonlyArray<string> => {
  return diffTrees(idsOf(before), target);
};

/**
 * Rewrites the working copy `dir` from `before` (its scan) to `target` (path → id):
 * removes files first, then empty directories they leave, then writes each changed
 * file atomically (temp + rename, mode 0644, parents 0755). Only `changed` is touched.
 */
export const materialise = (
  fs: FileSystemService,
  dir: string,
  before: Scan,
  target: ReadonlyMap<string, string>,
  changed: ReadonlyArray<string>,
  blobs: BlobSource,
): Effect.Effect<Materialised, DomainError> =>
  Effect.gen(function* () {
    const io = (doing: string) =>
      Effect.mapError((e: import("../../ports/FileSystem.js").FsError) => localFailure(e, doing));
    const removals = changed.filter((path) => before.has(path) && !target.has(path));
    const writes = changed.filter((path) => target.has(path));
    yield* Effect.forEach(
      removals,
      (path) => fs.removeFile(hostPath(dir, path)).pipe(io("removing a file")),
      {
        concurrency: 16,
        discard: true,
      },
    );
    const emptied = new Set<string>();
    for (const path of removals) {
      for (let parent = parentOf(path); parent !== undefined; parent = parentOf(parent))
        emptied.add(parent);
    }
    const deepestFirst = [...emptied].sort(
      (a, b) => b.split("/").length - a.split("/").length || compareCodeUnits(a, b),
    );
    for (const directory of deepestFirst) {
      yield* fs
        .removeEmptyDirectory(hostPath(dir, directory))
        .pipe(io("removing an empty directory"));
    }
    const parents = new Set<string>();
    for (const path of writes) {
      const parent = parentOf(path);
      if (parent !== undefined) parents.add(parent);
    }
    for (const parent of [...parents].sort(compareCodeUnits)) {
      yield* fs.makeDirectory(hostPath(dir, parent), 0o755).pipe(io("creating a directory"));
    }
    const stamps = new Map<string, StatStamp>();
    for (const [path, file] of before)
      if (target.get(path) === file.id) stamps.set(path, file.stamp);
    // One short pipeline per file, without a generator: a pull of 10,000 files spent
    // a fifth of this loop's CPU in the per-file effect machinery.
    const writeOne = (path: string): Effect.Effect<void, DomainError> => {
      const id = target.get(path) ?? "";
      const file = hostPath(dir, path);
      const inMemory = blobs.inMemory(id);
      return (inMemory === undefined ? blobs.load(id) : Effect.succeed(inMemory)).pipe(
        Effect.flatMap((bytes) => {
          const write = fs.writeFileAtomic(file, bytes, { mode: 0o644, durable: false });
          return write.pipe(
            Effect.catchTag("FsError", (error) =>
              error.reason === "IsADirectory" || error.reason === "Exists"
                ? fs.removeEmptyDirectory(file).pipe(Effect.zipRight(write))
                : Effect.fail(error),
            ),
            Effect.zipRight(fs.info(file)),
            io("writing a file"),
          );
        }),
        Effect.map((info) => {
          if (Option.isSome(info)) stamps.set(path, stampOf(info.value, id));
        }),
      );
    };
    yield* forEachPooled(writes, writeOne, noteIo);
    return { stamps, changed };
  });
