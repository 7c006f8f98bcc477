/**
 * The FileSystem port over an in-memory `memfs` volume, for tests. Same semantics as
 * the node adapter where memfs can express them; memfs calls are synchronous, so every
 * method is one `Effect.try`.
 *
 * Not modelled: FIFOs, sockets and devices (memfs has none); the umask (modes are
 * stored exactly as given); durability (`durable` fsyncs are no-ops); other processes
 * (the lock is exclusive between fibers of this process only). Where memfs departs
 * from Linux (unlink of a directory, rename over a directory, recursive mkdir over a
 * file, `rm -r` through a symlink) the adapter checks first and answers as Linux does.
 */
import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { basename, dirname, join } from "node:path";
import { Clock, Effect, Layer, Option } from "effect";
import { Volume, createFsFromVolume, type IFs } from "memfs";
import {
  FileSystem,
  FsError,
  type FileSystemService,
  type WalkEntry,
} from "../ports/FileSystem.js";
import { openCheckedPaths } from "./checkedPaths.js";
import { errnoCode, mapError as mapFsError } from "./fsErrno.js";
import { kindOf, toPathInfo, type StatsLike } from "./fsStats.js";
import { makeRootedTree, type SyncCalls } from "./rootedTree.js";

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = constants;
const readFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;
const createFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;
const pollMs = 25;

/**
 * Maps any failure of a memfs call on `path` to an {@link FsError}: memfs throws
 * node-style errno errors, so this is the node adapter's mapping (fsErrno.ts).
 */
export const mapError = mapFsError;

const fail = (reason: FsError["reason"], path: string, message: string): FsError =>
  new FsError({ reason, path, message });

const asString = (value: unknown): string =>
  Buffer.isBuffer(value) ? value.toString("utf8") : String(value);

/** The service and the volume behind it, so tests can plant symlinks and inspect files. */
export interface MemFileSystem {
  readonly service: FileSystemService;
  readonly vol: Volume;
}

/**
 * A {@link FileSystemService} over a fresh memfs volume holding `initial` (absolute path →
 * UTF-8 content). Errors: only `FsError`, with the node adapter's reasons.
 */
export const make = (initial: Readonly<Record<string, string>> = {}): MemFileSystem => {
  const vol = Volume.fromJSON({ ...initial });
  const fs: IFs = createFsFromVolume(vol);
  const heldTokens = new Set<string>();

  const lstatOrUndefined = (path: string): StatsLike | undefined => {
    try {
      return fs.lstatSync(path);
    } catch (error) {
      const code = errnoCode(error);
      if (code === "ENOENT" || code === "ENOTDIR") return undefined;
      throw error;
    }
  };

  const run = <A>(path: string, body: () => A, opening = false): Effect.Effect<A, FsError> =>
    Effect.try({ try: body, catch: (error) => mapError(error, path, opening) });

  const readdirNames = (directory: string): Array<string> =>
    fs.readdirSync(directory).map(asString);

  const walk = (root: string, skipNames: ReadonlySet<string> = new Set()) =>
    run(root, () => {
      const entries: Array<WalkEntry> = [];
      const pending: Array<string> = [""];
      for (let relative = pending.pop(); relative !== undefined; relative = pending.pop()) {
        const directory = relative === "" ? root : `${root}/${relative}`;
        for (const name of readdirNames(directory)) {
          const entryPath = relative === "" ? name : `${relative}/${name}`;
          const stats = lstatOrUndefined(`${root}/${entryPath}`);
          if (stats === undefined) continue;
          const info = toPathInfo(stats);
          entries.push({ relativePath: entryPath, ...info });
          if (info.kind === "directory" && !skipNames.has(name)) pending.push(entryPath);
        }
      }
      return entries;
    });

  const info = (path: string) =>
    run(path, () => {
      const stats = lstatOrUndefined(path);
      return stats === undefined ? Option.none() : Option.some(toPathInfo(stats));
    });

  const withRegularFile = <A>(path: string, use: (fd: number, size: number) => A): A => {
    let fd: number;
    try {
      fd = fs.openSync(path, readFlags);
    } catch (error) {
      throw mapError(error, path, true);
    }
    try {
      const stats = fs.fstatSync(fd);
      if (stats.isDirectory()) throw fail("IsADirectory", path, `${path} is a directory`);
      if (!stats.isFile())
        throw fail("NotRegularFile", path, `${path} is a ${kindOf(stats)}, not a regular file`);
      return use(fd, stats.size);
    } finally {
      fs.closeSync(fd);
    }
  };

  const readAt = (path: string, fd: number, offset: number, length: number): Uint8Array => {
    const buffer = Buffer.alloc(length);
    let filled = 0;
    while (filled < length) {
      const bytesRead = fs.readSync(fd, buffer, filled, length - filled, offset + filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    if (filled < length) {
      throw fail(
        "Other",
        path,
        `short read of ${path}: wanted ${length} bytes at ${offset}, got ${filled}`,
      );
    }
    return buffer;
  };

  const readFile = (path: string) =>
    run(path, () => withRegularFile(path, (fd, size) => readAt(path, fd, 0, size)));

  const readRange = (path: string, offset: number, length: number) =>
    run(path, () => withRegularFile(path, (fd) => readAt(path, fd, offset, length)));

  const writeFileAtomic = (
    path: string,
    bytes: Uint8Array,
    options: { readonly mode: number; readonly durable: boolean },
  ) =>
    run(path, () => {
      if (lstatOrUndefined(path)?.isDirectory() === true)
        throw fail("IsADirectory", path, `${path} is a directory`);
      const temp = join(
        dirname(path),
        `.${basename(path).slice(0, 200)}.quire-${randomBytes(6).toString("hex")}.tmp`,
      );
      const fd = fs.openSync(temp, createFlags, options.mode);
      try {
        try {
          fs.writeSync(fd, bytes);
          if (options.durable) fs.fsyncSync(fd);
        } finally {
          fs.closeSync(fd);
        }
        fs.renameSync(temp, path);
      } catch (error) {
        fs.rmSync(temp, { force: true });
        throw error;
      }
    });

  const linkFile = (existing: string, path: string) =>
    run(existing, () => {
      const stats = lstatOrUndefined(existing);
      if (stats === undefined) throw fail("NotFound", existing, `${existing} does not exist`);
      if (!stats.isFile()) throw fail("NotRegularFile", existing, `${existing} is not a file`);
      if (lstatOrUndefined(path) !== undefined) throw fail("Exists", path, `${path} exists`);
      fs.linkSync(existing, path);
    });

  // memfs keeps everything in memory: its entries are as durable as they will get.
  const syncDirectory = (path: string) =>
    run(path, () => {
      if (lstatOrUndefined(path)?.isDirectory() !== true)
        throw fail("NotFound", path, `${path} is not a directory`);
    });

  const removeFile = (path: string) =>
    run(path, () => {
      const stats = lstatOrUndefined(path);
      if (stats === undefined) return;
      if (stats.isDirectory()) throw fail("IsADirectory", path, `${path} is a directory`);
      fs.unlinkSync(path);
    });

  const makeDirectory = (path: string, mode: number) =>
    run(path, () => {
      fs.mkdirSync(path, { recursive: true, mode });
      if (lstatOrUndefined(path)?.isDirectory() !== true)
        throw fail("Exists", path, `${path} exists and is not a directory`);
    });

  const removeEmptyDirectory = (path: string) =>
    run(path, () => {
      try {
        fs.rmdirSync(path);
      } catch (error) {
        const code = errnoCode(error);
        if (code !== "ENOENT" && code !== "ENOTEMPTY" && code !== "EEXIST") throw error;
      }
    });

  /** memfs's `rm -r` descends through symlinks; this removes links themselves. */
  const removeTree = (path: string) =>
    run(path, () => {
      const root = lstatOrUndefined(path);
      if (root === undefined) return;
      if (!root.isDirectory()) return fs.unlinkSync(path);
      const directories: Array<string> = [];
      const pending: Array<string> = [path];
      for (let directory = pending.pop(); directory !== undefined; directory = pending.pop()) {
        directories.push(directory);
        for (const name of readdirNames(directory)) {
          const child = `${directory}/${name}`;
          if (lstatOrUndefined(child)?.isDirectory() === true) pending.push(child);
          else fs.unlinkSync(child);
        }
      }
      // Every entry is gone by now, links included. memfs's rmdir can still refuse a
      // directory emptied after a rename replaced one of its files (ENOTEMPTY with
      // nothing listed); its recursive rm of the empty directory does not.
      for (const directory of directories.reverse())
        fs.rmSync(directory, { recursive: true, force: true });
    });

  const realPath = (path: string) => run(path, () => asString(fs.realpathSync(path)));

  /** The token a lock file holds (the fiber that took it). */
  const holderOf = (path: string): string =>
    withRegularFile(path, (fd, size) => Buffer.from(readAt(path, fd, 0, size)).toString("utf8"));

  /** One exclusive create; a lock file whose token no fiber here holds is stale. */
  const attemptLock = (path: string, token: string) =>
    run(path, () => {
      try {
        const fd = fs.openSync(path, createFlags, 0o600);
        try {
          fs.writeSync(fd, token);
        } finally {
          fs.closeSync(fd);
        }
        heldTokens.add(token);
        return true;
      } catch (error) {
        if (errnoCode(error) !== "EEXIST") throw error;
      }
      if (!heldTokens.has(holderOf(path))) fs.unlinkSync(path);
      return false;
    });

  const release = (path: string, token: string) =>
    Effect.sync(() => {
      try {
        if (heldTokens.has(token) && fs.readFileSync(path, "utf8") === token) fs.unlinkSync(path);
      } catch {
        // Release never fails: a missing or foreign lock file is not ours to remove.
      }
      heldTokens.delete(token);
    });

  const lock = (path: string, timeoutMs: number) =>
    Effect.uninterruptibleMask((restore) =>
      Effect.gen(function* () {
        const token = randomBytes(16).toString("hex");
        const start = yield* Clock.currentTimeMillis;
        for (;;) {
          if (yield* attemptLock(path, token)) return release(path, token);
          // A stale file was just removed: try again at once.
          if (!fs.existsSync(path)) continue;
          const elapsed = (yield* Clock.currentTimeMillis) - start;
          if (elapsed >= timeoutMs) {
            return yield* Effect.fail(
              new FsError({
                reason: "Busy",
                path,
                message: `lock ${path} is held by another fiber (waited ${timeoutMs} ms)`,
                holder: "another call of this process",
              }),
            );
          }
          yield* restore(Effect.sleep(Math.min(pollMs, timeoutMs - elapsed)));
        }
      }),
    );

  /** A lock file whose token no fiber here holds is left by a dead holder: removed. */
  const removeDeadLock = (path: string) =>
    run(path, () => {
      if (!fs.existsSync(path)) return true;
      if (heldTokens.has(holderOf(path))) return false;
      fs.unlinkSync(path);
      return true;
    });

  const treeCalls: SyncCalls = {
    open: (path, flags, mode) => fs.openSync(path, flags, mode),
    close: (descriptor) => fs.closeSync(descriptor),
    fstat: (descriptor) => fs.fstatSync(descriptor),
    lstat: (path) => fs.lstatSync(path),
    readdir: (path) => readdirNames(path),
    readdirKinds: (path) =>
      readdirNames(path).map((name) => ({
        name,
        directory: lstatOrUndefined(`${path}/${name}`)?.isDirectory() === true,
      })),
    readdirRaw: (path) =>
      fs
        .readdirSync(path, { encoding: "buffer" })
        .map((name) => (Buffer.isBuffer(name) ? name : Buffer.from(asString(name)))),
    read: (descriptor, buffer, offset, length, position) =>
      fs.readSync(descriptor, buffer, offset, length, position),
    write: (descriptor, buffer, offset, length) => fs.writeSync(descriptor, buffer, offset, length),
    rename: (from, to) => {
      // memfs renames a file over a directory; Linux refuses (EISDIR).
      if (
        lstatOrUndefined(to)?.isDirectory() === true &&
        lstatOrUndefined(from)?.isDirectory() !== true
      )
        throw Object.assign(new Error(`EISDIR: ${to}`), { code: "EISDIR" });
      fs.renameSync(from, to);
    },
    link: (existing, path) => fs.linkSync(existing, path),
    unlink: (path) => {
      // memfs unlinks directories; Linux refuses (EISDIR).
      if (lstatOrUndefined(path)?.isDirectory() === true)
        throw Object.assign(new Error(`EISDIR: ${path}`), { code: "EISDIR" });
      fs.unlinkSync(path);
    },
    mkdir: (path, mode) => fs.mkdirSync(path, { mode }),
    rmdir: (path) => fs.rmdirSync(path),
    flags: constants,
  };

  const checkedPathCalls = {
    lstat: (path: string) => fs.lstatSync(path),
    realpath: (path: string) => asString(fs.realpathSync(path)),
  };
  const openTree = (root: string, resolvedAs?: string) =>
    Effect.acquireRelease(
      run(root, () => {
        const directories = openCheckedPaths(checkedPathCalls, root, resolvedAs);
        directories.open("");
        return makeRootedTree(treeCalls, directories, root);
      }),
      (opened) => Effect.sync(() => opened.close()),
    ).pipe(Effect.map(({ tree }) => tree));

  const service: FileSystemService = {
    walk,
    info,
    readFile,
    readRange,
    writeFileAtomic,
    linkFile,
    syncDirectory,
    removeFile,
    makeDirectory,
    removeEmptyDirectory,
    removeTree,
    realPath,
    lock,
    removeDeadLock,
    openTree,
  };
  return { service, vol };
};

/** The {@link FileSystem} port over a fresh memfs volume holding `initial` (path → content). */
export const layer = (initial: Readonly<Record<string, string>> = {}): Layer.Layer<FileSystem> =>
  Layer.sync(FileSystem, () => make(initial).service);
