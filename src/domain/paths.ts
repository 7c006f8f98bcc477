/**
 * Notebook path rules (SPEC §4): the one portable form of a path inside a notebook,
 * identical on every host, and the case-folding identity that keeps a notebook
 * materialisable on case-insensitive file systems.
 */
import { Either } from "effect";

/** Maximum UTF-8 bytes of a whole notebook path. */
export const maxPathBytes = 4096;
/** Maximum UTF-8 bytes of one path segment. */
export const maxSegmentBytes = 255;

/** Why a raw path is not a notebook path (closed set). */
export type PathProblemKind =
  | "EMPTY"
  | "ABSOLUTE"
  | "NOT_UNICODE"
  | "PATH_TOO_LONG"
  | "EMPTY_SEGMENT"
  | "SEGMENT_TOO_LONG"
  | "CONTROL_CHARACTER"
  | "FORBIDDEN_CHARACTER"
  | "TRAILING_SPACE_OR_DOT"
  | "RESERVED_NAME"
  | "DEVICE_NAME";

/** A rejected path: the rule it broke and a human sentence (no secrets, just the path). */
export interface PathProblem {
  readonly kind: PathProblemKind;
  /** The offending segment, when the problem is about one segment. */
  readonly segment?: string;
  readonly message: string;
}

/** Characters no segment may contain (besides control characters); `/` separates segments. */
export const forbiddenCharacters = '\\:*?"<>|';

const controlCharacter = /[\u0000-\u001f\u007f]/u;
const forbiddenCharacter = /[\\:*?"<>|]/u;
// With the u flag a surrogate pair is one code point, so this matches only lone halves,
// which have no UTF-8 encoding.
const loneSurrogate = /[\ud800-\udfff]/u;
const printableAscii = /^[\x20-\x7e]*$/;
const deviceStem = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)$/u;

/**
 * Normalises a raw notebook path to NFC and validates it against SPEC §4: relative,
 * `/`-separated, at most 4,096 UTF-8 bytes; each segment 1..255 bytes, no control
 * characters (U+0000–U+001F, U+007F), none of `\:*?"<>|`, not ending in space or dot,
 * not `.`, `..` or `.git` (any case), not a Windows device name (CON, PRN, AUX, NUL,
 * COM0–9, LPT0–9, CONIN$, CONOUT$, with any extension, any case). Nothing else is
 * rewritten: `./`, `//` and a trailing `/` are rejected, not repaired. Idempotent.
 * Fails with the first rule broken, checking segments left to right.
 */
export const normalizeNotebookPath = (raw: string): Either.Either<string, PathProblem> => {
  // Printable ASCII is already NFC and one byte per character: skip both scans.
  const ascii = printableAscii.test(raw);
  if (!ascii && loneSurrogate.test(raw))
    return problem("NOT_UNICODE", "the path is not valid Unicode");
  const path = ascii ? raw : raw.normalize("NFC");
  if (path.length === 0) return problem("EMPTY", "the path is empty");
  if (path.startsWith("/")) return problem("ABSOLUTE", "the path must be relative to the notebook");
  if ((ascii ? path.length : utf8Length(path)) > maxPathBytes) {
    return problem("PATH_TOO_LONG", `the path is longer than ${maxPathBytes} UTF-8 bytes`);
  }
  for (const segment of path.split("/")) {
    const broken = segmentProblem(segment);
    if (broken !== undefined) return Either.left(broken);
  }
  return Either.right(path);
};

/** Whether `raw` is already a valid, NFC notebook path. */
export const isNotebookPath = (raw: string): boolean => {
  const normalized = normalizeNotebookPath(raw);
  return Either.isRight(normalized) && normalized.right === raw;
};

/**
 * The identity of a path under Unicode case folding: two notebook paths whose keys are
 * equal cannot coexist. Approximates full case folding (`ß` ≡ `ss`, `Σ` ≡ `σ` ≡ `ς`)
 * with upper-then-lower casing on the canonical decomposition; it errs towards
 * reporting more collisions, never fewer. `/` is preserved.
 */
export const caseFoldKey = (path: string): string => path.split("/").map(foldSegment).join("/");

/**
 * Calls `visit(spelling, folded)` for each directory above `path` ("a/b/c" → "a", "a/b"),
 * `folded` being `caseFoldKey(path)`: each directory's folded form is a slice of it, so a
 * deep path costs no fold per directory. Pure.
 */
export const forEachDirectory = (
  path: string,
  folded: string,
  visit: (spelling: string, folded: string) => void,
): void => {
  // Folding keeps every "/" (no character lower-cases to or from it), so the k-th
  // slash of the path and of its folded form delimit the same directory.
  let slash = path.indexOf("/");
  let foldedSlash = folded.indexOf("/");
  while (slash !== -1 && foldedSlash !== -1) {
    visit(path.slice(0, slash), folded.slice(0, foldedSlash));
    slash = path.indexOf("/", slash + 1);
    foldedSlash = folded.indexOf("/", foldedSlash + 1);
  }
};

/**
 * Groups the paths that collide under {@link caseFoldKey}: two different paths whose
 * keys are equal, and also a path whose directory (or the path itself) folds equal to a
 * different spelling of another path's directory (`A/x.md` vs `a/y.md`, `a` vs `A/b`),
 * because a case-insensitive file system materialises those into one place. Each group
 * lists its distinct paths sorted; groups are sorted by their first path. Identical
 * duplicates are not collisions. Linear in the total number of segments.
 */
export const findCaseCollisions = (
  paths: Iterable<string>,
): ReadonlyArray<ReadonlyArray<string>> => {
  const unique = [...new Set(paths)];
  // folded prefix → the distinct original spellings of that prefix
  const spellings = new Map<string, Set<string>>();
  const prefixesOf = new Map<
    string,
    ReadonlyArray<{ readonly key: string; readonly original: string }>
  >();
  for (const path of unique) {
    const segments = path.split("/");
    const prefixes: Array<{ key: string; original: string }> = [];
    let key = "";
    let original = "";
    for (const [index, segment] of segments.entries()) {
      key = index === 0 ? foldSegment(segment) : `${key}/${foldSegment(segment)}`;
      original = index === 0 ? segment : `${original}/${segment}`;
      prefixes.push({ key, original });
      const seen = spellings.get(key);
      if (seen === undefined) spellings.set(key, new Set([original]));
      else seen.add(original);
    }
    prefixesOf.set(path, prefixes);
  }
  // Each colliding path is grouped under its shortest colliding prefix, so one
  // collision is reported once even though every longer prefix collides too.
  const groups = new Map<string, Array<string>>();
  for (const [path, prefixes] of prefixesOf) {
    const first = prefixes.find((prefix) => (spellings.get(prefix.key)?.size ?? 0) > 1);
    if (first === undefined) continue;
    const group = groups.get(first.key);
    if (group === undefined) groups.set(first.key, [path]);
    else group.push(path);
  }
  return [...groups.values()]
    .map((group) => [...group].sort(compareCodeUnits))
    .sort((a, b) => compareCodeUnits(a[0] ?? "", b[0] ?? ""));
};

/** The number of bytes of `text`'s UTF-8 encoding (lone surrogates count as U+FFFD). */
export const utf8Length = (text: string): number => {
  let bytes = 0;
  for (const char of text) {
    const codePoint = char.codePointAt(0) ?? 0;
    bytes += codePoint < 0x80 ? 1 : codePoint < 0x800 ? 2 : codePoint < 0x10000 ? 3 : 4;
  }
  return bytes;
};

/** The last segment of a `/`-separated path: the name of the file or directory it names. */
export const nameOf = (path: string): string => path.slice(path.lastIndexOf("/") + 1);

/** Code-unit order: the deterministic order of paths in reports and manifests. */
export const compareCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

const foldSegment = (segment: string): string =>
  // For printable ASCII both normalisations are the identity and upper-then-lower is lower.
  printableAscii.test(segment)
    ? segment.toLowerCase()
    : segment.normalize("NFD").toUpperCase().toLowerCase().normalize("NFC");

const segmentProblem = (segment: string): PathProblem | undefined => {
  const problem = segmentRule(segment);
  return problem === undefined
    ? undefined
    : { kind: problem.kind, segment, message: problem.message(JSON.stringify(segment)) };
};

/** The first rule `segment` breaks, with its message for the segment as shown. */
const segmentRule = (
  segment: string,
): { readonly kind: PathProblemKind; readonly message: (shown: string) => string } | undefined => {
  if (segment.length === 0)
    return { kind: "EMPTY_SEGMENT", message: () => "the path has an empty segment" };
  if (segment.length > maxSegmentBytes / 4 && utf8Length(segment) > maxSegmentBytes) {
    return {
      kind: "SEGMENT_TOO_LONG",
      message: (shown) => `the segment ${shown} is longer than ${maxSegmentBytes} UTF-8 bytes`,
    };
  }
  if (controlCharacter.test(segment)) {
    return {
      kind: "CONTROL_CHARACTER",
      message: (shown) => `the segment ${shown} contains a control character`,
    };
  }
  if (forbiddenCharacter.test(segment)) {
    return {
      kind: "FORBIDDEN_CHARACTER",
      message: (shown) => `the segment ${shown} contains one of ${forbiddenCharacters}`,
    };
  }
  if (segment === "." || segment === ".." || segment.toLowerCase() === ".git") {
    return { kind: "RESERVED_NAME", message: (shown) => `the segment ${shown} is reserved` };
  }
  if (segment.endsWith(" ") || segment.endsWith(".")) {
    return {
      kind: "TRAILING_SPACE_OR_DOT",
      message: (shown) => `the segment ${shown} ends in a space or a dot`,
    };
  }
  // Windows resolves `con.txt` and `CON .md` to the console device too.
  const stem = (segment.split(".")[0] ?? "").replace(/ +$/u, "").toLowerCase();
  if (deviceStem.test(stem)) {
    return {
      kind: "DEVICE_NAME",
      message: (shown) => `the segment ${shown} is a Windows device name`,
    };
  }
  return undefined;
};

const problem = (kind: PathProblemKind, message: string): Either.Either<string, PathProblem> =>
  Either.left({ kind, message });
