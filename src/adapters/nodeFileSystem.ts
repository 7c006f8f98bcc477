/**
 * The FileSystem port over the host file system (`node:fs`).
 *
 * Walks, `info` and non-durable writes are synchronous on purpose: each promise call is
 * a thread-pool round trip, so `readdirSync` + `lstatSync` lists 10,000 files about
 * three times faster than the promise API, and writing 10,000 small files atomically
 * (temp, write, close, rename, lstat) takes ~0.25 s instead of ~0.65 s. So are reads of
 * files up to 1 MiB. These calls are short metadata operations, reads of a note or of
 * private state, or writes of one note; larger reads and durable writes (with their
 * fsyncs) go through the thread pool (fsCallbacks.ts) so large files and disk flushes do
 * not stall the event loop. Except while this process has an fsync in flight or had one
 * moments ago: then a synchronous create or rename can wait on the file system's
 * journal behind it, blocking the event loop for that long (measured: 8 contended
 * writers in one process, the event loop busy 90% of the time, a third of it in
 * synchronous open and rename), so non-durable writes take the thread pool too.
 */
import * as nodeFs from "node:fs";
import * as fsp from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { Effect, Layer, Option } from "effect";
import {
  FileSystem,
  FsError,
  type FileSystemService,
  type WalkEntry,
} from "../ports/FileSystem.js";
import { openCheckedPaths } from "./checkedPaths.js";
import { openDirectoryHandles } from "./directoryHandles.js";
import { fd, journalBusy } from "./fsCallbacks.js";
import { makeRootedTree, type SyncCalls } from "./rootedTree.js";
import { tempNameFor } from "./tempNames.js";
import { errnoCode, mapError, tooLarge } from "./fsErrno.js";
import { lock, removeDeadLock } from "./lockFiles.js";
import { kindOf, toPathInfo } from "./fsStats.js";
import { makeDirectories } from "./makeDirectories.js";

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = nodeFs.constants;

/** Opening a path to read it: never follow a final symlink, never block on a FIFO. */
const readFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;
/** Creating a temp file: it must be new, and never a planted symlink. */
const createFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;

/** Maps a node fs failure to an FsError (see fsErrno.ts); exported here as before. */
export { mapError };

const isGone = (error: unknown): boolean => {
  const code = errnoCode(error);
  return code === "ENOENT" || code === "ENOTDIR";
};

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Node decodes names lossily, so a name that is not UTF-8 would come back with U+FFFD
 * and then not be found again. Only names that contain U+FFFD are re-read as bytes.
 */
const assertUtf8Names = (directory: string, names: ReadonlyArray<string>): void => {
  if (!names.some((name) => name.includes("\uFFFD"))) return;
  for (const raw of nodeFs.readdirSync(directory, { encoding: "buffer" })) {
    try {
      utf8.decode(raw);
    } catch {
      throw new FsError({
        reason: "Other",
        path: directory,
        message: `a name in ${directory} is not valid UTF-8: ${raw.toString("utf8")}`,
      });
    }
  }
};

/** Iterative so that depth never matters; entries that vanish mid-walk are skipped. */
const walkSync = (root: string, skipNames: ReadonlySet<string>): Array<WalkEntry> => {
  const entries: Array<WalkEntry> = [];
  const pending: Array<string> = [""];
  for (let relative = pending.pop(); relative !== undefined; relative = pending.pop()) {
    const directory = relative === "" ? root : `${root}/${relative}`;
    let names: Array<string>;
    try {
      names = nodeFs.readdirSync(directory);
    } catch (error) {
      if (relative !== "" && isGone(error)) continue;
      throw mapError(error, directory);
    }
    assertUtf8Names(directory, names);
    for (const name of names) {
      const entryPath = relative === "" ? name : `${relative}/${name}`;
      const absolute = `${root}/${entryPath}`;
      let stats: nodeFs.Stats | undefined;
      try {
        stats = nodeFs.lstatSync(absolute, { throwIfNoEntry: false });
      } catch (error) {
        if (isGone(error)) continue;
        throw mapError(error, absolute);
      }
      if (stats === undefined) continue;
      const kind = kindOf(stats);
      entries.push({
        relativePath: entryPath,
        kind,
        size: kind === "file" ? stats.size : 0,
        mtimeMs: stats.mtimeMs,
        ctimeMs: stats.ctimeMs,
        ino: stats.ino,
      });
      if (kind === "directory" && !skipNames.has(name)) pending.push(entryPath);
    }
  }
  return entries;
};

const noSkips: ReadonlySet<string> = new Set();

const walk = (root: string, skipNames: ReadonlySet<string> = noSkips) =>
  Effect.try({ try: () => walkSync(root, skipNames), catch: (error) => mapError(error, root) });

const info = (path: string) =>
  Effect.try({
    try: () => {
      try {
        return Option.some(toPathInfo(nodeFs.lstatSync(path)));
      } catch (error) {
        // A parent that is a file (ENOTDIR) also means the path does not exist.
        if (isGone(error)) return Option.none();
        throw error;
      }
    },
    catch: (error) => mapError(error, path),
  });

/**
 * Files (and ranges) up to this size are read synchronously: for the notes and private
 * state files of a commit, the thread pool's four round trips per file (open, fstat,
 * read, close) cost more than the read (measured: 8 contended library writers, ~10 %
 * more commits/s with synchronous reads, in each of 6 alternating pairs). Larger ones
 * go through the thread pool so that reading them does not stall the event loop.
 */
const syncReadLimit = 1024 * 1024;

/** The size of the regular file `stats` describes; fails for anything else. */
const regularFileSize = (stats: nodeFs.Stats, path: string): number => {
  if (stats.isDirectory()) {
    throw new FsError({ reason: "IsADirectory", path, message: `${path} is a directory` });
  }
  if (!stats.isFile()) {
    throw new FsError({
      reason: "NotRegularFile",
      path,
      message: `${path} is a ${kindOf(stats)}, not a regular file`,
    });
  }
  return stats.size;
};

/** Opens `path` for reading and proves it is a regular file via `fstat` of the descriptor. */
const openRegular = async (path: string): Promise<{ descriptor: number; size: number }> => {
  let descriptor: number;
  try {
    descriptor = await fd.open(path, readFlags);
  } catch (error) {
    throw mapError(error, path, true);
  }
  try {
    return { descriptor, size: regularFileSize(await fd.fstat(descriptor), path) };
  } catch (error) {
    await fd.close(descriptor);
    throw error;
  }
};

/** {@link openRegular}, synchronously. */
const openRegularSync = (path: string): { descriptor: number; size: number } => {
  let descriptor: number;
  try {
    descriptor = nodeFs.openSync(path, readFlags);
  } catch (error) {
    throw mapError(error, path, true);
  }
  try {
    return { descriptor, size: regularFileSize(nodeFs.fstatSync(descriptor), path) };
  } catch (error) {
    nodeFs.closeSync(descriptor);
    throw error;
  }
};

/** Reads `length` bytes at `offset`, or fewer if the file ends first. */
const readAt = async (
  descriptor: number,
  offset: number,
  length: number,
): Promise<{ buffer: Uint8Array; filled: number }> => {
  const buffer = new Uint8Array(length);
  let filled = 0;
  while (filled < length) {
    const bytesRead = await fd.read(descriptor, buffer, filled, length - filled, offset + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return { buffer, filled };
};

/** {@link readAt}, synchronously. */
const readAtSync = (
  descriptor: number,
  offset: number,
  length: number,
): { buffer: Uint8Array; filled: number } => {
  const buffer = new Uint8Array(length);
  let filled = 0;
  while (filled < length) {
    const bytesRead = nodeFs.readSync(descriptor, buffer, filled, length - filled, offset + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return { buffer, filled };
};

/** The chunks read so far as one array. */
const joined = (chunks: readonly Uint8Array[], total: number): Uint8Array =>
  chunks.length === 1 && chunks[0] !== undefined ? chunks[0] : Buffer.concat(chunks, total);

/** How much to read next: the size fstat saw, then on until the end (a file that grew meanwhile is read whole). */
const nextReadLength = (size: number, chunksRead: number): number =>
  chunksRead === 0 ? Math.max(size, 1) : 64 * 1024;

/**
 * Everything an open file holds from its start, through the thread pool (`size` from
 * fstat); EFBIG once it holds more than `maxBytes` (a file growing while it is read).
 */
const readToEnd = async (
  descriptor: number,
  size: number,
  maxBytes = Number.POSITIVE_INFINITY,
): Promise<Uint8Array> => {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (let round = 0; ; round++) {
    if (total > maxBytes) throw tooLarge(maxBytes);
    const want = nextReadLength(size, round);
    const { buffer, filled } = await readAt(descriptor, total, want);
    if (filled > 0) chunks.push(filled === want ? buffer : buffer.subarray(0, filled));
    total += filled;
    if (filled < want) break;
  }
  return joined(chunks, total);
};

const readFileAsync = (path: string) =>
  Effect.tryPromise({
    try: async (): Promise<Uint8Array> => {
      const { descriptor, size } = await openRegular(path);
      try {
        return await readToEnd(descriptor, size);
      } finally {
        await fd.close(descriptor);
      }
    },
    catch: (error) => mapError(error, path),
  });

/** The whole file if it is at most {@link syncReadLimit} bytes when opened, else `undefined`. */
const readSmallFileSync = (path: string): Uint8Array | undefined => {
  const { descriptor, size } = openRegularSync(path);
  try {
    if (size > syncReadLimit) return undefined;
    const chunks: Uint8Array[] = [];
    let total = 0;
    for (let round = 0; ; round++) {
      const want = nextReadLength(size, round);
      const { buffer, filled } = readAtSync(descriptor, total, want);
      if (filled > 0) chunks.push(filled === want ? buffer : buffer.subarray(0, filled));
      total += filled;
      if (filled < want) break;
    }
    return joined(chunks, total);
  } finally {
    nodeFs.closeSync(descriptor);
  }
};

const readFile = (path: string) =>
  Effect.try({ try: () => readSmallFileSync(path), catch: (error) => mapError(error, path) }).pipe(
    // A large file is opened again through the thread pool; whatever is at the path then is read.
    Effect.flatMap((small) => (small === undefined ? readFileAsync(path) : Effect.succeed(small))),
  );

const shortRead = (path: string, offset: number, length: number, filled: number): FsError =>
  new FsError({
    reason: "Other",
    path,
    message: `short read of ${path}: wanted ${length} bytes at ${offset}, got ${filled}`,
  });

const readRangeSync = (path: string, offset: number, length: number) =>
  Effect.try({
    try: (): Uint8Array => {
      const { descriptor } = openRegularSync(path);
      try {
        const { buffer, filled } = readAtSync(descriptor, offset, length);
        if (filled < length) throw shortRead(path, offset, length, filled);
        return buffer;
      } finally {
        nodeFs.closeSync(descriptor);
      }
    },
    catch: (error) => mapError(error, path),
  });

const readRangeAsync = (path: string, offset: number, length: number) =>
  Effect.tryPromise({
    try: async (): Promise<Uint8Array> => {
      const { descriptor } = await openRegular(path);
      try {
        const { buffer, filled } = await readAt(descriptor, offset, length);
        if (filled < length) throw shortRead(path, offset, length, filled);
        return buffer;
      } finally {
        await fd.close(descriptor);
      }
    },
    catch: (error) => mapError(error, path),
  });

const readRange = (path: string, offset: number, length: number) =>
  length <= syncReadLimit
    ? readRangeSync(path, offset, length)
    : readRangeAsync(path, offset, length);

/**
 * The temp file is created with `mode` and the process umask applies (as for any
 * `open(2)`); it is never chmod-ed, so 0644 under umask 022 stays 0644 and 0600 stays 0600.
 */
const writeFileAtomic = (
  path: string,
  bytes: Uint8Array,
  options: { readonly mode: number; readonly durable: boolean },
) =>
  options.durable || journalBusy()
    ? writeFileAtomicAsync(path, bytes, options)
    : writeFileAtomicSync(path, bytes, options);

const writeFileAtomicSync = (path: string, bytes: Uint8Array, options: { readonly mode: number }) =>
  Effect.try({
    try: () => {
      const temp = join(dirname(path), tempNameFor(basename(path)));
      const fd = nodeFs.openSync(temp, createFlags, options.mode);
      try {
        try {
          for (let written = 0; written < bytes.length;)
            written += nodeFs.writeSync(fd, bytes, written, bytes.length - written);
        } finally {
          nodeFs.closeSync(fd);
        }
        nodeFs.renameSync(temp, path);
      } catch (error) {
        try {
          nodeFs.unlinkSync(temp);
        } catch {
          // Already gone (or the rename happened): nothing of ours is left behind.
        }
        throw error;
      }
    },
    catch: (error) => mapError(error, path),
  });

const writeFileAtomicAsync = (
  path: string,
  bytes: Uint8Array,
  options: { readonly mode: number; readonly durable: boolean },
) =>
  Effect.tryPromise({
    try: async () => {
      const directory = dirname(path);
      const temp = join(directory, tempNameFor(basename(path)));
      const descriptor = await fd.open(temp, createFlags, options.mode);
      try {
        try {
          await fd.writeAll(descriptor, bytes);
          if (options.durable) await fd.fsync(descriptor);
        } finally {
          await fd.close(descriptor);
        }
        await fd.rename(temp, path);
      } catch (error) {
        await fsp.rm(temp, { force: true }).catch(() => undefined);
        throw error;
      }
      if (options.durable) await fd.syncDirectory(directory);
    },
    catch: (error) => mapError(error, path),
  });

const linkFile = (existing: string, path: string) =>
  Effect.tryPromise({
    try: () => fd.link(existing, path),
    // EEXIST names the new path, any other failure the existing one.
    catch: (error) => mapError(error, errnoCode(error) === "EEXIST" ? path : existing),
  });

const syncDirectoryAt = (path: string) =>
  Effect.tryPromise({ try: () => fd.syncDirectory(path), catch: (error) => mapError(error, path) });

const removeFile = (path: string) =>
  Effect.tryPromise({
    try: async () => {
      try {
        await fd.unlink(path);
      } catch (error) {
        if (errnoCode(error) !== "ENOENT") throw error;
      }
    },
    catch: (error) => mapError(error, path),
  });

/** Whether `path` is a directory now (not through a symlink); never fails. */
const isDirectorySync = (path: string): boolean => {
  try {
    return nodeFs.lstatSync(path).isDirectory();
  } catch {
    return false;
  }
};

// A call's private directory usually exists already: one synchronous lstat says so,
// without a thread-pool round trip for a mkdir that would only find it there.
const makeDirectory = (path: string, mode: number) =>
  Effect.suspend(() =>
    isDirectorySync(path)
      ? Effect.void
      : Effect.tryPromise({
          try: async () => {
            await makeDirectories(path, mode);
          },
          catch: (error) => mapError(error, path),
        }),
  );

const removeEmptyDirectory = (path: string) =>
  Effect.tryPromise({
    try: async () => {
      try {
        await fsp.rmdir(path);
      } catch (error) {
        const code = errnoCode(error);
        if (code !== "ENOENT" && code !== "ENOTEMPTY" && code !== "EEXIST") throw error;
      }
    },
    catch: (error) => mapError(error, path),
  });

const removeTree = (path: string) =>
  Effect.tryPromise({
    try: () => fsp.rm(path, { recursive: true, force: true }),
    catch: (error) => mapError(error, path),
  });

/** Synchronous: resolving a path reads only metadata, which the kernel usually has cached. */
const realPath = (path: string) =>
  Effect.try({
    try: () => nodeFs.realpathSync.native(path),
    catch: (error) => mapError(error, path),
  });

/** The synchronous calls a rooted tree is built on, over `node:fs`. */
const treeCalls: SyncCalls = {
  open: (path, flags, mode) => nodeFs.openSync(path, flags, mode),
  close: (descriptor) => nodeFs.closeSync(descriptor),
  fstat: (descriptor) => nodeFs.fstatSync(descriptor),
  lstat: (path) => nodeFs.lstatSync(path),
  readdir: (path) => nodeFs.readdirSync(path),
  readdirKinds: (path) =>
    nodeFs
      .readdirSync(path, { withFileTypes: true })
      .map((entry) => ({ name: entry.name, directory: entry.isDirectory() })),
  readdirRaw: (path) => nodeFs.readdirSync(path, { encoding: "buffer" }),
  read: (descriptor, buffer, offset, length, position) =>
    nodeFs.readSync(descriptor, buffer, offset, length, position),
  write: (descriptor, buffer, offset, length) =>
    nodeFs.writeSync(descriptor, buffer, offset, length),
  rename: (from, to) => nodeFs.renameSync(from, to),
  link: (existing, path) => nodeFs.linkSync(existing, path),
  unlink: (path) => nodeFs.unlinkSync(path),
  mkdir: (path, mode) => nodeFs.mkdirSync(path, { mode }),
  rmdir: (path) => nodeFs.rmdirSync(path),
  flags: nodeFs.constants,
  // A large note is read through the thread pool so the event loop is not stalled.
  readLarge: { above: syncReadLimit, read: readToEnd },
};

/** Options of {@link make}. */
export interface NodeFileSystemOptions {
  /**
   * Whether rooted trees use directory handles where the host has them (default true);
   * `false` forces checked paths, the fallback of hosts without `/proc/self/fd` (tests).
   */
  readonly directoryHandles?: boolean;
  /**
   * Wraps the synchronous calls rooted trees make (tests: to act between two of them, as
   * a racing process would); the identity by default.
   */
  readonly interpose?: (calls: SyncCalls) => SyncCalls;
}

// The same `realpath` as the port's realPath (the native one: on a case-insensitive file
// system it spells the path as the disk does), so that a root the caller resolved with
// it compares equal.
const checkedPathCalls = {
  lstat: (path: string) => nodeFs.lstatSync(path),
  realpath: (path: string) => nodeFs.realpathSync.native(path),
};

const openTreeWith = (options: NodeFileSystemOptions) => (root: string, resolvedAs?: string) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => {
        const handles =
          options.directoryHandles === false ? undefined : openDirectoryHandles(root, resolvedAs);
        const directories = handles ?? openCheckedPaths(checkedPathCalls, root, resolvedAs);
        directories.open("");
        const calls = options.interpose === undefined ? treeCalls : options.interpose(treeCalls);
        return makeRootedTree(calls, directories, root);
      },
      catch: (error) => mapError(error, root),
    }),
    (opened) => Effect.sync(() => opened.close()),
  ).pipe(Effect.map(({ tree }) => tree));

/**
 * A {@link FileSystemService} over `node:fs`. Errors: every method fails only with
 * `FsError` (see the port for the reasons). Notes beyond the port:
 * - `readFile` of a directory fails `IsADirectory`; of a FIFO, socket, device or final
 *   symlink `NotRegularFile`. Symlinked parent directories are followed (O_NOFOLLOW
 *   covers the last component only); walks never produce such paths.
 * - `walk` fails `Other` if a name is not valid UTF-8 (it could not be named again), and
 *   skips entries that vanish while it runs.
 * - `info` is `None` also when a parent is a file (ENOTDIR): such a path cannot exist.
 * - `writeFileAtomic` names its temp file `.<name>.quire-<12 hex><counter, base 36>.tmp` (the name part cut
 *   to 200 bytes); modes are subject to the umask.
 * - `lock` (lockFiles.ts) writes `{pid, host, boot, token}` JSON; a holder on another host is always
 *   presumed alive (its pid cannot be checked), so such a file must be removed by hand.
 */
export const make = (options: NodeFileSystemOptions = {}): FileSystemService => ({
  walk,
  info,
  readFile,
  readRange,
  writeFileAtomic,
  linkFile,
  syncDirectory: syncDirectoryAt,
  removeFile,
  makeDirectory,
  removeEmptyDirectory,
  removeTree,
  realPath,
  lock,
  removeDeadLock,
  openTree: openTreeWith(options),
});

/** The {@link FileSystem} port provided by {@link make}. */
export const layer: Layer.Layer<FileSystem> = Layer.succeed(FileSystem, make());
