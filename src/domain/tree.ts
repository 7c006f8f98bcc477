/**
 * The tree model: a notebook state is a map from normalised notebook path (NFC,
 * `/`-separated, relative) to the content id of the file (lowercase hex SHA-256 of
 * its bytes). Directories are implied by the files below them.
 */

/** A notebook tree: path → content id. */
export type Tree = ReadonlyMap<string, string>;

/** The ids of any path-keyed map of entries that carry a content id (scans, cached blobs). */
export const idsOf = (entries: ReadonlyMap<string, { readonly id: string }>): Tree =>
  new Map([...entries].map(([path, entry]) => [path, entry.id]));

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
