/** Three-way line merge of texts with git-style conflict markers (SPEC §6.3). */
import type { LineRange } from "./tree.js";

/** The result of {@link mergeText}. */
export interface TextMergeResult {
  /** The merged text; contains complete marker blocks where `conflicts` is non-empty. */
  readonly text: string;
  /** The line ranges of each conflict block in `text`, from `<<<<<<< local` to `>>>>>>> remote` inclusive. */
  readonly conflicts: ReadonlyArray<LineRange>;
}

/**
 * Merges `local` and `remote` edits of `base` line by line, deterministically, agreeing
 * with `git merge-file -p -L local -L base -L remote local base remote` wherever git
 * merges cleanly. Never fails.
 */
export const mergeText = (_base: string, _local: string, _remote: string): TextMergeResult => {
  throw new Error("not implemented yet");
};
