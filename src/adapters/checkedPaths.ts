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
import { rootMoved, type Directories } from "./rootedTree.js";

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

  /** The inode of the real directory at `directory` now; throws otherwise. */
  const inodeNow = (directory: string): number => {
    let stats: StatsLike;
    try {
      stats = lstat(hostPathOf(directory));
    } catch (error) {
      const code = errnoCode(error);
      throw new FsError({
        reason: code === "ENOTDIR" ? "NotFound" : reasonForErrno(code, false),
        path: hostPathOf(directory),
        message: errorMessage(error),
      });
    }
    if (!stats.isDirectory())
      throw new FsError({
        reason: "NotADirectory",
        path: hostPathOf(directory),
        message: `${hostPathOf(directory)} is not a directory`,
      });
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

  return {
    handles: false,
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
