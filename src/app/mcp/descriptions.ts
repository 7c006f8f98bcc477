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

/**
 * The most characters (UTF-16 code units, which also bound code points) a description or
 * the instructions may have: some hosts cut longer text (SPEC §12: under 2,048).
 */
export const advertisedTextLimit = 2047;

/** How many entries of each set the sentences name; the others are only counted. */
interface Shown {
  readonly writable: number;
  readonly readOnly: number;
}

/**
 * The entries of one set as the sentence names them: all of them, or the first `shown`
 * and a count of the rest, which every result's array (`field`) carries in full.
 */
const entries = (list: ReadonlyArray<string>, shown: number, field: string): string => {
  const named = list.slice(0, shown).map((entry) => `\`${entry}\``);
  const rest = list.length - named.length;
  if (rest <= 0) return named.join(", ");
  const count = `${rest} ${named.length > 0 ? "more" : rest === 1 ? "entry" : "entries"}`;
  const listed = named.length === 0 ? count : `${named.join(", ")} and ${count}`;
  return `${listed} (every result's ${field} array lists ${rest === 1 ? "it" : "them all"})`;
};

const sentences = (sets: PathSets, shown: Shown): ReadonlyArray<string> => [
  ...(sets.writable.length === 0
    ? []
    : [
        `Writable paths: ${entries(sets.writable, shown.writable, "writable")}. notes_commit refuses any change elsewhere, ` +
          "resets those files, and reports READ_ONLY_PATH; write only under them.",
      ]),
  ...(sets.readOnly.length === 0
    ? []
    : [
        `Read-only paths: ${entries(sets.readOnly, shown.readOnly, "readOnly")}. notes_commit refuses any change to them, ` +
          "resets those files, and reports READ_ONLY_PATH; " +
          (sets.writable.length === 0
            ? "write elsewhere."
            : "where the two sets nest, the longest matching entry decides."),
      ]),
];

/**
 * The path-set sentences, writable first: each names its entries and the consequence;
 * with both sets the read-only sentence ends with the longest-match rule instead of
 * "write elsewhere". Empty when no set is configured. Every entry is named.
 */
export const pathSetSentences = (sets: PathSets): ReadonlyArray<string> =>
  sentences(sets, { writable: sets.writable.length, readOnly: sets.readOnly.length });

const join = (base: string, sets: PathSets, shown: Shown): string =>
  [base, ...sentences(sets, shown)].join(" ");

/**
 * `base` followed by the path-set sentences, within {@link advertisedTextLimit}: when
 * naming every entry would be longer, the sentences name as many entries as fit (in
 * order, taking turns between the two sets) and count the others. Only a base text
 * that alone exceeds the limit is returned longer (it is never cut).
 */
const withSentences = (base: string, sets: PathSets): string => {
  const full = join(base, sets, { writable: sets.writable.length, readOnly: sets.readOnly.length });
  if (full.length <= advertisedTextLimit) return full;
  let shown: Shown = { writable: 0, readOnly: 0 };
  // Each step adds one entry while the text still fits; a text of at most 2,047
  // characters names at most a few hundred entries, so this stays small.
  for (;;) {
    const moreWritable = { writable: shown.writable + 1, readOnly: shown.readOnly };
    const moreReadOnly = { writable: shown.writable, readOnly: shown.readOnly + 1 };
    // The set with fewer named entries goes first, so a long set does not hide the other.
    const next: ReadonlyArray<Shown> = (
      shown.readOnly < shown.writable ? [moreReadOnly, moreWritable] : [moreWritable, moreReadOnly]
    ).filter(
      (candidate) =>
        candidate.writable <= sets.writable.length &&
        candidate.readOnly <= sets.readOnly.length &&
        join(base, sets, candidate).length <= advertisedTextLimit,
    );
    const step = next[0];
    if (step === undefined) return join(base, sets, shown);
    shown = step;
  }
};

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
