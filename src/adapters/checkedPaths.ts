/**
 * Directories reached by checked path, where the host offers no directory handles (no
 * `/proc/self/fd`: macOS, BSDs, Windows) and for memfs: a directory is a host path, and
 * each of its components is checked to be the same real directory (inode, never a
 * symlink) as when the tree first opened it, just before every operation. A best effort:
 * a component swapped in the microseconds between that check and the operation itself is
 * not excluded (docs/working-copy.md).
 */
import { FsError } from "../ports/FileSystem.js";
import { errnoCode, errorMessage, reasonForErrno } from "./fsErrno.js";
import type { StatsLike } from "./fsStats.js";
import { rootMoved, type Cursor, type Directories } from "./rootedTree.js";

/** The host calls the checked paths need. */
export interface CheckedPathCalls {
  readonly lstat: (path: string) => StatsLike;
  /** The canonical path `path` resolves to (all symlinks followed). */
  readonly realpath: (path: string) => string;
}

/**
 * Opens `root` (an absolute path, which resolved to the canonical `resolvedAs`) through
 * `lstat`; throws {@link FsError}, `Moved` when it no longer resolves there.
 */
export const openCheckedPaths = (
  calls: CheckedPathCalls,
  root: string,
  resolvedAs: string = root,
): Directories => {
  const lstat = calls.lstat;
  const inodes = new Map<string, number>();
  const hostPathOf = (directory: string): string =>
    directory === "" ? root : root === "/" ? `/${directory}` : `${root}/${directory}`;
  const parentOf = (directory: string): string => {
    const at = directory.lastIndexOf("/");
    return at < 0 ? "" : directory.slice(0, at);
  };

  /** The inode of the real directory at host path `path` now; throws otherwise. */
  const inodeAt = (path: string): number => {
    let stats: StatsLike;
    try {
      stats = lstat(path);
    } catch (error) {
      const code = errnoCode(error);
      throw new FsError({
        reason: code === "ENOTDIR" ? "NotFound" : reasonForErrno(code, false),
        path,
        message: errorMessage(error),
      });
    }
    if (!stats.isDirectory())
      throw new FsError({ reason: "NotADirectory", path, message: `${path} is not a directory` });
    return stats.ino;
  };

  /**
   * Fails `Moved` when `root` no longer resolves to `resolvedAs`: a directory above it
   * was swapped for a symlink (the handle strategy compares the opened descriptor's
   * path; this is its best effort, checked once as the tree opens).
   */
  const resolvesAsBefore = (): void => {
    let now: string;
    try {
      now = calls.realpath(root);
    } catch {
      // Gone or unreadable: the root's own lstat reports it.
      return;
    }
    if (now !== resolvedAs) throw rootMoved(root, `it leads to ${now} now`);
  };
  /** The inode of the real directory at `directory` now; throws otherwise. */
  const inodeNow = (directory: string): number => inodeAt(hostPathOf(directory));

  const open = (directory: string): void => {
    if (inodes.has(directory)) return;
    if (directory !== "") open(parentOf(directory));
    inodes.set(directory, inodeNow(directory));
    if (directory === "") resolvesAsBefore();
  };

  /** Fails `Moved` unless `directory`'s path names the directory opened (one `lstat`). */
  const same = (directory: string): void => {
    let now: number | undefined;
    try {
      now = inodeNow(directory);
    } catch {
      now = undefined;
    }
    if (now !== inodes.get(directory))
      throw new FsError({
        reason: "Moved",
        path: hostPathOf(directory),
        message: `${hostPathOf(directory)} is no longer the directory the call opened`,
      });
  };

  // Before a change, every component: a directory moved out of the tree and replaced by a
  // symlink to it would still pass the check of its own inode.
  const verify = (directory: string): void => {
    open(directory);
    for (let current = directory; ; current = parentOf(current)) {
      same(current);
      if (current === "") return;
    }
  };

  // For reads, the directory itself: whatever the path goes through, it names the
  // directory opened (an inode is the same directory).
  const reach = (directory: string): string => {
    open(directory);
    same(directory);
    return hostPathOf(directory);
  };

  /**
   * A {@link Cursor} by path: each directory is checked to be a real directory when
   * entered, and the one climbed back to to be the one (inode) left, as a best effort.
   * Its path is built one level at a time (only the current one is kept), so memory stays
   * linear in the depth but each call takes the whole path: on real hosts, one longer
   * than the host allows fails `NameTooLong`.
   */
  const cursor = (directory: string): Cursor => {
    let here = reach(directory);
    let inode = inodes.get(directory) ?? inodeNow(directory);
    // For each level entered: the length of the path and the inode of the directory left.
    const way: Array<{ readonly length: number; readonly inode: number }> = [];
    return {
      here: () => here,
      down: (name) => {
        const path = `${here}/${name}`;
        const entered = inodeAt(path);
        way.push({ length: here.length, inode });
        here = path;
        inode = entered;
      },
      up: (levels) => {
        const target = way[way.length - levels];
        if (levels <= 0 || target === undefined)
          throw new FsError({ reason: "Other", path: here, message: "a cursor climbed too far" });
        way.length -= levels;
        here = here.slice(0, target.length);
        inode = target.inode;
        let now: number | undefined;
        try {
          now = inodeAt(here);
        } catch {
          now = undefined;
        }
        if (now !== target.inode)
          throw new FsError({
            reason: "Moved",
            path: here,
            message: `${here} is no longer the directory the walk came down through`,
          });
      },
      close: () => undefined,
    };
  };

  return {
    handles: false,
    cursor,
    open,
    path: reach,
    entry: (directory, name) => `${reach(directory)}/${name}`,
    verify,
    forget: (directory) => {
      for (const known of [...inodes.keys()])
        if (known !== "" && (known === directory || known.startsWith(`${directory}/`)))
          inodes.delete(known);
    },
    close: () => inodes.clear(),
  };
};
