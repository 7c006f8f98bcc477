/**
 * `mkdir -p` without Node's recursive mkdir, which never returns where a directory's
 * creation fails with ENOENT although its parent exists: under `/proc` (`mkdir
 * /proc/x` is ENOENT), Node 20–24 retry the parent and the child forever, so
 * `quire serve --store file:/proc/x` hung with no output.
 */
import * as fsp from "node:fs/promises";
import * as NodePath from "node:path";

const errnoOf = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
    ? error.code
    : undefined;

/** Whether `path` leads to a directory (following symlinks); false when it leads nowhere. */
const isDirectory = (path: string): Promise<boolean> =>
  fsp.stat(path).then(
    (found) => found.isDirectory(),
    () => false,
  );

/**
 * Creates `path` and every missing directory above it with `mode`, as `mkdir -p` does;
 * an existing directory (or a symlink to one) is kept. Resolves with the first (topmost)
 * directory it created, `undefined` when it created none, as Node's recursive mkdir
 * does. Rejects with the system's error of the first directory that cannot be created
 * (EEXIST when a file is in the way, ENOTDIR, EACCES, ENOENT when the system refuses a
 * name under an existing directory). Each directory is tried at most twice (before and
 * after its parent is made), so it never loops; one mkdir when only the last directory
 * is missing, as on a hot path.
 */
export const makeDirectories = async (path: string, mode: number): Promise<string | undefined> => {
  const target = NodePath.resolve(path);
  let first: string | undefined;
  try {
    await fsp.mkdir(target, { mode });
    return target;
  } catch (error) {
    const code = errnoOf(error);
    if (code === "EEXIST" && (await isDirectory(target))) return undefined;
    const parent = NodePath.dirname(target);
    if (code !== "ENOENT" || parent === target) throw error;
    // The parent may exist by now (another process made it): then only the second try
    // below remains.
    if (!(await isDirectory(parent))) first = await makeDirectories(parent, mode);
  }
  try {
    await fsp.mkdir(target, { mode });
  } catch (error) {
    // Another process made it meanwhile: fine when it is a directory. ENOENT again,
    // under a parent that exists, is the system refusing the name: Node's recursive
    // mkdir would retry it forever; this one answers it.
    if (errnoOf(error) !== "EEXIST" || !(await isDirectory(target))) throw error;
    return first;
  }
  return first ?? target;
};
