/** Three-way merge of notebook trees (SPEC §6.3), before any file content is read. */
import type { Tree } from "./tree.js";

/** What the merged tree holds at one path. */
export type MergeEntry =
  /** The content with this id, as is. */
  | { readonly _tag: "Resolved"; readonly id: string }
  /** Both sides changed the file (or both added it, `base` undefined): merge the texts. */
  | {
      readonly _tag: "NeedsTextMerge";
      readonly base: string | undefined;
      readonly local: string;
      readonly remote: string;
    };

/** A structural conflict found by the tree merge. */
export interface TreeConflict {
  readonly path: string;
  readonly reason: "DELETE_MODIFY" | "FILE_DIRECTORY";
}

/** The plan of a tree merge: the merged tree's entries and the structural conflicts. */
export interface TreeMergePlan {
  /** Every path of the merged tree (a path not present is deleted). */
  readonly entries: ReadonlyMap<string, MergeEntry>;
  /** Structural conflicts, sorted by path; text conflicts are found later by mergeText. */
  readonly conflicts: ReadonlyArray<TreeConflict>;
}

/**
 * Plans the three-way merge of trees. An unchanged side takes the other; identical
 * changes are not conflicts; delete/modify keeps the modified file and reports
 * DELETE_MODIFY; file/directory keeps the directory and moves the file aside (see
 * docs/merge.md). Pure and deterministic. Cost grows with the paths that differ.
 */
export const planTreeMerge = (_base: Tree, _local: Tree, _remote: Tree): TreeMergePlan => {
  throw new Error("not implemented yet");
};
