/**
 * Path sets (SPEC §5): the writable and read-only entries a server enforces on commit,
 * and the longest-match resolution of a notebook path against them.
 */
import { Either } from "effect";
import { caseFoldKey, compareCodeUnits, normalizeNotebookPath, type PathProblem } from "./paths.js";

/**
 * The normalised path sets of a server: notebook-relative entries (a file, or a
 * directory meaning everything below it), NFC, de-duplicated, sorted, disjoint. Both
 * empty means no path sets are configured.
 */
export interface PathSets {
  readonly readOnly: ReadonlyArray<string>;
  readonly writable: ReadonlyArray<string>;
}

/** No path sets: everything is writable. */
export const noPathSets: PathSets = { readOnly: [], writable: [] };

/** Why configured path sets were refused. */
export type PathSetProblem =
  | {
      readonly kind: "INVALID_ENTRY";
      readonly set: "writable" | "readOnly";
      readonly entry: string;
      readonly problem: PathProblem;
      readonly message: string;
    }
  | { readonly kind: "IN_BOTH_SETS"; readonly entry: string; readonly message: string };

/**
 * Normalises one configured entry: strips leading `./` and trailing `/`, then applies
 * the notebook path rules (NFC, no `.`/`..`, …). The notebook root itself (`""`, `.`,
 * `./`) is not an entry: fails with kind `EMPTY`.
 */
export const normalizePathSetEntry = (raw: string): Either.Either<string, PathProblem> => {
  let entry = raw;
  while (entry.startsWith("./")) entry = entry.slice(2);
  while (entry.endsWith("/")) entry = entry.slice(0, -1);
  if (entry === "." || entry === "") {
    return Either.left({
      kind: "EMPTY",
      message: "an entry must name a file or directory inside the notebook",
    });
  }
  return normalizeNotebookPath(entry);
};

/**
 * Normalises configured path sets: each entry with {@link normalizePathSetEntry},
 * de-duplicated and sorted (code-unit order). Fails with `INVALID_ENTRY` for the first
 * invalid entry (writable first), or `IN_BOTH_SETS` when an entry (compared under case
 * folding, the notebook's own path identity) is in both sets.
 */
export const normalizePathSets = (raw: {
  readonly writable: ReadonlyArray<string>;
  readonly readOnly: ReadonlyArray<string>;
}): Either.Either<PathSets, PathSetProblem> =>
  Either.gen(function* () {
    const writable = yield* normalizeSet("writable", raw.writable);
    const readOnly = yield* normalizeSet("readOnly", raw.readOnly);
    const writableKeys = new Set(writable.map(caseFoldKey));
    const both = readOnly.find((entry) => writableKeys.has(caseFoldKey(entry)));
    if (both !== undefined) {
      return yield* Either.left<PathSetProblem>({
        kind: "IN_BOTH_SETS",
        entry: both,
        message: `the entry ${JSON.stringify(both)} is both writable and read-only`,
      });
    }
    return { readOnly, writable };
  });

/** The access a path resolves to, and why. */
export type AccessDecision =
  /** `entry` is the writable entry that decided, or undefined when no entry matched. */
  | { readonly access: "writable"; readonly entry: string | undefined }
  /** Under a read-only entry (the longest match). */
  | { readonly access: "read-only"; readonly entry: string; readonly fileReason: "READ_ONLY" }
  /** Outside every writable entry, with no read-only entry matching either. */
  | {
      readonly access: "read-only";
      readonly entry: undefined;
      readonly fileReason: "NOT_WRITABLE";
    };

/**
 * Resolves a normalised notebook path against path sets (SPEC §5). An entry matches the
 * path itself or any path below it, compared under case folding. The longest matching
 * entry across both sets decides. With no match: read-only (`NOT_WRITABLE`) when a
 * writable set is configured, otherwise writable (only a read-only set, or none).
 */
export const resolveAccess = (sets: PathSets, path: string): AccessDecision => {
  const key = caseFoldKey(path);
  const writable = longestMatch(sets.writable, key);
  const readOnly = longestMatch(sets.readOnly, key);
  if (readOnly !== undefined && (writable === undefined || readOnly.length > writable.length)) {
    return { access: "read-only", entry: readOnly.entry, fileReason: "READ_ONLY" };
  }
  if (writable !== undefined) return { access: "writable", entry: writable.entry };
  if (sets.writable.length > 0)
    return { access: "read-only", entry: undefined, fileReason: "NOT_WRITABLE" };
  return { access: "writable", entry: undefined };
};

/** Whether any path set is configured. */
export const hasPathSets = (sets: PathSets): boolean =>
  sets.readOnly.length > 0 || sets.writable.length > 0;

const normalizeSet = (
  set: "writable" | "readOnly",
  raw: ReadonlyArray<string>,
): Either.Either<ReadonlyArray<string>, PathSetProblem> => {
  const entries = new Set<string>();
  for (const entry of raw) {
    const normalized = normalizePathSetEntry(entry);
    if (Either.isLeft(normalized)) {
      return Either.left({
        kind: "INVALID_ENTRY",
        set,
        entry,
        problem: normalized.left,
        message: `invalid ${set === "writable" ? "writable" : "read-only"} entry ${JSON.stringify(entry)}: ${normalized.left.message}`,
      });
    }
    entries.add(normalized.right);
  }
  return Either.right([...entries].sort(compareCodeUnits));
};

// The longest entry whose folded key is the path's key or a directory prefix of it;
// matching entries are nested prefixes, so the longest key is the deepest entry.
const longestMatch = (
  entries: ReadonlyArray<string>,
  key: string,
): { readonly entry: string; readonly length: number } | undefined => {
  let best: { entry: string; length: number } | undefined;
  for (const entry of entries) {
    const entryKey = caseFoldKey(entry);
    const matches = key === entryKey || key.startsWith(`${entryKey}/`);
    if (matches && (best === undefined || entryKey.length > best.length)) {
      best = { entry, length: entryKey.length };
    }
  }
  return best;
};
