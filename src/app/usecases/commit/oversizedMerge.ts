/**
 * The merged-size guard: each side of a merge is within the largest file a notebook
 * accepts, but two sides' additions joined (a union journal both appended to, a clean
 * text merge of two large edits) can pass it. Published, such a file would make every
 * later commit of every copy refuse it (TOO_LARGE), so the commit is refused instead.
 */
import { Effect } from "effect";
import { maxFileBytes } from "../../../domain/content.js";
import { domainError, type DomainError } from "../../../domain/errors.js";

const mebibytes = maxFileBytes / (1024 * 1024);

/**
 * Fails with INVALID_CONTENT/INVALID_FILES, each path TOO_LARGE, when `oversized` (files
 * the merge made larger than {@link maxFileBytes}) is not empty; writes nothing, so the
 * working copy keeps the person's own version. Succeeds otherwise.
 */
export const refuseOversizedMerge = (
  oversized: ReadonlyArray<string>,
): Effect.Effect<void, DomainError> =>
  oversized.length === 0
    ? Effect.void
    : Effect.fail(
        domainError({
          code: "INVALID_CONTENT",
          reason: "INVALID_FILES",
          message: `Merged with the notebook's concurrent changes, ${oversized.join(", ")} would be larger than ${mebibytes} MiB, the largest file a notebook accepts; nothing was published and your files were left as they were. Make them smaller (move older parts into another file), then call notes_commit again.`,
          files: oversized.map((path) => ({ path, reason: "TOO_LARGE", ranges: [] })),
        }),
      );
