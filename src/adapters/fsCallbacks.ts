/**
 * Promises over `node:fs` callbacks, for the file system and file store adapters.
 *
 * Why not `node:fs/promises`: its `FileHandle` costs the event loop about twice as much
 * per call (measured: 4,000 atomic writes, 324 ms against 163 ms of event-loop time),
 * and under contention the event loop is what bounds a process's commits (8 writers
 * in one process: busy ~90% of the time, most of it in file calls).
 */
import * as nodeFs from "node:fs";
import { errnoCode } from "./fsErrno.js";

/** fsyncs in flight in this process (any adapter), and when the last one ended. */
let syncsInFlight = 0;
let lastSyncEndedMs = Number.NEGATIVE_INFINITY;

/**
 * How long after an fsync the journal counts as still busy: the commits that follow
 * one usually come within milliseconds (measured: with only the fsyncs in flight
 * counted, most synchronous writes of 8 contended writers still ran and blocked).
 */
const busyAfterSyncMs = 50;

/**
 * Whether a synchronous metadata call (create, rename) may have to wait on the file
 * system's journal behind an fsync of this process — blocking the event loop for that
 * long. Approximate (it sees only this process's fsyncs); a caller that would do such
 * a call synchronously takes the thread pool instead while it holds.
 */
export const journalBusy = (): boolean =>
  syncsInFlight > 0 || performance.now() - lastSyncEndedMs < busyAfterSyncMs;

/**
 * The file calls of the adapters' hot paths, as promises: over the callback API of
 * `node:fs` (the thread pool) for the calls that can wait on the disk, synchronous for
 * `close` and for opening a directory to sync it. Rejections are node's own errors
 * (with `code`); each adapter maps them with its own `mapError`.
 */
export const fd = {
  open: (path: string, flags: number, mode?: number) =>
    new Promise<number>((resolve, reject) =>
      nodeFs.open(path, flags, mode, (error, opened) => (error ? reject(error) : resolve(opened))),
    ),
  /**
   * Synchronous, as a promise: closing a file on a local file system does not wait for
   * the disk (durability comes from the fsyncs), and a thread-pool round trip for it
   * cost more than the call (measured with {@link fd.syncDirectory}'s open: 8 MCP
   * writers, ~15 % more commits/s).
   */
  close: (descriptor: number): Promise<void> => {
    try {
      nodeFs.closeSync(descriptor);
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  },
  fstat: (descriptor: number) =>
    new Promise<nodeFs.Stats>((resolve, reject) =>
      nodeFs.fstat(descriptor, (error, stats) => (error ? reject(error) : resolve(stats))),
    ),
  /** Counted: see {@link journalBusy}. */
  fsync: (descriptor: number) => {
    syncsInFlight++;
    return new Promise<void>((resolve, reject) =>
      nodeFs.fsync(descriptor, (error) => {
        syncsInFlight--;
        lastSyncEndedMs = performance.now();
        return error ? reject(error) : resolve();
      }),
    );
  },
  read: (
    descriptor: number,
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ) =>
    new Promise<number>((resolve, reject) =>
      nodeFs.read(descriptor, buffer, offset, length, position, (error, bytesRead) =>
        error ? reject(error) : resolve(bytesRead),
      ),
    ),
  write: (descriptor: number, bytes: Uint8Array, offset: number, length: number) =>
    new Promise<number>((resolve, reject) =>
      nodeFs.write(descriptor, bytes, offset, length, null, (error, written) =>
        error ? reject(error) : resolve(written),
      ),
    ),
  /** Writes all of `bytes` at the descriptor's position (a write may take only part). */
  writeAll: async (descriptor: number, bytes: Uint8Array): Promise<void> => {
    for (let written = 0; written < bytes.length;)
      written += await fd.write(descriptor, bytes, written, bytes.length - written);
  },
  rename: (from: string, to: string) =>
    new Promise<void>((resolve, reject) =>
      nodeFs.rename(from, to, (error) => (error ? reject(error) : resolve())),
    ),
  link: (existing: string, path: string) =>
    new Promise<void>((resolve, reject) =>
      nodeFs.link(existing, path, (error) => (error ? reject(error) : resolve())),
    ),
  unlink: (path: string) =>
    new Promise<void>((resolve, reject) =>
      nodeFs.unlink(path, (error) => (error ? reject(error) : resolve())),
    ),
  /**
   * Makes a directory's entries durable (`fsync` of the directory). A no-op on Windows,
   * which cannot open a directory for it and journals directory updates; file systems
   * that cannot do it (EINVAL, ENOTSUP) are tolerated.
   */
  syncDirectory: async (directory: string): Promise<void> => {
    if (process.platform === "win32") return;
    // Opening a directory to read it changes nothing on disk: synchronous, like `close`.
    // Only the fsync, which waits for the disk, goes through the thread pool.
    const descriptor = nodeFs.openSync(directory, nodeFs.constants.O_RDONLY);
    try {
      await fd.fsync(descriptor);
    } catch (error) {
      const code = errnoCode(error);
      if (code !== "EINVAL" && code !== "ENOTSUP") throw error;
    } finally {
      await fd.close(descriptor);
    }
  },
};
