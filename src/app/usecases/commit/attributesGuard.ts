/**
 * Commit's check of the working copy's `.quireattributes` (docs/merge.md): a malformed
 * line is refused like other invalid content, before anything is published.
 */
import { Effect } from "effect";
import {
  attributesPath,
  parseAttributes,
  type AttributeProblem,
} from "../../../domain/attributes.js";
import { domainError, type DomainError } from "../../../domain/errors.js";
import type { LineRange, Tree } from "../../../domain/tree.js";
import type { BlobSource } from "../workingCopy/blobs.js";
import { loadText } from "../pull/mergeRun.js";

/** At most this many problems are spelt out in the message (all lines are in the ranges). */
const describedProblems = 5;

/** The problems' lines as ordered ranges, adjacent lines joined. */
const rangesOf = (problems: ReadonlyArray<AttributeProblem>): ReadonlyArray<LineRange> => {
  const ranges: Array<LineRange> = [];
  for (const { line } of problems) {
    const last = ranges[ranges.length - 1];
    if (last !== undefined && last.end + 1 === line)
      ranges[ranges.length - 1] = { start: last.start, end: line };
    else ranges.push({ start: line, end: line });
  }
  return ranges;
};

/** The INVALID_CONTENT error naming the malformed lines of the attributes file. */
export const invalidAttributesError = (problems: ReadonlyArray<AttributeProblem>): DomainError => {
  const described = problems
    .slice(0, describedProblems)
    .map(({ line, problem }) => `line ${line}: ${problem}`)
    .join("; ");
  const more =
    problems.length > describedProblems ? `; and ${problems.length - describedProblems} more` : "";
  return domainError({
    code: "INVALID_CONTENT",
    reason: "INVALID_FILES",
    message: `${attributesPath} has malformed lines (${described}${more}). Fix or remove them, then call notes_commit again; nothing was published.`,
    files: [{ path: attributesPath, reason: "INVALID_ATTRIBUTES", ranges: rangesOf(problems) }],
  });
};

/**
 * Refuses the commit (INVALID_CONTENT, file reason INVALID_ATTRIBUTES with the lines)
 * when the copy changed or added `.quireattributes` and it has malformed lines. Reads
 * nothing unless the copy changed that file (one map lookup otherwise); an unchanged
 * file is never re-judged, so a notebook is not stuck on a file an older release
 * accepted.
 */
export const refuseInvalidAttributes = (
  blobs: BlobSource,
  base: Tree,
  local: Tree,
): Effect.Effect<void, DomainError> => {
  const id = local.get(attributesPath);
  if (id === undefined || id === base.get(attributesPath)) return Effect.void;
  return Effect.flatMap(loadText(blobs, id), (text) => {
    const { problems } = parseAttributes(text);
    return problems.length === 0 ? Effect.void : Effect.fail(invalidAttributesError(problems));
  });
};
