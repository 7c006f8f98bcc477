/**
 * Commit's check of the working copy's `.quireattributes` (docs/merge.md): a malformed
 * line, or a file past the limits of what is read, is refused like other invalid
 * content, before anything is published.
 */
import { Effect } from "effect";
import {
  attributesPath,
  maxAttributesBytes,
  maxAttributesRules,
  parseAttributes,
  type AttributeProblem,
  type Attributes,
  type AttributesBeyondLimit,
} from "../../../domain/attributes.js";
import { domainError, type DomainError, type FileIssue } from "../../../domain/errors.js";
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

/** A count in a message (`1,000`). */
const count = (n: number): string => n.toLocaleString("en-US");

/** What a limit of the attributes file allows, for messages. */
const limitText = {
  rules: `${count(maxAttributesRules)} rules`,
  bytes: `${count(maxAttributesBytes / 1024)} KiB`,
} as const;

/**
 * The attributes file listed as INVALID_ATTRIBUTES: its malformed lines, and the lines
 * past its limits if any, as ranges.
 */
const attributesIssue = (
  problems: ReadonlyArray<AttributeProblem>,
  beyondLimit: AttributesBeyondLimit | undefined,
): FileIssue => {
  const ranges = rangesOf(problems);
  return {
    path: attributesPath,
    reason: "INVALID_ATTRIBUTES",
    ranges:
      beyondLimit === undefined
        ? ranges
        : [...ranges, { start: beyondLimit.firstLine, end: beyondLimit.lastLine }],
  };
};

/**
 * The INVALID_CONTENT error naming the malformed lines of the attributes file, and the
 * lines past its limits (docs/merge.md), if any: all of them in the ranges.
 */
export const invalidAttributesError = (
  problems: ReadonlyArray<AttributeProblem>,
  beyondLimit?: AttributesBeyondLimit,
): DomainError => {
  const described = problems
    .slice(0, describedProblems)
    .map(({ line, problem }) => `line ${line}: ${problem}`)
    .join("; ");
  const more =
    problems.length > describedProblems ? `; and ${problems.length - describedProblems} more` : "";
  const malformed =
    problems.length === 0
      ? []
      : [`${attributesPath} has malformed lines (${described}${more}). Fix or remove them`];
  const tooLarge =
    beyondLimit === undefined
      ? []
      : [
          `${attributesPath} is larger than quire reads (at most ${limitText.rules} and ${limitText.bytes}; this one passes the ${limitText[beyondLimit.limit]} at line ${count(beyondLimit.firstLine)}): that line and those after it would never apply. Put groups of patterns together into broader ones (*.log.md, logs/**) or remove some`,
        ];
  return domainError({
    code: "INVALID_CONTENT",
    reason: "INVALID_FILES",
    message: `${[...malformed, ...tooLarge].join("; ")}, then call notes_commit again; nothing was published.`,
    files: [attributesIssue(problems, beyondLimit)],
  });
};

/**
 * What is wrong with the copy's `.quireattributes` when the copy changed or added it:
 * its malformed lines and the lines past its limits, or undefined when there are none
 * or the copy left the file as `base` has it (an unchanged file is never re-judged, so
 * a notebook is not stuck on a file an older release accepted). Reads nothing unless
 * the copy changed that file (one map lookup otherwise).
 */
const attributesFlaws = (
  blobs: BlobSource,
  base: Tree,
  local: Tree,
): Effect.Effect<Pick<Attributes, "problems" | "beyondLimit"> | undefined, DomainError> => {
  const id = local.get(attributesPath);
  if (id === undefined || id === base.get(attributesPath)) return Effect.succeed(undefined);
  return Effect.map(loadText(blobs, id), (text) => {
    const { problems, beyondLimit } = parseAttributes(text);
    return problems.length === 0 && beyondLimit === undefined
      ? undefined
      : { problems, beyondLimit };
  });
};

/**
 * The INVALID_ATTRIBUTES issue a commit of the copy (`local` against `base`) would be
 * refused for ({@link refuseInvalidAttributes}), or undefined: for `quire status`, which
 * lists it among what cannot be committed.
 */
export const invalidAttributesIssue = (
  blobs: BlobSource,
  base: Tree,
  local: Tree,
): Effect.Effect<FileIssue | undefined, DomainError> =>
  Effect.map(attributesFlaws(blobs, base, local), (flaws) =>
    flaws === undefined ? undefined : attributesIssue(flaws.problems, flaws.beyondLimit),
  );

/**
 * Refuses the commit (INVALID_CONTENT, file reason INVALID_ATTRIBUTES with the lines)
 * when the copy changed or added `.quireattributes` and it has malformed lines, or lines
 * past its limits (domain/attributes.ts `maxAttributesRules`, `maxAttributesBytes`).
 * Reads nothing unless the copy changed that file ({@link attributesFlaws}).
 */
export const refuseInvalidAttributes = (
  blobs: BlobSource,
  base: Tree,
  local: Tree,
): Effect.Effect<void, DomainError> =>
  Effect.flatMap(attributesFlaws(blobs, base, local), (flaws) =>
    flaws === undefined
      ? Effect.void
      : Effect.fail(invalidAttributesError(flaws.problems, flaws.beyondLimit)),
  );
