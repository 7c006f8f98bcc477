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
