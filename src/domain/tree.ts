/**
 * The tree model: a notebook state is a map from normalised notebook path (NFC,
 * `/`-separated, relative) to the content id of the file (lowercase hex SHA-256 of
 * its bytes). Directories are implied by the files below them.
 */

/** A notebook tree: path → content id. */
export type Tree = ReadonlyMap<string, string>;

// Trees are immutable values: the ids of one map instance are computed once, and equal
// instances let diffTrees return at once.
const idsByEntries = new WeakMap<ReadonlyMap<string, { readonly id: string }>, Tree>();

/**
 * The ids of any path-keyed map of entries that carry a content id (scans, cached
 * blobs). `entries` must not change afterwards: the result is remembered per instance.
 */
export const idsOf = (entries: ReadonlyMap<string, { readonly id: string }>): Tree => {
  const known = idsByEntries.get(entries);
  if (known !== undefined) return known;
  const ids = new Map<string, string>();
  for (const [path, entry] of entries) ids.set(path, entry.id);
  idsByEntries.set(entries, ids);
  return ids;
};

/** The empty notebook (generation 0). */
export const emptyTree: Tree = new Map();

/** A one-based, inclusive line range. */
export interface LineRange {
  readonly start: number;
  readonly end: number;
}

/** Inserted and deleted line counts of one file or a whole change. */
export interface LineCounts {
  readonly insertions: number;
  readonly deletions: number;
}

/** Per-file line counts, as reported in results (`files[]`). */
export interface FileStat extends LineCounts {
  readonly path: string;
}

/**
 * The pairs of paths of `tree` where one is a file and the other needs a directory of
 * that name (`a` and `a/b.md`), for the paths in `added` only: `[file, below]` each.
 * A tree read from disk or made by a merge never has such a pair; one a call assembles
 * from several sources (a file restored beside kept ones) can. Linear in `tree`'s size.
 */
export const fileDirectoryClashes = (
  tree: Tree,
  added: ReadonlyArray<string>,
): ReadonlyArray<readonly [string, string]> => {
  if (added.length === 0) return [];
  // Each directory of the tree, with one file below it.
  const directories = new Map<string, string>();
  for (const path of tree.keys())
    for (let end = path.lastIndexOf("/"); end > 0; end = path.lastIndexOf("/", end - 1)) {
      const directory = path.slice(0, end);
      if (directories.has(directory)) break;
      directories.set(directory, path);
    }
  const clashes = new Map<string, readonly [string, string]>();
  for (const path of added) {
    const below = directories.get(path);
    if (tree.has(path) && below !== undefined) clashes.set(`${path}\0${below}`, [path, below]);
    for (let end = path.lastIndexOf("/"); end > 0; end = path.lastIndexOf("/", end - 1)) {
      const directory = path.slice(0, end);
      if (tree.has(directory)) clashes.set(`${directory}\0${path}`, [directory, path]);
    }
  }
  return [...clashes.values()];
};
