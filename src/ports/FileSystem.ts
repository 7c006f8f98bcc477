/**
 * The file system port: exactly what the use cases need from a host file system,
 * for working copies (caller-owned) and private state (server-owned). All paths are
 * absolute host paths; the adapter never follows symlinks while walking.
 */
import { Context, Data, type Effect, type Option } from "effect";

/**
 * The closed set of reasons a file system request can fail with. Adapters map node
 * errno codes (and memfs's imitations of them) into these.
 *
 * - `NotFound` (ENOENT), `NotADirectory` (ENOTDIR), `IsADirectory` (EISDIR), `Exists` (EEXIST)
 * - `NotRegularFile`: the path is not a regular file (FIFO, socket, device, symlink) when a
 *   read needed one; the read never blocks on a FIFO.
 * - `PermissionDenied` (EACCES, EPERM), `ReadOnly` (EROFS), `NoSpace` (ENOSPC, EDQUOT),
 *   `TooManyOpenFiles` (EMFILE, ENFILE), `NameTooLong` (ENAMETOOLONG)
 * - `Busy`: a lock is held by another live process.
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
  | "Busy"
  | "Other";

/** The only error a FileSystem method fails with; `path` is the host path involved. */
export class FsError extends Data.TaggedError("FsError")<{
  readonly reason: FsErrorReason;
  readonly path: string;
  readonly message: string;
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

/** Metadata of a single path, from `lstat`. */
export interface PathInfo {
  readonly kind: EntryKind;
  readonly size: number;
  readonly mtimeMs: number;
  readonly ctimeMs: number;
  readonly ino: number;
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
}

/** The FileSystem port. */
export class FileSystem extends Context.Tag("quire/FileSystem")<FileSystem, FileSystemService>() {}
