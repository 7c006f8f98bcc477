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
import type { Directories } from "./rootedTree.js";

const { O_RDONLY, O_NOFOLLOW, O_DIRECTORY } = nodeFs.constants;
const directoryFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

/**
 * How many directory descriptors one tree keeps open; beyond it, those not on the way to
 * the directory being opened are closed (and opened again through their parents when
 * needed), so a tree of many directories never runs the process out of descriptors. (The
 * directories on the way stay open: a path one level deeper than this keeps its depth.)
 */
const maxOpen = 256;

const procPath = (descriptor: number): string => `/proc/self/fd/${descriptor}`;

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
 * Opens `root` (an absolute canonical path) as the root of a tree of handles. Returns
 * `undefined` when this host has no usable `/proc/self/fd` (then use checked paths).
 * Throws {@link FsError} (`NotFound`, `NotADirectory` — also for a symlink) otherwise.
 */
export const openDirectoryHandles = (root: string): Directories | undefined => {
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
  const descriptors = new Map<string, number>([["", rootDescriptor]]);
  const hostPathOf = (directory: string): string =>
    directory === "" ? base : base === "/" ? `/${directory}` : `${base}/${directory}`;
  const display = hostPathOf;
  let closed = false;
  let trimAbove = maxOpen;

  const parentOf = (directory: string): string => {
    const at = directory.lastIndexOf("/");
    return at < 0 ? "" : directory.slice(0, at);
  };
  const nameOf = (directory: string): string => directory.slice(directory.lastIndexOf("/") + 1);

  /** Closes every descriptor but the root's and those on the way to `keep`. */
  const trim = (keep: string): void => {
    for (const [directory, descriptor] of descriptors) {
      if (directory === "" || keep === directory || keep.startsWith(`${directory}/`)) continue;
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
    const parent = open(parentOf(directory));
    let descriptor: number;
    try {
      descriptor = nodeFs.openSync(`${procPath(parent)}/${nameOf(directory)}`, directoryFlags);
    } catch (error) {
      throw openFailure(error, display(directory));
    }
    descriptors.set(directory, descriptor);
    if (descriptors.size > trimAbove) {
      trim(directory);
      // A deep chain keeps all its ancestors open, so a trim may free nothing: the next
      // one waits until `maxOpen` more are open (amortised, and the bound stays the
      // depth plus `maxOpen`), or every open would scan them all again.
      trimAbove = descriptors.size + maxOpen;
    }
    return descriptor;
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
        throw new FsError({
          reason: "Other",
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
