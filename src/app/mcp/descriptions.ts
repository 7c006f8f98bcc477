/**
 * The text the host shows the model (SPEC §2.2): both tool descriptions and the session
 * instructions, each followed by one sentence per configured path set. With neither set
 * configured the text is exactly the base text, byte for byte.
 */
import type { PathSets } from "../../domain/pathSets.js";

/** The base description of notes_pull. */
export const pullDescription =
  "Write the current notebook into the notebook directory and record the accepted state. " +
  "Omit path or pass an empty string to use the server's notebook directory, which the result reports. " +
  "Edit UTF-8 text files (without U+0000) there between notes_pull and notes_commit; " +
  "notes_commit publishes the changes and incorporates concurrent non-conflicting changes.";

/** The base description of notes_commit. */
export const commitDescription =
  "Publish the caller's changes in the notebook directory and incorporate concurrent non-conflicting changes. " +
  "Omit path or pass an empty string to use the server's notebook directory, which the result reports. " +
  "message must be non-blank UTF-8 without U+0000, at most 16,384 bytes; " +
  "it is retained in recent internal history only.";

const entries = (list: ReadonlyArray<string>): string =>
  list.map((entry) => `\`${entry}\``).join(", ");

/**
 * The path-set sentences, writable first: each names its entries and the consequence;
 * with both sets the read-only sentence ends with the longest-match rule instead of
 * "write elsewhere". Empty when no set is configured.
 */
export const pathSetSentences = (sets: PathSets): ReadonlyArray<string> => [
  ...(sets.writable.length === 0
    ? []
    : [
        `Writable paths: ${entries(sets.writable)}. notes_commit refuses any change elsewhere, ` +
          "resets those files, and reports READ_ONLY_PATH; write only under them.",
      ]),
  ...(sets.readOnly.length === 0
    ? []
    : [
        `Read-only paths: ${entries(sets.readOnly)}. notes_commit refuses any change to them, ` +
          "resets those files, and reports READ_ONLY_PATH; " +
          (sets.writable.length === 0
            ? "write elsewhere."
            : "where the two sets nest, the longest matching entry decides."),
      ]),
];

const withSentences = (base: string, sets: PathSets): string =>
  [base, ...pathSetSentences(sets)].join(" ");

/** The description of notes_pull for a server enforcing `sets`. */
export const describePull = (sets: PathSets): string => withSentences(pullDescription, sets);

/** The description of notes_commit for a server enforcing `sets`. */
export const describeCommit = (sets: PathSets): string => withSentences(commitDescription, sets);

/** The session instructions naming the notebook directory and the workflow. */
export const instructions = (notebookDirectory: string, sets: PathSets): string =>
  withSentences(
    `The notebook directory is ${notebookDirectory}. ` +
      "Call notes_pull, edit UTF-8 text files (without U+0000) there, then call notes_commit to publish. " +
      "Both tools default to that directory; pass path only to address a subdirectory of it.",
    sets,
  );
