/**
 * The message of a CONTENT_CONFLICT/MERGE_CONFLICT: what the merge did with the files
 * in conflict and what to do next. It says marker blocks were written only when some
 * were, and for a file moved aside (FILE_DIRECTORY, CASE_CONFLICT) where it went and
 * why: a person told "resolve the conflict blocks" looks for blocks, finds none, and
 * does not notice that their note now has another name.
 */
import type { FileIssue } from "./errors.js";

/** The call that met the conflicts: it decides how the two sides are named. */
export type ConflictCall =
  /** notes_pull: the copy's unpublished changes against the accepted notebook. */
  | { readonly _tag: "Pull" }
  /** notes_commit that published nothing. */
  | { readonly _tag: "Commit" }
  /** notes_commit that published, then met a file saved during the call. */
  | { readonly _tag: "Published" }
  /** quire revert: the copy against the notebook as it was before `generation`. */
  | { readonly _tag: "Revert"; readonly generation: number };

/** At most this many moved files are spelt out; every one is in `files[]`. */
const spelledOut = 5;

const plural = (count: number, noun: string): string => `${count} ${noun}${count === 1 ? "" : "s"}`;

const lead = (call: ConflictCall): string => {
  switch (call._tag) {
    case "Pull":
      return "Your unpublished changes conflict with the accepted notebook.";
    case "Commit":
      return "Concurrent changes conflict with yours; nothing was published.";
    case "Published":
      return "Your changes were published; a file saved during the call conflicts with a later publication.";
    case "Revert":
      return `Undoing generation ${call.generation} conflicts with later changes; the rest of it was written (changed lists every file it changed).`;
  }
};

const next = (call: ConflictCall): string => {
  switch (call._tag) {
    case "Pull":
      return "Then call notes_commit.";
    case "Commit":
    case "Published":
      return "Then call notes_commit again.";
    case "Revert":
      return "Then commit the result.";
  }
};

/** One sentence: where a moved file went, and what stayed in its place. */
const movedSentence = (call: ConflictCall, file: FileIssue, movedTo: string): string => {
  const kept = file.keptAs ?? file.path;
  const theirs =
    call._tag === "Revert"
      ? {
          note: `The note ${file.path} that undoing generation ${call.generation} brings back`,
          has: `undoing generation ${call.generation} brings back`,
        }
      : { note: `The notebook's note ${file.path}`, has: "the notebook now has" };
  const what =
    file.reason === "FILE_DIRECTORY"
      ? (holder: string) => `${holder} a folder ${kept}`
      : (holder: string) => `${holder} ${kept}, a name that differs only in case`;
  return file.side === "remote"
    ? `${theirs.note} was written as ${movedTo} because ${what("your copy has")}.`
    : `Your note ${file.path} was moved to ${movedTo} because ${what(theirs.has)}.`;
};

/**
 * The message for `conflicts` (the error's `files[]`) met by `call`: the call's lead
 * sentence; that marker blocks were written, when some were; the files left as they are
 * with blocks still unresolved (pull/unresolvedBlocks.ts); the files kept over a
 * deletion; each file moved aside (the first {@link spelledOut}) with where it went and
 * why; what to do with them; and the call to make next. Pure.
 */
export const conflictMessage = (
  call: ConflictCall,
  conflicts: ReadonlyArray<FileIssue>,
): string => {
  const sentences = [lead(call)];
  const blocks = conflicts.filter((c) => c.reason === "TEXT_CONFLICT" || c.reason === "ADD_ADD");
  if (blocks.length > 0)
    sentences.push(
      `Conflict blocks were written into ${plural(blocks.length, "file")} at the listed lines; resolve them.`,
    );
  const unresolved = conflicts.filter((c) => c.reason === "MARKER_BLOCK");
  if (unresolved.length > 0)
    sentences.push(
      `${plural(unresolved.length, "file")} still ${unresolved.length === 1 ? "holds" : "hold"} unresolved conflict blocks (at the listed lines) that the notebook changed again; ${unresolved.length === 1 ? "it was" : "they were"} left as ${unresolved.length === 1 ? "it is" : "they are"}: resolve the blocks, and the next call merges the newer changes.`,
    );
  const kept = conflicts.filter((c) => c.reason === "DELETE_MODIFY");
  if (kept.length > 0)
    sentences.push(
      `${plural(kept.length, "file")} deleted on one side and changed on the other ${kept.length === 1 ? "was" : "were"} kept as changed; keep or delete each.`,
    );
  const moved = conflicts.flatMap((c) => (c.movedTo === undefined ? [] : [{ c, to: c.movedTo }]));
  if (moved.length > 0) {
    sentences.push(...moved.slice(0, spelledOut).map(({ c, to }) => movedSentence(call, c, to)));
    if (moved.length > spelledOut)
      sentences.push(
        `${plural(moved.length - spelledOut, "more file")} moved aside likewise (each entry's movedTo says where).`,
      );
    // A folder to move content into exists only where a file met a folder.
    const where = moved.some(({ c }) => c.reason === "FILE_DIRECTORY")
      ? "in the folder, or under another name"
      : "under another name";
    sentences.push(
      `Keep what you need of ${moved.length === 1 ? "the moved file" : "each moved file"} (${where}) and delete the rest.`,
    );
  }
  if (sentences.length === 1) sentences.push("Resolve the listed files.");
  sentences.push(next(call));
  return sentences.join(" ");
};
