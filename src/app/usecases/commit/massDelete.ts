/**
 * The destructive-commit guard: a commit that would delete every file of a non-empty
 * notebook, or more than half of the files of a notebook of at least
 * {@link massDeleteMinimumFiles}, is refused before anything is published — the usual
 * cause is a wrong or accidentally emptied working copy, not an intent.
 */
import { Effect } from "effect";
import { domainError, type DomainError } from "../../../domain/errors.js";
import type { Tree } from "../../../domain/tree.js";

/** From this many files on, deleting more than half of them is refused too. */
export const massDeleteMinimumFiles = 20;

/** How many of a notebook's files a publication deletes. */
export interface Deletion {
  readonly deleted: number;
  readonly total: number;
}

/**
 * The deletion `after` makes to the notebook `before` when it is a mass deletion (every
 * file of a non-empty notebook, or more than half of at least 20), else `undefined`. A
 * file whose content `after` holds at a new path was moved, not deleted (a case-only
 * rename, a directory renamed): each new path's content accounts for one removed path.
 */
export const massDeletion = (before: Tree, after: Tree): Deletion | undefined => {
  const total = before.size;
  const moved = new Map<string, number>();
  for (const [path, id] of after) if (!before.has(path)) moved.set(id, (moved.get(id) ?? 0) + 1);
  let deleted = 0;
  for (const [path, id] of before) {
    if (after.has(path)) continue;
    const left = moved.get(id) ?? 0;
    if (left > 0) moved.set(id, left - 1);
    else deleted++;
  }
  if (total === 0 || deleted === 0) return undefined;
  if (deleted === total) return { deleted, total };
  if (total >= massDeleteMinimumFiles && deleted * 2 > total) return { deleted, total };
  return undefined;
};

/**
 * Refuses publishing `after` over the accepted notebook `before` when it is a mass
 * deletion, unless `allow` (the server runs with `--allow-mass-delete`): fails with
 * INVALID_REQUEST/MASS_DELETE naming the count. Writes nothing.
 */
export const refuseMassDelete = (
  before: Tree,
  after: Tree,
  allow: boolean,
): Effect.Effect<void, DomainError> => {
  const deletion = allow ? undefined : massDeletion(before, after);
  if (deletion === undefined) return Effect.void;
  const what =
    deletion.deleted === deletion.total
      ? `every file of the notebook (${deletion.total})`
      : `${deletion.deleted} of the notebook's ${deletion.total} files`;
  return Effect.fail(
    domainError({
      code: "INVALID_REQUEST",
      reason: "MASS_DELETE",
      message:
        `This commit would delete ${what}; nothing was published and the working copy was left as it is. ` +
        "If the directory is the wrong one or was emptied by accident, pull into a fresh directory to get the files back; " +
        "to delete this much on purpose, commit smaller deletions or run the server with --allow-mass-delete.",
    }),
  );
};
