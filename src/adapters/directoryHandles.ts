/**
 * Directories reached by handle (Linux): each directory of a rooted tree is a descriptor
 * opened `O_DIRECTORY|O_NOFOLLOW` through its parent's descriptor, and its entries are
 * named `/proc/self/fd/<fd>/<name>`. The kernel resolves `/proc/self/fd/<fd>` to the very
 * directory the descriptor holds, wherever it is now, so a component swapped for a symlink
 * after the directory was opened is never followed. Where a directory is now is read back
 * with `readlink` of its descriptor, which is how a directory renamed or moved out of the
 * tree is noticed ({@link Directories.verify}).
 */
import * as nodeFs from "node:fs";
import { FsError } from "../ports/FileSystem.js";
import { errnoCode, errorMessage, reasonForErrno } from "./fsErrno.js";
import { rootMoved, type Cursor, type Directories } from "./rootedTree.js";

const { O_RDONLY, O_NOFOLLOW, O_DIRECTORY } = nodeFs.constants;
const directoryFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

/**
 * How many directory descriptors one tree keeps open; beyond it, the others are closed
 * (and opened again through their parents when needed), so neither a tree of many
 * directories nor one of deep ones runs the process out of descriptors.
 */
const maxOpen = 256;

/**
 * Of the directories on the way to the one being opened, how many a trim keeps open at
 * each end of the way: those nearest the root (a working copy's top directory is one of
 * them, below a workspace root fewer levels deep) and those nearest the directory (its
 * parent, which the next sibling needs). Those between are closed: a chain of thousands
 * of nested directories (a hostile tree, or a legal note 2,000 levels down) once kept one
 * descriptor per level open and failed every scan with EMFILE where the limit is lower.
 */
const keptOnTheWay = 64;

const procPath = (descriptor: number): string => `/proc/self/fd/${descriptor}`;

/**
 * How many levels a cursor climbs with one `open` of `<dir>/../..`: 1,000 keeps the path
 * (3 bytes a level) within Linux's PATH_MAX of 4,096.
 */
const climbStep = 1000;

/**
 * A {@link Cursor} starting at the directory open as `start` (the cursor has its own
 * descriptor, and only one at any time): down opens a child through it `O_NOFOLLOW`, as
 * the tree opens its directories; up opens `..` through it, and checks that what it
 * reached is the directory (device, inode) it came down through: a directory moved away
 * meanwhile would lead elsewhere. `display` names the start in messages.
 */
const cursorAt = (start: number, display: string): Cursor => {
  let current: number;
  try {
    current = nodeFs.openSync(`${procPath(start)}/.`, directoryFlags);
  } catch (error) {
    throw openFailure(error, display);
  }
  // The identity of every directory on the way down from the start, the nearest last.
  const way: Array<{ readonly dev: bigint; readonly ino: bigint }> = [];
  const below = `${display}/…`;
  let open = true;
  const moved = (): FsError =>
    new FsError({
      reason: "Moved",
      path: below,
      message: `a directory below ${display} was moved while it was walked`,
    });
  return {
    here: () => procPath(current),
    down: (name) => {
      const { dev, ino } = nodeFs.fstatSync(current, { bigint: true });
      let next: number;
      try {
        next = nodeFs.openSync(`${procPath(current)}/${name}`, directoryFlags);
      } catch (error) {
        throw openFailure(error, `${below}/${name}`);
      }
      nodeFs.closeSync(current);
      current = next;
      way.push({ dev, ino });
    },
    up: (levels) => {
      const target = way[way.length - levels];
      if (levels <= 0 || target === undefined)
        throw new FsError({ reason: "Other", path: below, message: "a cursor climbed too far" });
      for (let left = levels; left > 0;) {
        const step = Math.min(left, climbStep);
        let next: number;
        try {
          next = nodeFs.openSync(`${procPath(current)}${"/..".repeat(step)}`, directoryFlags);
        } catch {
          throw moved(); // the way back is gone (a directory on it removed)
        }
        nodeFs.closeSync(current);
        current = next;
        left -= step;
      }
      way.length -= levels;
      const now = nodeFs.fstatSync(current, { bigint: true });
      if (now.dev !== target.dev || now.ino !== target.ino) throw moved();
    },
    close: () => {
      if (!open) return;
      open = false;
      nodeFs.closeSync(current);
    },
  };
};

const openFailure = (error: unknown, display: string): FsError => {
  const code = errnoCode(error);
  // ELOOP: the final component is a symlink; ENOTDIR: it is not a directory.
  const reason =
    code === "ELOOP" || code === "ENOTDIR" ? "NotADirectory" : reasonForErrno(code, false);
  // The message names the host path, never the /proc/self/fd path the call went through.
  const message = code === undefined ? errorMessage(error) : `${code}: ${display}`;
  return new FsError({ reason, path: display, message });
};

/**
 * Opens `root` (an absolute path, which resolved to the canonical `resolvedAs`) as the
 * root of a tree of handles. Returns `undefined` when this host has no usable
 * `/proc/self/fd` (then use checked paths). Throws {@link FsError} (`NotFound`,
 * `NotADirectory` — also for a symlink) otherwise, and `Moved` when the directory the
 * path reaches is not at `resolvedAs`: a directory above the root was swapped for a
 * symlink since.
 */
export const openDirectoryHandles = (
  root: string,
  resolvedAs: string = root,
): Directories | undefined => {
  let rootDescriptor: number;
  try {
    rootDescriptor = nodeFs.openSync(root, directoryFlags);
  } catch (error) {
    throw openFailure(error, root);
  }
  let base: string;
  try {
    base = nodeFs.readlinkSync(procPath(rootDescriptor));
  } catch {
    nodeFs.closeSync(rootDescriptor);
    return undefined;
  }
  if (!base.startsWith("/")) {
    nodeFs.closeSync(rootDescriptor);
    return undefined;
  }
  if (base !== resolvedAs) {
    nodeFs.closeSync(rootDescriptor);
    let now: string | undefined;
    try {
      now = nodeFs.realpathSync.native(root);
    } catch {
      now = undefined;
    }
    // `/proc` names the directory otherwise than `realpath` does (an unusual mount
    // set-up), while the path still resolves as before: the handles' paths cannot be
    // compared here, so the checked paths serve.
    if (now === resolvedAs) return undefined;
    // The path reached another directory than it resolved to: a component above the
    // root was swapped for a symlink since. Following it would write, and remove
    // "published" files, wherever the link leads.
    throw rootMoved(root, `it leads to ${now ?? base} now`);
  }
  const descriptors = new Map<string, number>([["", rootDescriptor]]);
  const hostPathOf = (directory: string): string =>
    directory === "" ? base : base === "/" ? `/${directory}` : `${base}/${directory}`;
  const display = hostPathOf;
  let closed = false;

  const parentOf = (directory: string): string => {
    const at = directory.lastIndexOf("/");
    return at < 0 ? "" : directory.slice(0, at);
  };
  const nameOf = (directory: string): string => directory.slice(directory.lastIndexOf("/") + 1);

  /**
   * Closes every descriptor but the root's, `keep`'s, and those of the directories on the
   * way to `keep` that are among the {@link keptOnTheWay} nearest either end of the way.
   */
  const trim = (keep: string): void => {
    const way: string[] = [];
    for (let directory = keep; directory !== ""; directory = parentOf(directory))
      way.push(directory);
    // `way` runs from `keep` up to the root's child.
    const kept = new Set<string>([
      "",
      ...way.slice(0, keptOnTheWay + 1),
      ...way.slice(Math.max(0, way.length - keptOnTheWay)),
    ]);
    for (const [directory, descriptor] of descriptors) {
      if (kept.has(directory)) continue;
      nodeFs.closeSync(descriptor);
      descriptors.delete(directory);
    }
  };

  const open = (directory: string): number => {
    if (closed)
      throw new FsError({
        reason: "Other",
        path: display(directory),
        message: "the tree is closed",
      });
    const known = descriptors.get(directory);
    if (known !== undefined) return known;
    // The directories from the nearest open one down to `directory`, opened one by one
    // (not recursively: a chain closed by a trim may be thousands of levels deep).
    const below: string[] = [];
    let parent: number | undefined;
    for (let at = directory; parent === undefined;) {
      below.push(at);
      at = parentOf(at);
      parent = descriptors.get(at);
    }
    for (let next = below.pop(); next !== undefined; next = below.pop()) {
      let descriptor: number;
      try {
        descriptor = nodeFs.openSync(`${procPath(parent)}/${nameOf(next)}`, directoryFlags);
      } catch (error) {
        throw openFailure(error, display(next));
      }
      descriptors.set(next, descriptor);
      if (descriptors.size > maxOpen) trim(next);
      parent = descriptor;
    }
    return parent;
  };

  return {
    handles: true,
    open: (directory) => {
      open(directory);
    },
    path: (directory) => procPath(open(directory)),
    entry: (directory, name) => `${procPath(open(directory))}/${name}`,
    verify: (directory) => {
      const descriptor = open(directory);
      let now: string;
      try {
        now = nodeFs.readlinkSync(procPath(descriptor));
      } catch (error) {
        // ENAMETOOLONG: the directory's host path is longer than PATH_MAX (a copy deep
        // below the root holding a note with a long path). Said as such, the answer tells
        // what to change; other failures stay `Other`, never taken for a missing file.
        throw new FsError({
          reason: errnoCode(error) === "ENAMETOOLONG" ? "NameTooLong" : "Other",
          path: display(directory),
          message: errorMessage(error),
        });
      }
      if (now !== hostPathOf(directory))
        throw new FsError({
          reason: "Moved",
          path: display(directory),
          message: `${display(directory)} is no longer where it was opened`,
        });
    },
    cursor: (directory) => cursorAt(open(directory), display(directory)),
    forget: (directory) => {
      for (const [known, descriptor] of descriptors) {
        if (known === "" || (known !== directory && !known.startsWith(`${directory}/`))) continue;
        nodeFs.closeSync(descriptor);
        descriptors.delete(known);
      }
    },
    close: () => {
      if (closed) return;
      closed = true;
      for (const descriptor of descriptors.values()) nodeFs.closeSync(descriptor);
      descriptors.clear();
    },
  };
};
