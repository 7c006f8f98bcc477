/** Line counts of a change (SPEC §6.4), matching `git diff --numstat` for ordinary text. */
import type { LineCounts } from "./tree.js";

/**
 * Counts inserted and deleted lines from `before` to `after` (`undefined` = file absent).
 * Lines are LF-terminated runs; one trailing CR is ignored for comparison; a final
 * run without LF counts; empty content has zero lines.
 */
export const countChanges = (_before: string | undefined, _after: string | undefined): LineCounts => {
  throw new Error("not implemented yet");
};
