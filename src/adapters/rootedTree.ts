/**
 * The {@link RootedTree} of the FileSystem port, shared by the node and memfs adapters.
 *
 * Every operation reaches its directory through a {@link Directories} strategy and names
 * only the last component itself, so a directory swapped for a symlink, or moved away,
 * between a scan and a write cannot redirect the write:
 * - with directory handles (Linux, directoryHandles.ts) a directory is a descriptor
 *   opened `O_DIRECTORY|O_NOFOLLOW` from its parent's descriptor, and an entry is reached
 *   as `/proc/self/fd/<fd>/<name>`;
 * - without them (other hosts, memfs) a directory is a path whose every component is
 *   checked to be the same real directory (inode) as when first opened, just before each
 *   operation (a best effort: a swap in the microseconds between check and use is not
 *   excluded).
 * Before and after every change the directory is checked to be still where it was
 * opened; a directory found moved fails the change, and a file already put into a
 * directory that moved out meanwhile is taken back out.
 *
 * Guarded replace (the newer-edit protection of SPEC §4.1): the new content goes into a
 * temp file; the file at the path is renamed aside, checked against what the caller
 * expects (inode, size, mtime; content when asked), and the temp file is hard-linked to
 * the path — a link never replaces anything, so a file an editor saved at the path in
 * between is kept. The aside file is then removed (moved first, with directory handles,
 * into the copy's top directory, so the last check of its directory is also the last
 * moment a change there can happen), and checked once more through its open
 * descriptor: an in-place write that reached it meanwhile is handed back to the
 * caller. A process killed mid-replace leaves the aside file (`.<name>.quire-<id>.aside`),
 * which the next scan puts back (ports/FileSystem.ts `setAsideName`).
 */
import { Effect, Option } from "effect";
import {
  FsError,
  nameablePathBytes,
  type DeepEntry,
  type Expectation,
  type FsErrorReason,
  type GuardedOutcome,
  type PathInfo,
  type RootedTree,
  type UndecodableName,
  type WalkEntry,
} from "../ports/FileSystem.js";
import { errnoCode, errorMessage, reasonForErrno, tooLarge } from "./fsErrno.js";
import { kindOf, toPathInfo, type StatsLike } from "./fsStats.js";
import { makeReplacedFiles, type ReplacedFiles } from "./replacedFiles.js";
import { asideNameFor, tempNameFor } from "./tempNames.js";

/** The open(2) flags the tree uses (node's and memfs's constants agree). */
export interface OpenFlags {
  readonly O_RDONLY: number;
  readonly O_WRONLY: number;
  readonly O_CREAT: number;
  readonly O_EXCL: number;
  readonly O_NOFOLLOW: number;
  readonly O_NONBLOCK: number;
}

/**
 * The synchronous file calls the tree is built on, as node's `fs.*Sync` has them (memfs
 * has the same). They throw node-style errors carrying an errno `code`.
 */
export interface SyncCalls {
  readonly open: (path: string, flags: number, mode?: number) => number;
  readonly close: (descriptor: number) => void;
  readonly fstat: (descriptor: number) => StatsLike;
  readonly lstat: (path: string) => StatsLike;
  readonly readdir: (path: string) => ReadonlyArray<string>;
  /** The names of a directory with whether each is a real directory (d_type, else lstat). */
  readonly readdirKinds: (
    path: string,
  ) => ReadonlyArray<{ readonly name: string; readonly directory: boolean }>;
  /** The names of a directory as raw bytes (for names that are not UTF-8). */
  readonly readdirRaw: (path: string) => ReadonlyArray<Uint8Array>;
  readonly read: (
    descriptor: number,
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ) => number;
  readonly write: (
    descriptor: number,
    buffer: Uint8Array,
    offset: number,
    length: number,
  ) => number;
  readonly rename: (from: string, to: string) => void;
  readonly link: (existing: string, path: string) => void;
  readonly unlink: (path: string) => void;
  readonly mkdir: (path: string, mode: number) => void;
  readonly rmdir: (path: string) => void;
  readonly flags: OpenFlags;
  /**
   * Reads `size` bytes and on to the end of an open regular file without blocking the
   * event loop (large files); absent: everything is read synchronously.
   */
  readonly readLarge?: {
    readonly above: number;
    /** EFBIG once the file holds more than `maxBytes`, as readWhole. */
    readonly read: (descriptor: number, size: number, maxBytes: number) => Promise<Uint8Array>;
  };
}

/**
 * How the tree reaches its directories (relative paths, `""` the root): by handle or by
 * checked path. Methods throw {@link FsError}.
 */
export interface Directories {
  /**
   * Whether directories are held by handle: an operation then always reaches the
   * directory opened, wherever it is now, so a check after it can take a new file back;
   * a checked path reaches nothing once its directory moved, so it is checked before.
   */
  readonly handles: boolean;
  /** Makes `directory` reachable (its parents first): `NotFound`, `NotADirectory` otherwise. */
  readonly open: (directory: string) => void;
  /** The host path that names `directory` itself now (after {@link Directories.open}). */
  readonly path: (directory: string) => string;
  /** The host path that names entry `name` of `directory` (after {@link Directories.open}). */
  readonly entry: (directory: string, name: string) => string;
  /** Fails `Moved` unless `directory` is still the directory opened, where it was opened. */
  readonly verify: (directory: string) => void;
  /**
   * A {@link Cursor} at `directory` (opened as by {@link Directories.open}), for walking
   * below it without naming the way (directories deeper than the walk names).
   */
  readonly cursor: (directory: string) => Cursor;
  /** Forgets `directory` and everything below it (after removing it). */
  readonly forget: (directory: string) => void;
  /** Releases every handle. */
  readonly close: () => void;
}

/**
 * One directory at a time, reached from where the cursor started without naming the way
 * there: a walk of a chain too deep to name moves down into a child and back up, and
 * holds one handle whatever the depth. Methods throw {@link FsError}.
 */
export interface Cursor {
  /** The host path that names the directory the cursor is at now. */
  readonly here: () => string;
  /**
   * Moves into the real directory `name` of the current one: `NotFound` when it is gone,
   * `NotADirectory` when it is not a real directory (a symlink, a file); the cursor then
   * stays where it was.
   */
  readonly down: (name: string) => void;
  /**
   * Moves `levels` directories back up the way it came down: `Moved` when the directory
   * reached is not the one it came down through (something on the way was moved
   * meanwhile); the cursor is of no further use then.
   */
  readonly up: (levels: number) => void;
  /** Releases the cursor's handle (idempotent). */
  readonly close: () => void;
}

const fail = (reason: FsErrorReason, path: string, message: string): FsError =>
  new FsError({ reason, path, message });

/**
 * `Moved`: `root`, a canonical path, no longer leads to the directory it named; `what`
 * says what was found instead.
 */
export const rootMoved = (root: string, what: string): FsError =>
  new FsError({
    reason: "Moved",
    path: root,
    message: `${root} no longer leads to itself: a directory on the way to it was replaced (${what})`,
  });

/**
 * Maps a thrown failure to an {@link FsError} on the display path `path`. The message
 * names that path, never the `/proc/self/fd/…` path the call went through.
 */
const mapError = (error: unknown, path: string, opening = false): FsError => {
  if (error instanceof FsError) return error;
  const code = errnoCode(error);
  return new FsError({
    reason: reasonForErrno(code, opening),
    path,
    message: code === undefined ? errorMessage(error) : `${code}: ${path}`,
  });
};

const codeOf = errnoCode;

/** Runs `body`, ignoring the errno codes listed. */
const tolerate = (codes: ReadonlyArray<string>, body: () => void): void => {
  try {
    body();
  } catch (error) {
    const code = codeOf(error);
    if (code === undefined || !codes.includes(code)) throw error;
  }
};

/** Codes of a file system that cannot hard-link (FAT, some FUSE and network file systems). */
const noHardLinks = ["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS", "EMLINK", "EXDEV"];

const utf8 = new TextDecoder("utf-8", { fatal: true });
const lossy = new TextDecoder("utf-8");

/** `a/b/c` → [`a/b`, `c`]; `c` → [``, `c`]. */
const split = (path: string): readonly [string, string] => {
  const at = path.lastIndexOf("/");
  return at < 0 ? ["", path] : [path.slice(0, at), path.slice(at + 1)];
};

const joinRelative = (directory: string, name: string): string =>
  directory === "" ? name : name === "" ? directory : `${directory}/${name}`;

/** What of a file's stats a guard compares (never ctime: a rename changes it). */
const sameFile = (stats: StatsLike, expected: Extract<Expectation, { _tag: "File" }>): boolean =>
  stats.isFile() &&
  stats.ino === expected.ino &&
  stats.size === expected.size &&
  stats.mtimeMs === expected.mtimeMs;

const changed: GuardedOutcome = { _tag: "Changed" };

/**
 * A {@link RootedTree} over `calls` and `directories`, rooted at the canonical host path
 * `root` (display only). The caller closes `directories` when its scope ends.
 */
export const makeRootedTree = (
  calls: SyncCalls,
  directories: Directories,
  root: string,
): { readonly tree: RootedTree; readonly close: () => void } => {
  const replaced = makeReplacedFiles({
    fstat: calls.fstat,
    close: calls.close,
    readAll: (descriptor) => readSettled(calls, descriptor),
  });
  return {
    tree: treeAt(calls, directories, root, "", replaced),
    close: () => {
      replaced.close();
      directories.close();
    },
  };
};

/**
 * Everything an open file holds now, from its start (a file that grew is read whole), or
 * EFBIG once it holds more than `maxBytes` (by fstat, or as it grows while read).
 */
const readWhole = (
  calls: SyncCalls,
  descriptor: number,
  maxBytes = Number.POSITIVE_INFINITY,
): Uint8Array => readFrom(calls, descriptor, maxBytes, true);

/**
 * What an open file held when this began: its first `size` bytes by fstat (fewer if it
 * shrank), never what is appended while it is read. For the replace guards' comparisons
 * and the bytes they hand back: a process appending without end (`yes >> note.md`) made
 * a read "to the end" grow until the process ran out of memory. For a comparison or an
 * overtaken file nothing is lost by stopping: a write after the fstat changes the size
 * the guard compares next, or the one its watch list compares (replacedFiles.ts), and is
 * read then. Bytes handed back from a file that is then closed for good use
 * {@link readSettled}.
 */
const readSnapshot = (calls: SyncCalls, descriptor: number): Uint8Array =>
  readFrom(calls, descriptor, Number.POSITIVE_INFINITY, false);

/**
 * The bytes of a file about to be closed for good (a displaced file, a watched one at
 * its last check): a snapshot, read again while the file grew during the read, at most
 * {@link settleReads} times. An appender that stops is read to its end, as a read "to
 * the end" did; one that never stops costs a bounded number of bounded reads instead of
 * all the memory. A write after the last fstat is not seen (as it never was).
 */
const readSettled = (calls: SyncCalls, descriptor: number): Uint8Array => {
  let bytes = readSnapshot(calls, descriptor);
  for (let read = 1; read < settleReads; read++) {
    if (calls.fstat(descriptor).size === bytes.length) break;
    bytes = readSnapshot(calls, descriptor);
  }
  return bytes;
};

/** How many snapshots {@link readSettled} reads at most. */
const settleReads = 4;

const readFrom = (
  calls: SyncCalls,
  descriptor: number,
  maxBytes: number,
  toEnd: boolean,
): Uint8Array => {
  const size = calls.fstat(descriptor).size;
  if (size > maxBytes) throw tooLarge(maxBytes);
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (let round = 0; toEnd || round === 0; round++) {
    if (total > maxBytes) throw tooLarge(maxBytes);
    const want = round === 0 ? Math.max(size, 1) : 64 * 1024;
    const buffer = new Uint8Array(want);
    let filled = 0;
    while (filled < want) {
      const got = calls.read(descriptor, buffer, filled, want - filled, total + filled);
      if (got === 0) break;
      filled += got;
    }
    if (filled > 0) chunks.push(filled === want ? buffer : buffer.subarray(0, filled));
    total += filled;
    if (filled < want) break;
  }
  return chunks.length === 1 && chunks[0] !== undefined ? chunks[0] : Buffer.concat(chunks, total);
};

const treeAt = (
  calls: SyncCalls,
  dirs: Directories,
  root: string,
  prefix: string,
  replaced: ReplacedFiles,
): RootedTree => {
  const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = calls.flags;
  const readFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;
  const createFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;
  const full = (path: string): string => joinRelative(prefix, path);
  const display = (path: string): string => (path === "" ? root : `${root}/${path}`);

  const run = <A>(path: string, body: () => A): Effect.Effect<A, FsError> =>
    Effect.try({ try: body, catch: (error) => mapError(error, display(path)) });

  const lstatOrUndefined = (hostPath: string): StatsLike | undefined => {
    try {
      return calls.lstat(hostPath);
    } catch (error) {
      const code = codeOf(error);
      if (code === "ENOENT" || code === "ENOTDIR") return undefined;
      throw error;
    }
  };

  /** Whether `directory` can be reached (opened); `false` when it is gone or not a directory. */
  const reachable = (directory: string): boolean => {
    try {
      dirs.open(directory);
      return true;
    } catch (error) {
      if (
        error instanceof FsError &&
        (error.reason === "NotFound" || error.reason === "NotADirectory")
      )
        return false;
      throw error;
    }
  };

  /** Whether `directory` is still where it was opened (`false` when it moved). */
  const inPlace = (directory: string): boolean => {
    try {
      dirs.verify(directory);
      return true;
    } catch (error) {
      if (error instanceof FsError && error.reason === "Moved") return false;
      throw error;
    }
  };

  const writeAll = (descriptor: number, bytes: Uint8Array): void => {
    for (let written = 0; written < bytes.length;)
      written += calls.write(descriptor, bytes, written, bytes.length - written);
  };

  const snapshot = (descriptor: number): Uint8Array => readSnapshot(calls, descriptor);

  /**
   * Puts a set-aside entry back under its name, unless the name was taken meanwhile:
   * `false` then, and what was set aside stays aside rather than be lost or replace the
   * newer file.
   */
  const putBack = (aside: string, target: string): boolean => {
    try {
      calls.link(aside, target);
      calls.unlink(aside);
      return true;
    } catch (error) {
      const code = codeOf(error);
      if (code === "EEXIST") return false;
      if (code === undefined || !(noHardLinks.includes(code) || code === "EISDIR")) throw error;
    }
    // A directory (or a file system without hard links): rename back if the name is free.
    if (lstatOrUndefined(target) !== undefined) return false;
    tolerate(["EEXIST", "ENOTEMPTY", "ENOTDIR", "EISDIR"], () => calls.rename(aside, target));
    return true;
  };

  /** Removes `hostPath` if it is the file open as `descriptor` (undoing our own link). */
  const unlinkIfOurs = (hostPath: string, descriptor: number): void => {
    const now = lstatOrUndefined(hostPath);
    if (now !== undefined && now.ino === calls.fstat(descriptor).ino)
      tolerate(["ENOENT"], () => calls.unlink(hostPath));
  };

  /** Links temp file `temp` to the free name `target`; `false` if the name is taken. */
  const linkNew = (temp: string, target: string): boolean => {
    try {
      calls.link(temp, target);
      return true;
    } catch (error) {
      const code = codeOf(error);
      if (code === "EEXIST") return false;
      if (code === undefined || !noHardLinks.includes(code)) throw error;
    }
    // No hard links here: a rename replaces, so a name taken just now would be lost to
    // it; checked first, and the residual window accepted (documented).
    if (lstatOrUndefined(target) !== undefined) return false;
    calls.rename(temp, target);
    return true;
  };

  /**
   * The stats of the file just written, once it has its name: only if nobody wrote into
   * it since (same size and mtime as right after our write); `None` otherwise, so that
   * no stat cache ever vouches for content a later writer changed.
   */
  const writtenInfo = (descriptor: number, written: StatsLike): Option.Option<PathInfo> => {
    const now = calls.fstat(descriptor);
    return now.size === written.size && now.mtimeMs === written.mtimeMs
      ? Option.some(toPathInfo(now))
      : Option.none();
  };

  const placeNew = (
    directory: string,
    name: string,
    temp: string,
    { descriptor: tempDescriptor, written }: { descriptor: number; written: StatsLike },
    removeTemp: () => void,
  ): GuardedOutcome => {
    const target = dirs.entry(directory, name);
    if (!linkNew(temp, target)) return changed;
    removeTemp();
    if (!inPlace(directory)) {
      unlinkIfOurs(target, tempDescriptor);
      return changed;
    }
    return { _tag: "Done", info: writtenInfo(tempDescriptor, written) };
  };

  /** Opens a set-aside entry to check it; `undefined` when it is no regular file (then put back). */
  const openAside = (aside: string, target: string): number | undefined => {
    try {
      return calls.open(aside, readFlags);
    } catch (error) {
      const code = codeOf(error);
      if (code === "ELOOP" || code === "ENXIO" || code === "EISDIR" || code === "ENOTDIR") {
        putBack(aside, target);
        return undefined;
      }
      throw error;
    }
  };

  const matchesExpected = (
    descriptor: number,
    stats: StatsLike,
    expected: Extract<Expectation, { _tag: "File" }>,
  ): boolean =>
    sameFile(stats, expected) &&
    (expected.sameContent === undefined || expected.sameContent(snapshot(descriptor)));

  /** Whether the file open as `descriptor` changed since `first` was taken. */
  const changedSince = (
    descriptor: number,
    first: StatsLike,
    expected: Extract<Expectation, { _tag: "File" }>,
  ): boolean => {
    const last = calls.fstat(descriptor);
    if (last.size !== first.size || last.mtimeMs !== first.mtimeMs) return true;
    return expected.sameContent !== undefined && !expected.sameContent(snapshot(descriptor));
  };

  /**
   * Sets aside the file at `name` if it is what `expected` says; the descriptor of the
   * aside file and its stats, or `changed` (nothing changed) otherwise. A file that turns
   * out not to be what was expected goes back under its name; if a newcomer took the name
   * meanwhile (a writer appending to the name creates it), the set-aside file is
   * `Displaced`: removed, its bytes handed to the caller, never left for a scan to
   * mistake for the old version of a finished replace and remove.
   */
  const setAside = (
    directory: string,
    name: string,
    expected: Extract<Expectation, { _tag: "File" }>,
  ):
    | { readonly aside: string; readonly descriptor: number; readonly first: StatsLike }
    | GuardedOutcome => {
    const target = dirs.entry(directory, name);
    const before = lstatOrUndefined(target);
    if (before === undefined || !sameFile(before, expected)) return changed;
    const aside = dirs.entry(directory, asideNameFor(name));
    try {
      calls.rename(target, aside);
    } catch (error) {
      if (codeOf(error) === "ENOENT") return changed;
      throw error;
    }
    const descriptor = openAside(aside, target);
    if (descriptor === undefined) return changed;
    try {
      const first = calls.fstat(descriptor);
      if (matchesExpected(descriptor, first, expected)) return { aside, descriptor, first };
    } catch (error) {
      calls.close(descriptor);
      throw error;
    }
    try {
      if (putBack(aside, target)) return changed;
      const bytes = readSettled(calls, descriptor);
      return discardAside(directory, name, aside, () => undefined)
        ? { _tag: "Displaced", bytes }
        : changed;
    } finally {
      calls.close(descriptor);
    }
  };

  /**
   * With directory handles, moves a set-aside file from `directory` into the copy's top
   * directory, under a temp name (a later scan tidies it away), before the directory's
   * last check: what is finally unlinked is then never in a directory that moved out of
   * the tree just after that check (a preempted call can sit there for milliseconds).
   * `undefined` when it stays: the top directory itself, checked paths (where moving it
   * back through a path could follow a swapped component), or a rename that fails
   * (another file system, a top directory that is not writable).
   */
  const toDiscard = (directory: string, aside: string, name: string): string | undefined => {
    if (!dirs.handles || directory === prefix) return undefined;
    const discard = dirs.entry(prefix, tempNameFor(name));
    try {
      calls.rename(aside, discard);
      return discard;
    } catch {
      // Another file system below the top, a top that is not writable (EACCES): the
      // file stays, and is unlinked where it is, as before this step existed. Throwing
      // here would fail a replace whose new file is already in place.
      return undefined;
    }
  };

  /**
   * Removes the set-aside file `aside` (of `name` in `directory`) for good, unless the
   * directory moved: then `undo` runs, the file goes back under its name (or stays aside
   * if the name was taken) and the answer is `false`.
   */
  const discardAside = (
    directory: string,
    name: string,
    aside: string,
    undo: () => void,
  ): boolean => {
    const discard = toDiscard(directory, aside, name);
    if (!inPlace(directory)) {
      undo();
      if (discard !== undefined) calls.rename(discard, aside);
      putBack(aside, dirs.entry(directory, name));
      return false;
    }
    calls.unlink(discard ?? aside);
    return true;
  };

  /**
   * Hands the old file just replaced or removed (open as `descriptor`, as `seen` when its
   * outcome was decided) to the watch list (replacedFiles.ts): `false` when it cannot be
   * (then the caller closes it).
   */
  const keepWatching = (path: string, descriptor: number, seen: StatsLike): boolean => {
    try {
      replaced.watch(path, descriptor, seen);
      return true;
    } catch {
      return false;
    }
  };

  const swapIn = (
    directory: string,
    name: string,
    temp: string,
    { descriptor: tempDescriptor, written }: { descriptor: number; written: StatsLike },
    expected: Extract<Expectation, { _tag: "File" }>,
    removeTemp: () => void,
  ): GuardedOutcome => {
    const held = setAside(directory, name, expected);
    if ("_tag" in held) return held;
    const target = dirs.entry(directory, name);
    let watching = false;
    try {
      if (!linkNew(temp, target)) {
        // A file was created at the name after ours was set aside. It is newer than what
        // was expected, but it may hold only what a writer appending to the name wrote
        // once it found the name free: the set-aside content goes back to the caller,
        // never away unseen (found by a stress test: a `>>` loop lost the whole file).
        const bytes = readSettled(calls, held.descriptor);
        return discardAside(directory, name, held.aside, () => undefined)
          ? { _tag: "Displaced", bytes }
          : changed;
      }
      const undo = () => unlinkIfOurs(target, tempDescriptor);
      if (!discardAside(directory, name, held.aside, undo)) return changed;
      removeTemp();
      const info = writtenInfo(tempDescriptor, written);
      // Taken before the decision: a write after it is seen by the later check, never
      // between the two.
      const seen = calls.fstat(held.descriptor);
      const outcome: GuardedOutcome = changedSince(held.descriptor, held.first, expected)
        ? { _tag: "Overtaken", bytes: snapshot(held.descriptor), info }
        : { _tag: "Done", info };
      watching = keepWatching(joinRelative(directory, name), held.descriptor, seen);
      return outcome;
    } finally {
      if (!watching) calls.close(held.descriptor);
    }
  };

  const guardedRemove = (
    directory: string,
    name: string,
    expected: Expectation,
  ): GuardedOutcome => {
    if (expected._tag === "Absent")
      return lstatOrUndefined(dirs.entry(directory, name)) === undefined
        ? { _tag: "Done", info: Option.none() }
        : changed;
    const held = setAside(directory, name, expected);
    if ("_tag" in held) return held;
    let watching = false;
    try {
      // Moved out of the tree while it was set aside: put back, remove nothing there.
      if (!discardAside(directory, name, held.aside, () => undefined)) return changed;
      // Taken before the decision: a write after it is seen by the later check, never
      // between the two.
      const seen = calls.fstat(held.descriptor);
      const outcome: GuardedOutcome = changedSince(held.descriptor, held.first, expected)
        ? { _tag: "Overtaken", bytes: snapshot(held.descriptor), info: Option.none() }
        : { _tag: "Done", info: Option.none() };
      watching = keepWatching(joinRelative(directory, name), held.descriptor, seen);
      return outcome;
    } finally {
      if (!watching) calls.close(held.descriptor);
    }
  };

  const replaceFile = (path: string, bytes: Uint8Array, expected: Expectation, mode: number) =>
    run(full(path), (): GuardedOutcome => {
      const [directory, name] = split(full(path));
      // A new file is checked once it is linked (and taken back if its directory moved):
      // checking before as well would only shorten a window the check after closes.
      const checkFirst = expected._tag === "File" || !dirs.handles;
      if (!reachable(directory) || (checkFirst && !inPlace(directory))) return changed;
      const temp = dirs.entry(directory, tempNameFor(name));
      // A note replaced keeps its permission bits (one a person made private stays so),
      // never setuid, setgid or sticky; a new one gets `mode`.
      const old =
        expected._tag === "File" ? lstatOrUndefined(dirs.entry(directory, name)) : undefined;
      const descriptor = calls.open(
        temp,
        createFlags,
        old !== undefined && old.isFile() ? old.mode & 0o777 : mode,
      );
      // The temp name goes once the file is linked; on any other way out, here.
      let tempGone = false;
      const removeTemp = () => {
        tolerate(["ENOENT"], () => calls.unlink(temp));
        tempGone = true;
      };
      try {
        writeAll(descriptor, bytes);
        const written = calls.fstat(descriptor);
        return expected._tag === "Absent"
          ? placeNew(directory, name, temp, { descriptor, written }, removeTemp)
          : swapIn(directory, name, temp, { descriptor, written }, expected, removeTemp);
      } finally {
        calls.close(descriptor);
        if (!tempGone) removeTemp();
      }
    });

  const removeFile = (path: string, expected: Expectation) =>
    run(full(path), (): GuardedOutcome => {
      const [directory, name] = split(full(path));
      if (!reachable(directory) || !inPlace(directory)) return changed;
      return guardedRemove(directory, name, expected);
    });

  const removeLeftover = (path: string) =>
    run(full(path), () => {
      const [directory, name] = split(full(path));
      if (!reachable(directory) || !inPlace(directory)) return;
      tolerate(["ENOENT", "EISDIR", "EPERM"], () => calls.unlink(dirs.entry(directory, name)));
    });

  const restoreName = (from: string, to: string) =>
    run(full(to), () => {
      const [directory, fromName] = split(full(from));
      const [toDirectory, toName] = split(full(to));
      if (directory !== toDirectory)
        throw fail("Other", display(full(to)), "restoreName works within one directory");
      dirs.open(directory);
      dirs.verify(directory);
      const source = dirs.entry(directory, fromName);
      const target = dirs.entry(directory, toName);
      if (!linkNew(source, target)) return false;
      tolerate(["ENOENT"], () => calls.unlink(source));
      return true;
    });

  /**
   * The names of `hostPath` (a directory listing), those that are not UTF-8 left out and
   * handed to `undecodable` (lossily) instead.
   */
  const decodedNames = (
    hostPath: string,
    names: ReadonlyArray<string>,
    undecodable: (lossyName: string) => void,
  ): ReadonlyArray<string> => {
    if (!names.some((name) => name.includes("\uFFFD"))) return names;
    const valid: string[] = [];
    for (const raw of calls.readdirRaw(hostPath)) {
      try {
        valid.push(utf8.decode(raw));
      } catch {
        undecodable(lossy.decode(raw));
      }
    }
    return valid;
  };

  /**
   * The names of `hostPath` that are valid UTF-8, read as bytes, when `listed` (its
   * listing, decoded lossily) holds a U+FFFD: such a name is a real one only if its bytes
   * were UTF-8 (a U+FFFD someone typed), not when it stood for bytes that are no UTF-8.
   * `undefined` when no name has one (all are real).
   */
  const utf8NamesIfNeeded = (
    hostPath: string,
    listed: ReadonlyArray<{ readonly name: string }>,
  ): ReadonlySet<string> | undefined =>
    listed.some(({ name }) => name.includes("\uFFFD"))
      ? new Set(
          decodedNames(
            hostPath,
            listed.map(({ name }) => name),
            () => undefined, // not UTF-8: not a real name
          ),
        )
      : undefined;

  /**
   * Walks the directories `names` of the named directory `directory` (relative to this
   * tree's root), whose paths are too long to name, with a {@link Cursor}: nothing
   * deeper is named, so time and memory stay linear in the depth. Reports every entry
   * that is not a directory, and every name that is not UTF-8, to `found`; returns how
   * many directories it entered or skipped.
   */
  const walkDeep = (
    directory: string,
    names: ReadonlyArray<string>,
    skipNames: ReadonlySet<string>,
    found: DeepEntry[],
  ): number => {
    let directories = 0;
    const cursor = dirs.cursor(full(directory));
    try {
      // frames[level]: the directories still to walk in the one the cursor is at when
      // `level` is frames.length - 1 (frames[0]: `directory` itself).
      const frames: string[][] = [[...names]];
      while (frames.length > 0) {
        const name = frames[frames.length - 1]?.pop();
        if (name === undefined) {
          // Done here and, maybe, in the levels above: climb only to one with work left
          // (a chain's walk ends at its bottom, without climbing back at all).
          let climb = 0;
          while (frames.length > 0 && frames[frames.length - 1]?.length === 0) {
            frames.pop();
            climb++;
          }
          if (frames.length > 0) cursor.up(climb);
          continue;
        }
        const levels = frames.length;
        try {
          cursor.down(name);
        } catch (error) {
          if (!(error instanceof FsError)) throw error;
          if (error.reason !== "NotFound" && error.reason !== "NotADirectory") throw error;
          // Gone, or swapped for something that is no directory since it was listed.
          const now = lstatOrUndefined(`${cursor.here()}/${name}`);
          if (now !== undefined && !now.isDirectory())
            found.push({ directory, levels: levels - 1, name });
          continue;
        }
        directories++;
        const children: string[] = [];
        const here = cursor.here();
        let listed: ReadonlyArray<{ readonly name: string; readonly directory: boolean }>;
        try {
          // Kinds from the listing itself (d_type): below here every entry but a directory
          // is reported the same way, so none needs an lstat.
          listed = calls.readdirKinds(here);
        } catch (error) {
          const code = codeOf(error);
          if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
          listed = []; // removed meanwhile: nothing below it any more
        }
        const genuine = utf8NamesIfNeeded(here, listed);
        for (const { name: child, directory: isDirectory } of listed) {
          if (!isDirectory || (child.includes("\uFFFD") && genuine?.has(child) !== true))
            found.push({ directory, levels, name: child });
          else if (skipNames.has(child)) directories++;
          else children.push(child);
        }
        frames.push(children);
      }
    } finally {
      cursor.close();
    }
    return directories;
  };

  const walk = (skipNames: ReadonlySet<string> = new Set()) =>
    run(prefix, () => {
      const entries: Array<WalkEntry> = [];
      const undecodable: Array<UndecodableName> = [];
      const tooDeep: Array<DeepEntry> = [];
      let tooDeepDirectories = 0;
      // Each directory still to list, with where its own entry is (-1 for the root) and
      // the UTF-8 length of its path.
      const pending: Array<{
        readonly relative: string;
        readonly at: number;
        readonly bytes: number;
      }> = [{ relative: "", at: -1, bytes: 0 }];
      for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
        const { relative, at, bytes } = next;
        const directory = full(relative);
        let names: ReadonlyArray<string>;
        try {
          dirs.open(directory);
          names = calls.readdir(dirs.path(directory));
        } catch (error) {
          if (at < 0) throw error;
          const reason = mapError(error, display(directory)).reason;
          if (reason !== "NotFound" && reason !== "NotADirectory") throw error;
          // Swapped for something else (or gone) since it was listed: report what it is now.
          const parent = split(directory)[0];
          const now = reachable(parent)
            ? lstatOrUndefined(dirs.entry(parent, split(directory)[1]))
            : undefined;
          const entry = entries[at];
          if (entry !== undefined && now !== undefined)
            entries[at] = { relativePath: entry.relativePath, ...toPathInfo(now) };
          continue;
        }
        names = decodedNames(dirs.path(directory), names, (lossyName) =>
          undecodable.push({ directory: relative, lossyName }),
        );
        const deeper: string[] = [];
        for (const name of names) {
          const stats = lstatOrUndefined(dirs.entry(directory, name));
          if (stats === undefined) continue;
          const kind = kindOf(stats);
          const childBytes = (relative === "" ? 0 : bytes + 1) + Buffer.byteLength(name);
          if (kind === "directory" && childBytes > nameablePathBytes) {
            // Too long to name: walked below without names, after this listing.
            if (skipNames.has(name)) tooDeepDirectories++;
            else deeper.push(name);
            continue;
          }
          const relativePath = joinRelative(relative, name);
          entries.push({
            relativePath,
            kind,
            size: kind === "file" ? stats.size : 0,
            mtimeMs: stats.mtimeMs,
            ctimeMs: stats.ctimeMs,
            ino: stats.ino,
          });
          if (kind === "directory" && !skipNames.has(name))
            pending.push({ relative: relativePath, at: entries.length - 1, bytes: childBytes });
        }
        if (deeper.length > 0) tooDeepDirectories += walkDeep(relative, deeper, skipNames, tooDeep);
      }
      return { entries, undecodable, tooDeep, tooDeepDirectories };
    });

  const listDirectories = (skipNames: ReadonlySet<string> = new Set()) =>
    run(prefix, () => {
      const found: string[] = [];
      const pending: Array<{ readonly relative: string; readonly bytes: number }> = [
        { relative: "", bytes: 0 },
      ];
      for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
        const { relative, bytes } = next;
        const directory = full(relative);
        let names: ReadonlyArray<{ readonly name: string; readonly directory: boolean }>;
        try {
          dirs.open(directory);
          names = calls.readdirKinds(dirs.path(directory));
        } catch (error) {
          if (relative === "") throw error;
          const reason = mapError(error, display(directory)).reason;
          if (reason === "NotFound" || reason === "NotADirectory") continue; // swapped meanwhile
          throw error;
        }
        const genuine = utf8NamesIfNeeded(dirs.path(directory), names);
        for (const { name, directory: isDirectory } of names) {
          if (!isDirectory || skipNames.has(name)) continue;
          if (name.includes("\uFFFD") && genuine?.has(name) !== true) continue;
          // Too long to name (see nameablePathBytes): neither listed nor entered.
          const childBytes = (relative === "" ? 0 : bytes + 1) + Buffer.byteLength(name);
          if (childBytes > nameablePathBytes) continue;
          const child = joinRelative(relative, name);
          found.push(child);
          pending.push({ relative: child, bytes: childBytes });
        }
      }
      return found;
    });

  const info = (path: string) =>
    run(full(path), (): Option.Option<PathInfo> => {
      const [directory, name] = split(full(path));
      if (name === "")
        return reachable(directory)
          ? Option.some(toPathInfo(calls.lstat(dirs.path(directory))))
          : Option.none();
      if (!reachable(directory)) return Option.none();
      const stats = lstatOrUndefined(dirs.entry(directory, name));
      return stats === undefined ? Option.none() : Option.some(toPathInfo(stats));
    });

  const openForRead = (path: string): { descriptor: number; info: PathInfo } => {
    const [directory, name] = split(full(path));
    if (!reachable(directory))
      throw fail("NotFound", display(full(path)), `${display(full(path))} does not exist`);
    let descriptor: number;
    try {
      descriptor = calls.open(dirs.entry(directory, name), readFlags);
    } catch (error) {
      throw mapError(error, display(full(path)), true);
    }
    try {
      const stats = calls.fstat(descriptor);
      if (stats.isDirectory())
        throw fail("IsADirectory", display(full(path)), `${display(full(path))} is a directory`);
      if (!stats.isFile())
        throw fail(
          "NotRegularFile",
          display(full(path)),
          `${display(full(path))} is not a regular file`,
        );
      return { descriptor, info: toPathInfo(stats) };
    } catch (error) {
      calls.close(descriptor);
      throw error;
    }
  };

  const readFile = (path: string, maxBytes: number) =>
    run(full(path), () => openForRead(path)).pipe(
      Effect.flatMap(({ descriptor, info }) => {
        const large = calls.readLarge;
        if (large !== undefined && info.size > large.above && info.size <= maxBytes)
          return Effect.tryPromise({
            try: () => large.read(descriptor, info.size, maxBytes),
            catch: (error) => mapError(error, display(full(path))),
          }).pipe(
            Effect.map((bytes) => ({ bytes, info })),
            Effect.ensuring(Effect.sync(() => calls.close(descriptor))),
          );
        return run(full(path), () => {
          try {
            return { bytes: readWhole(calls, descriptor, maxBytes), info };
          } finally {
            calls.close(descriptor);
          }
        });
      }),
    );

  const makeDirectories = (directory: string, mode: number) =>
    run(full(directory), () => {
      const target = full(directory);
      if (target === "") return;
      const parts = target.split("/");
      for (let depth = 1; depth <= parts.length; depth++) {
        const current = parts.slice(0, depth).join("/");
        if (reachable(current)) continue;
        const [parent, name] = split(current);
        dirs.open(parent);
        dirs.verify(parent);
        let made = true;
        try {
          calls.mkdir(dirs.entry(parent, name), mode);
        } catch (error) {
          if (codeOf(error) !== "EEXIST") throw error;
          made = false;
        }
        // Made in a directory that moved out meanwhile: taken back out (it is still empty).
        if (made && !inPlace(parent)) {
          tolerate(["ENOENT", "ENOTEMPTY", "EEXIST", "ENOTDIR"], () =>
            calls.rmdir(dirs.entry(parent, name)),
          );
          dirs.verify(parent);
        }
        // A symlink or file planted at the name meanwhile fails here: never followed.
        dirs.open(current);
      }
    });

  const removeEmptyDirectory = (directory: string) =>
    run(full(directory), () => {
      const target = full(directory);
      if (target === "") {
        // The tree's own root: removed by its host path, only while empty (rmdir) and
        // only while it is the directory opened, where it was opened. A folder above it
        // moved and swapped for a symlink leads that path elsewhere, to a folder that is
        // not ours (the check and the rmdir are microseconds apart, where the judgement
        // that the copy may go was a whole removal earlier). Its handles are let go once
        // it is gone.
        if (!inPlace("")) return;
        let gone = true;
        tolerate(["ENOENT", "ENOTEMPTY", "EEXIST", "ENOTDIR", "EBUSY", "EINVAL"], () => {
          gone = false;
          calls.rmdir(root);
          gone = true;
        });
        if (gone) dirs.close();
        return;
      }
      const [parent, name] = split(target);
      if (!reachable(parent) || !inPlace(parent)) return;
      const entry = dirs.entry(parent, name);
      const was = lstatOrUndefined(entry);
      let removed = true;
      tolerate(["ENOENT", "ENOTEMPTY", "EEXIST", "ENOTDIR", "EBUSY", "EINVAL"], () => {
        removed = false;
        calls.rmdir(entry);
        removed = true;
      });
      // Removed from a directory that moved out of the tree meanwhile (between the check
      // and the rmdir): put back, empty as it was, with its permission bits — as a
      // directory made there is taken back (makeDirectories).
      if (removed && was !== undefined && !inPlace(parent))
        tolerate(["EEXIST", "ENOENT", "ENOTDIR"], () => calls.mkdir(entry, was.mode & 0o7777));
      if (lstatOrUndefined(entry) === undefined) dirs.forget(target);
    });

  const subtree = (directory: string) =>
    run(full(directory), () => {
      dirs.open(full(directory));
      return treeAt(calls, dirs, root, full(directory), replaced);
    });

  return {
    root: display(prefix),
    walk,
    listDirectories,
    info,
    readFile,
    replaceFile,
    removeFile,
    removeLeftover,
    lateWrites: () => run(prefix, () => replaced.late(prefix)),
    restoreName,
    makeDirectories,
    removeEmptyDirectory,
    subtree,
  };
};
