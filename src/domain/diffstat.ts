/** Line counts of a change (SPEC §6.4), matching `git diff --numstat` for ordinary text. */
import { diffClasses } from "./lineDiff.js";
import { LineClassifier, countLines } from "./lines.js";
import type { LineCounts } from "./tree.js";

/**
 * Counts inserted and deleted lines from `before` to `after` (`undefined` = file absent).
 * Lines are LF-terminated runs; one trailing CR is ignored for comparison; a final
 * run without LF counts; empty content has zero lines. Added file: all lines inserted;
 * deleted file: all lines deleted; modified: the hunks of git's default line diff, so
 * the numbers equal `git diff --numstat` for text whose line endings did not change.
 * A final line without LF still differs from the same line with LF, as in git.
 * Never fails.
 */
export const countChanges = (before: string | undefined, after: string | undefined): LineCounts => {
  if (before === after) return { insertions: 0, deletions: 0 };
  if (before === undefined) return { insertions: countLines(after ?? ""), deletions: 0 };
  if (after === undefined) return { insertions: 0, deletions: countLines(before) };

  const classifier = new LineClassifier("ignore-cr", (before.length + after.length) >> 5);
  const old = classifier.classify(before);
  const updated = classifier.classifyLike(after, old);
  let insertions = 0;
  let deletions = 0;
  for (const hunk of diffClasses(old.classes, updated.classes, classifier.size)) {
    deletions += hunk.count1;
    insertions += hunk.count2;
  }
  return { insertions, deletions };
};
