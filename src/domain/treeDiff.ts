/** Differences between two trees, path by path. */
import { compareCodeUnits } from "./paths.js";
import type { Tree } from "./tree.js";

/**
 * The paths whose content differs between `from` and `to` (added, removed or
 * modified), sorted. Linear in the sizes of the trees; returns early on identical
 * map instances.
 */
export const diffTrees = (from: Tree, to: Tree): ReadonlyArray<string> => {
  if (from === to) return [];
  const changed: string[] = [];
  for (const [path, id] of from) if (to.get(path) !== id) changed.push(path);
  for (const path of to.keys()) if (!from.has(path)) changed.push(path);
  return changed.sort(compareCodeUnits);
};

/** How one file of a working copy changed. */
export interface FileChange {
  readonly path: string;
  readonly change: "added" | "changed" | "deleted";
}

/**
 * What going from `from` to `to` does to each differing path: `added` (only in `to`),
 * `deleted` (only in `from`) or `changed`; sorted by path.
 */
export const fileChanges = (from: Tree, to: Tree): ReadonlyArray<FileChange> =>
  diffTrees(from, to).map((path) => ({
    path,
    change: !from.has(path) ? "added" : !to.has(path) ? "deleted" : "changed",
  }));

/**
 * `items` (file changes or conflicts) without those at a `held` path. A held file was
 * left as its person saved it (docs/working-copy.md): what the merge meant to write
 * there — the notebook's change, or conflict blocks to resolve — is not in the working
 * copy, so it is not reported as written. Pure.
 */
export const withoutHeld = <T extends { readonly path: string }>(
  items: ReadonlyArray<T>,
  held: ReadonlyArray<string>,
): ReadonlyArray<T> => {
  if (held.length === 0) return items;
  const left = new Set(held);
  return items.filter((item) => !left.has(item.path));
};
