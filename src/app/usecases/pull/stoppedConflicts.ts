/**
 * A pull whose rewrite of the working copy stopped part way (a full disk, a permission:
 * workingCopy/stoppedRewrite.ts) may already have written conflict blocks into some
 * notes. Its answer names them: a person reading only "free disk space, then pull
 * again" would otherwise not know that some notes now hold `<<<<<<<` blocks to resolve
 * (the next pull lists them, but only once it runs).
 */
import { Effect } from "effect";
import { contentId, maxFileBytes } from "../../../domain/content.js";
import { DomainError, type FileIssue, withNote } from "../../../domain/errors.js";
import type { Tree } from "../../../domain/tree.js";
import type { CopyCall } from "../shared/context.js";
import { pathForMessage } from "../shared/failures.js";

/** How many of the notes holding conflicts the message names (all are in `files`). */
const namedAtMost = 3;

/** Whether the copy's file at `path` holds what the merge meant to write there. */
const holdsMerged = (call: CopyCall, merged: Tree, path: string): Effect.Effect<boolean> => {
  const meant = merged.get(path);
  return meant === undefined
    ? Effect.succeed(false)
    : call.tree.readFile(path, maxFileBytes).pipe(
        Effect.map((read) => contentId(read.bytes) === meant),
        // Unreadable (the same cause, say): not claimed as written.
        Effect.orElseSucceed(() => false),
      );
};

/**
 * `failure` (a RECOVERY_FAILURE of the rewrite) with the conflicts of `conflicts` already
 * in the copy listed in `files` and named in its message; any other failure, or one
 * with none of them written yet, as it is. Never fails.
 */
export const withWrittenConflicts = (
  call: CopyCall,
  conflicts: ReadonlyArray<FileIssue>,
  merged: Tree,
  failure: DomainError,
): Effect.Effect<DomainError> =>
  Effect.gen(function* () {
    if (failure.code !== "RECOVERY_FAILURE" || conflicts.length === 0) return failure;
    const written: Array<FileIssue> = [];
    for (const conflict of conflicts) {
      // A file moved aside is written too: both names must hold what the merge meant.
      const paths =
        conflict.movedTo === undefined ? [conflict.path] : [conflict.path, conflict.movedTo];
      let all = true;
      for (const path of paths) all = all && (yield* holdsMerged(call, merged, path));
      if (all) written.push(conflict);
    }
    if (written.length === 0) return failure;
    // A few by name, the rest counted: a message stays short (docs/errors.md); `files`
    // lists them all.
    const shown = written.slice(0, namedAtMost).map((conflict) => pathForMessage(conflict.path));
    const rest = written.length - shown.length;
    const named = rest === 0 ? shown.join(", ") : `${shown.join(", ")} and ${rest} more`;
    return withNote(
      failure,
      `Before it stopped, it wrote conflicts into ${named}: resolve them as for any conflict (they are listed here, and again by the next notes_pull).`,
      written,
    );
  });
