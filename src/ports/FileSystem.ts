/**
 * The file system port: exactly what the use cases need from a host file system,
 * for working copies (caller-owned) and private state (server-owned). All paths are
 * absolute host paths; the adapter never follows symlinks while walking.
 */
import { Context, Data, type Effect, type Option, type Scope } from "effect";
import { maxPathBytes } from "../domain/paths.js";

/**
 * The closed set of reasons a file system request can fail with. Adapters map node
 * errno codes (and memfs's imitations of them) into these.
 *
 * - `NotFound` (ENOENT), `NotADirectory` (ENOTDIR), `IsADirectory` (EISDIR), `Exists` (EEXIST)
 * - `NotRegularFile`: the path is not a regular file (FIFO, socket, device, symlink) when a
 *   read needed one; the read never blocks on a FIFO.
 * - `PermissionDenied` (EACCES, EPERM), `ReadOnly` (EROFS), `NoSpace` (ENOSPC, EDQUOT),
 *   `TooManyOpenFiles` (EMFILE, ENFILE), `NameTooLong` (ENAMETOOLONG)
 * - `TooLarge` (EFBIG): a file holds more than a read's bound allows (it may have grown
 *   while it was read: only the bound and a little more were read).
 * - `Busy`: a lock is held by another live process.
 * - `Moved`: a directory of a {@link RootedTree} is no longer where the tree found it (it
 *   was renamed, moved out of the tree or removed meanwhile); nothing was done there.
 * - `Other`: anything else (the message says what).
 */
export type FsErrorReason =
  | "NotFound"
  | "NotADirectory"
  | "IsADirectory"
  | "Exists"
  | "NotRegularFile"
  | "PermissionDenied"
  | "ReadOnly"
  | "NoSpace"
  | "TooManyOpenFiles"
  | "NameTooLong"
  | "TooLarge"
  | "Busy"
  | "Moved"
  | "Other";

/** The only error a FileSystem method fails with; `path` is the host path involved. */
export class FsError extends Data.TaggedError("FsError")<{
  readonly reason: FsErrorReason;
  readonly path: string;
  readonly message: string;
  /**
   * With `Busy`, who holds the lock when the lock file says so: `pid 123 on host`, or
   * `another call of this process`.
   */
  readonly holder?: string;
}> {}

/** What kind of directory entry was seen, from `lstat` (links are never followed). */
export type EntryKind = "file" | "directory" | "symlink" | "fifo" | "socket" | "device";

/** One entry found by {@link FileSystemService.walk}. */
export interface WalkEntry {
  /** Path relative to the walked root, `/`-separated, exactly as the host spells it (not normalised). */
  readonly relativePath: string;
  readonly kind: EntryKind;
  /** Size in bytes (files only; 0 otherwise). */
  readonly size: number;
  /** Modification time in milliseconds (with fraction where the host has it). */
  readonly mtimeMs: number;
  /** Change time in milliseconds. */
  readonly ctimeMs: number;
  /** Inode number (0 where the host has none). */
  readonly ino: number;
}

/** One entry of a walk whose name is not valid UTF-8 (it cannot be named again as text). */
export interface UndecodableName {
  /** The directory it is in, relative to the walked root (`""` for the root itself). */
  readonly directory: string;
  /** The name with every invalid byte replaced by U+FFFD: for messages only. */
  readonly lossyName: string;
}

/**
 * The longest path, relative to the walked root, that a walk of a {@link RootedTree} names
 * (UTF-8 bytes): the longest notebook path (SPEC §4). Nothing below a directory whose own
 * path is longer can be a note, and a hostile chain of thousands of directories, each named
 * with its whole path, cost time and memory quadratic in its depth (30,000 levels: ~11 s
 * and ~1 GB per scan); below this bound a walk no longer builds names.
 */
export const nameablePathBytes: number = maxPathBytes;

/**
 * One entry found by {@link RootedTree.walk} below a directory whose path is longer than
 * {@link nameablePathBytes}: anything but a directory, or a name that is not UTF-8. Its
 * path is not built (see {@link nameablePathBytes}); it is placed by the deepest directory
 * the walk named on the way and how many levels further down it lies.
 */
export interface DeepEntry {
  /** The deepest directory named on the way to it, relative to the walked root. */
  readonly directory: string;
  /** How many directories lie between {@link DeepEntry.directory} and the entry. */
  readonly levels: number;
  /** Its own name (U+FFFD for each invalid byte when it is not UTF-8: for messages only). */
  readonly name: string;
}

/** Metadata of a single path, from `lstat`. */
export interface PathInfo {
  readonly kind: EntryKind;
  readonly size: number;
  readonly mtimeMs: number;
  readonly ctimeMs: number;
  readonly ino: number;
}

/**
 * What a guarded change of a {@link RootedTree} expects to find at a path: what the
 * caller's scan saw there. `File` compares inode, size and modification time (never the
 * change time, which a rename alters); `sameContent`, when given, is also asked with the
 * file's bytes, for files whose times cannot tell a later write from the scanned one.
 */
export type Expectation =
  | { readonly _tag: "Absent" }
  | {
      readonly _tag: "File";
      readonly ino: number;
      readonly size: number;
      readonly mtimeMs: number;
      readonly sameContent?: (bytes: Uint8Array) => boolean;
    };

/**
 * The outcome of a guarded replace or remove:
 * - `Done`: the change was made; `info` describes the file now at the path as written by
 *   this change (absent after a removal), taken from the written file itself, never from
 *   whatever the path may hold by the time the call returns.
 * - `Changed`: the path did not hold what was expected (a newer edit, a file where none
 *   was, a directory or symlink swapped in, a directory that moved); nothing was changed
 *   there and the path is left exactly as found.
 * - `Overtaken`: the change was made, but a process that had the replaced (or removed)
 *   file open wrote into it while it was being swapped out; `bytes` is what that file
 *   held last. The caller must bring them back (they are a newer edit).
 * - `Displaced`: the expected file was set aside, and before the new one (or, for a
 *   removal, before it could be put back after it changed)
 *   could take the name another file was created there: nothing of this change was
 *   written, the set-aside file is gone and `bytes` is what it held. The file at the name
 *   may be a whole save (an editor's) or only what a writer appending to the name wrote
 *   once it found the name free (`>>` creates the file it appends to), so the caller must
 *   keep `bytes` unless that file already holds them.
 */
export type GuardedOutcome =
  | { readonly _tag: "Done"; readonly info: Option.Option<PathInfo> }
  | { readonly _tag: "Changed" }
  | { readonly _tag: "Displaced"; readonly bytes: Uint8Array }
  | {
      readonly _tag: "Overtaken";
      readonly bytes: Uint8Array;
      readonly info: Option.Option<PathInfo>;
    };

/**
 * A directory tree opened without following symlinks: every path is relative to its root
 * (`/`-separated, `""` is the root itself) and no operation ever reaches outside it,
 * whatever is renamed, swapped for a symlink or replaced while it runs. Where the host
 * offers directory handles (Linux: descriptors opened `O_DIRECTORY|O_NOFOLLOW`, used
 * through `/proc/self/fd`), every operation goes through the handle of its directory;
 * elsewhere each ancestor's identity is checked before the operation (a documented best
 * effort). A directory found renamed, moved or removed since it was opened fails the
 * operation with `Moved`; a component that is not a real directory, with `NotADirectory`.
 * Valid only inside the scope it was opened in.
 */
export interface RootedTree {
  /** The canonical host path the tree was opened at (messages and keys only). */
  readonly root: string;
  /**
   * Every entry below the root (not the root itself), relative to it, without following
   * symlinks and without descending into directories named in `skipNames`. Entries that
   * vanish meanwhile are skipped; a directory swapped for something else while the walk
   * runs is reported as what it is now. Names that are not valid UTF-8 are reported
   * apart (never descended into).
   *
   * A directory whose path is longer than {@link nameablePathBytes} is not an entry: it is
   * counted in `tooDeepDirectories` and walked without names, and whatever is found below
   * it that is not a directory (or has a name that is not UTF-8) is reported apart in
   * `tooDeep` ({@link DeepEntry}), so nothing is hidden. Time and memory stay linear in
   * the depth, and with directory handles one descriptor is held below the named
   * directories, however deep. Fails `Moved` when a directory of such a chain is moved
   * while the walk climbs back through it (elsewhere, `NameTooLong` where the host cannot
   * name such a path at all).
   */
  readonly walk: (skipNames?: ReadonlySet<string>) => Effect.Effect<
    {
      readonly entries: ReadonlyArray<WalkEntry>;
      readonly undecodable: ReadonlyArray<UndecodableName>;
      readonly tooDeep: ReadonlyArray<DeepEntry>;
      readonly tooDeepDirectories: number;
    },
    FsError
  >;
  /**
   * Every real directory below the root (relative paths; symlinks are not directories),
   * leaving out (neither listed nor entered) directories named in `skipNames`, whose
   * name is not UTF-8, or whose path is longer than {@link nameablePathBytes}:
   * a walk that never looks at a file (one directory listing per directory, no `lstat`).
   */
  readonly listDirectories: (
    skipNames?: ReadonlySet<string>,
  ) => Effect.Effect<ReadonlyArray<string>, FsError>;
  /** `lstat` of one path; `None` if it (or a directory on the way) does not exist. */
  readonly info: (path: string) => Effect.Effect<Option.Option<PathInfo>, FsError>;
  /**
   * Reads a regular file and the `fstat` of the very file read; never follows a final
   * symlink, never blocks on a FIFO (`NotRegularFile`), `IsADirectory` for a directory.
   * `TooLarge` when it holds more than `maxBytes` (by its `fstat`, or as it grows while
   * being read): never more than `maxBytes` and one chunk is read, so a file someone
   * keeps appending to cannot fill the process's memory.
   */
  readonly readFile: (
    path: string,
    maxBytes: number,
  ) => Effect.Effect<{ readonly bytes: Uint8Array; readonly info: PathInfo }, FsError>;
  /**
   * Atomically puts `bytes` at `path` (temp file + rename or link in its directory) only
   * if the path holds what `expected` says, without ever overwriting anything else (see
   * {@link GuardedOutcome}). The directory must exist. A file replaced keeps its
   * permission bits (without setuid, setgid and sticky), a new one gets `mode`, both
   * under the umask.
   */
  readonly replaceFile: (
    path: string,
    bytes: Uint8Array,
    expected: Expectation,
    mode: number,
  ) => Effect.Effect<GuardedOutcome, FsError>;
  /** Removes the file at `path` only if it holds what `expected` says (a `File`). */
  readonly removeFile: (
    path: string,
    expected: Expectation,
  ) => Effect.Effect<GuardedOutcome, FsError>;
  /** Removes a file of our own making (a leftover temp file) without any guard; missing is fine. */
  readonly removeLeftover: (path: string) => Effect.Effect<void, FsError>;
  /**
   * The writes that reached files this tree (or a subtree of it) replaced or removed
   * with a `Done` or `Overtaken` outcome after that outcome was decided: a process that
   * had the old file open (an append, an in-place save) and wrote a little late. Each
   * comes with its path relative to this tree (a subtree answers only for files below
   * it) and what the old file holds
   * now; the caller must bring them back as it does `Overtaken` bytes. The files are
   * checked and let go by this call (only the last few dozen replaced are watched, so a
   * caller asks once its rewrite is over); a later call reports only later replaces.
   */
  readonly lateWrites: () => Effect.Effect<
    ReadonlyArray<{ readonly path: string; readonly bytes: Uint8Array }>,
    FsError
  >;
  /**
   * Gives the file at `from` the name `to` in the same directory, only if `to` is free
   * (never replacing anything); `false` when `to` exists. For putting back a file set
   * aside by an interrupted replace.
   */
  readonly restoreName: (from: string, to: string) => Effect.Effect<boolean, FsError>;
  /**
   * Creates `directory` and every missing directory above it (mode `mode` under the
   * umask), one component at a time through the tree; fails `NotADirectory` when a
   * component exists and is not a real directory (a file, a symlink).
   */
  readonly makeDirectories: (directory: string, mode: number) => Effect.Effect<void, FsError>;
  /**
   * Removes `directory` only if it is an empty real directory; anything else is left and
   * succeeds. `""` is the tree's own root, removed only while it is still where it was
   * opened (never an empty directory a swapped path leads to): once it is removed, the
   * tree is done with.
   */
  readonly removeEmptyDirectory: (directory: string) => Effect.Effect<void, FsError>;
  /** Opens `directory` (relative) as a tree of its own, sharing this tree's handles and scope. */
  readonly subtree: (directory: string) => Effect.Effect<RootedTree, FsError>;
}

/** The operations of a host file system. */
export interface FileSystemService {
  /**
   * Lists every entry below `root` recursively (not `root` itself) without following
   * symlinks, in no particular order. Does not descend into directories whose name is
   * in `skipNames` (e.g. `.git`), and reports them as entries of kind `directory`.
   * Fails with `NotFound` if `root` does not exist, `NotADirectory` if it is not one.
   */
  readonly walk: (
    root: string,
    skipNames?: ReadonlySet<string>,
  ) => Effect.Effect<ReadonlyArray<WalkEntry>, FsError>;
  /** `lstat` of one path; `None` if it does not exist. */
  readonly info: (path: string) => Effect.Effect<Option.Option<PathInfo>, FsError>;
  /**
   * Reads a regular file. Opens without following a final symlink and without blocking
   * on a FIFO; fails with `NotRegularFile` if the path is not a regular file at open time.
   */
  readonly readFile: (path: string) => Effect.Effect<Uint8Array, FsError>;
  /**
   * Reads `length` bytes at `offset` of a regular file (fails with `Other` on a short read).
   */
  readonly readRange: (
    path: string,
    offset: number,
    length: number,
  ) => Effect.Effect<Uint8Array, FsError>;
  /**
   * Atomically replaces `path` with `bytes`: writes a temp file in the same directory,
   * optionally fsyncs it, renames it over `path` (and fsyncs the directory when
   * `durable`). A crash never leaves a half-written `path`. Parents must exist.
   */
  readonly writeFileAtomic: (
    path: string,
    bytes: Uint8Array,
    options: { readonly mode: number; readonly durable: boolean },
  ) => Effect.Effect<void, FsError>;
  /**
   * Makes `path` another name of the regular file `existing` (a hard link): both name the
   * same bytes from then on. Fails `NotFound` if `existing` is missing, `Exists` if
   * `path` exists, `Other` when the two are on different file systems or links are not
   * supported. The new name is durable only once its directory is synced
   * ({@link FileSystemService.syncDirectory}); the content is as durable as `existing`'s.
   */
  readonly linkFile: (existing: string, path: string) => Effect.Effect<void, FsError>;
  /**
   * Makes the entries of directory `path` durable (fsync of the directory); a file
   * system that cannot sync directories is accepted as it is.
   */
  readonly syncDirectory: (path: string) => Effect.Effect<void, FsError>;
  /** Removes a file (or symlink/special file); removing a missing path succeeds. */
  readonly removeFile: (path: string) => Effect.Effect<void, FsError>;
  /** Creates a directory and missing parents with `mode`; an existing directory is fine. */
  readonly makeDirectory: (path: string, mode: number) => Effect.Effect<void, FsError>;
  /** Removes a directory only if it is empty; a missing or non-empty directory is left alone and succeeds. */
  readonly removeEmptyDirectory: (path: string) => Effect.Effect<void, FsError>;
  /** Removes a directory tree (used for private state only). Missing is fine. */
  readonly removeTree: (path: string) => Effect.Effect<void, FsError>;
  /** Resolves symlinks in an existing path (`realpath`); `NotFound` if it does not exist. */
  readonly realPath: (path: string) => Effect.Effect<string, FsError>;
  /**
   * Takes an exclusive cross-process lock represented by the file `path`, waiting up to
   * `timeoutMs` for a live holder; a holder that died (even by SIGKILL) never blocks
   * anyone. Returns the effect that releases it (idempotent, never fails). Fails with
   * `Busy` after the timeout.
   */
  readonly lock: (path: string, timeoutMs: number) => Effect.Effect<Effect.Effect<void>, FsError>;
  /**
   * Removes the lock file at `path` if its holder is gone, judged as {@link lock} judges
   * it, without ever taking the lock or deleting one a live process holds: for a lock
   * file left behind (one {@link setAsideLockName} names, or a dead process's). `true`
   * when it was removed or is gone, `false` while its holder lives. Fails with the
   * file system's error.
   */
  readonly removeDeadLock: (path: string) => Effect.Effect<boolean, FsError>;
  /**
   * Opens the existing directory `root` (an absolute path the caller trusts: the
   * workspace root) as a {@link RootedTree}, closed when `Scope` closes. `resolvedAs` is
   * the canonical path `root` resolved to when the caller trusted it (`root` itself by
   * default: a canonical root). Fails `NotFound`, `NotADirectory` (also when `root` is a
   * symlink), and `Moved` when `root` leads elsewhere than `resolvedAs` now: a directory
   * above it was swapped for a symlink since (nothing is then reached through the link).
   */
  readonly openTree: (
    root: string,
    resolvedAs?: string,
  ) => Effect.Effect<RootedTree, FsError, Scope.Scope>;
}

/** The FileSystem port. */
export class FileSystem extends Context.Tag("quire/FileSystem")<FileSystem, FileSystemService>() {}

/**
 * The name (last path segment) of an adapter's temp file of an atomic write: its id is 12
 * hex digits of the writing process and a counter in base 36 (adapters/tempNames.ts), so
 * a person's `.notes.quire-draft.tmp` is not taken for one. One found by a scan under the
 * copy's lock is the leftover of a killed process: never notebook state (its content
 * was on its way from the store or a merge, so removing it loses nothing of a person's).
 */
export const leftoverTempName = /^\.[^/]*\.quire-[0-9a-f]{12}[0-9a-z]*\.tmp$/;

/**
 * The name (last path segment) of a lock file that {@link FileSystemService.lock} set
 * aside to remove it, its holder being gone: the lock's own name and `.stale-` with 12
 * hex digits, once or more (a steal of a set-aside file sets it aside again). The
 * adapter deletes it right away; one is left only when its process was killed in
 * between, and {@link FileSystemService.removeDeadLock} removes it once its holder is
 * gone. Group 1 is the lock's name.
 */
export const setAsideLockName = /^(.+?)(?:\.stale-[0-9a-f]{12})+$/;

/**
 * The name of a file a guarded replace or remove of a {@link RootedTree} moved out of the
 * way; one found by a scan under the copy's lock was left by a process killed mid-replace.
 * Group 1 is the original name for `.aside`, only its first 200 bytes for `.cut`.
 */
export const setAsideName = /^\.(.+)\.quire-[0-9a-f]{12}[0-9a-z]*\.(aside|cut)$/;
