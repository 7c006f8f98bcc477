/**
 * Turning `lstat` results into port metadata, shared by the file system adapters (node's
 * `fs.Stats` and memfs's `Stats` have the same shape).
 */
import type { EntryKind, PathInfo } from "../ports/FileSystem.js";

/** The part of a `Stats` object the port needs. */
export interface StatsLike {
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
  readonly size: number;
  readonly mtimeMs: number;
  readonly ctimeMs: number;
  readonly ino: number;
  /** Type and permission bits, as `st_mode`. */
  readonly mode: number;
}

/** The entry kind of an `lstat` result; anything unrecognised is a `device`. */
export const kindOf = (stats: StatsLike): EntryKind =>
  stats.isFile()
    ? "file"
    : stats.isDirectory()
      ? "directory"
      : stats.isSymbolicLink()
        ? "symlink"
        : stats.isFIFO()
          ? "fifo"
          : stats.isSocket()
            ? "socket"
            : "device";

/** Port metadata of an `lstat` result; `size` is 0 for anything but a regular file. */
export const toPathInfo = (stats: StatsLike): PathInfo => {
  const kind = kindOf(stats);
  return {
    kind,
    size: kind === "file" ? stats.size : 0,
    mtimeMs: stats.mtimeMs,
    ctimeMs: stats.ctimeMs,
    ino: stats.ino,
  };
};
