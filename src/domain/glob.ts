/**
 * gitattributes-style path patterns (the subset quire supports, docs/merge.md): `*`,
 * `?`, `[…]` classes, `\` escapes and the `**` forms, matched against notebook paths.
 * Matching never backtracks more than one star at a time, so it is polynomial in the
 * pattern and path lengths whatever the pattern (no regular expressions).
 */
import { Either } from "effect";

/** One element of a segment pattern. */
type Token =
  | { readonly kind: "char"; readonly char: string }
  | { readonly kind: "any" }
  | { readonly kind: "star" }
  | {
      readonly kind: "class";
      readonly negated: boolean;
      readonly ranges: ReadonlyArray<readonly [number, number]>;
    };

/** A pattern for one path segment. */
type SegmentPattern = ReadonlyArray<Token>;

/** One element of a path pattern: a segment pattern, or `**` (any run of segments). */
type PathElement =
  { readonly kind: "segment"; readonly tokens: SegmentPattern } | { readonly kind: "globstar" };

/** A compiled pattern: `matches(path)` for a notebook path (NFC, `/`-separated, relative). */
export interface PathPattern {
  /** The pattern as written. */
  readonly source: string;
  /** Whether the pattern matches the file at `path`. */
  readonly matches: (path: string) => boolean;
}

const anySegment: PathElement = { kind: "segment", tokens: [{ kind: "star" }] };

/** Compiles one segment's glob (no `/` inside); fails with a problem description. */
const compileSegment = (glob: string): Either.Either<SegmentPattern, string> => {
  const chars = Array.from(glob);
  const tokens: Array<Token> = [];
  for (let at = 0; at < chars.length; at++) {
    const char = chars[at] ?? "";
    if (char === "\\") {
      const next = chars[at + 1];
      if (next === undefined) return Either.left("the pattern ends with a lone backslash");
      tokens.push({ kind: "char", char: next });
      at++;
    } else if (char === "*") {
      // Consecutive stars inside a segment are one star (gitattributes).
      if (tokens[tokens.length - 1]?.kind !== "star") tokens.push({ kind: "star" });
    } else if (char === "?") {
      tokens.push({ kind: "any" });
    } else if (char === "[") {
      const parsed = compileClass(chars, at + 1);
      if (Either.isLeft(parsed)) return Either.left(parsed.left);
      tokens.push(parsed.right.token);
      at = parsed.right.end;
    } else {
      tokens.push({ kind: "char", char });
    }
  }
  return Either.right(tokens);
};

/** Parses a class starting after its `[`; returns the token and the index of its `]`. */
const compileClass = (
  chars: ReadonlyArray<string>,
  start: number,
): Either.Either<{ readonly token: Token; readonly end: number }, string> => {
  let at = start;
  const negated = chars[at] === "!" || chars[at] === "^";
  if (negated) at++;
  const ranges: Array<readonly [number, number]> = [];
  const first = at;
  for (; at < chars.length; at++) {
    let char = chars[at] ?? "";
    if (char === "]" && at > first)
      return Either.right({ token: { kind: "class", negated, ranges }, end: at });
    if (char === "[" && chars[at + 1] === ":")
      return Either.left("character classes like [:alpha:] are not supported");
    if (char === "\\") {
      at++;
      char = chars[at] ?? "";
      if (char === "") break;
    }
    const low = char.codePointAt(0) ?? 0;
    if (chars[at + 1] === "-" && at + 2 < chars.length && chars[at + 2] !== "]") {
      let highChar = chars[at + 2] ?? "";
      at += 2;
      if (highChar === "\\") {
        at++;
        highChar = chars[at] ?? "";
        if (highChar === "") break;
      }
      const high = highChar.codePointAt(0) ?? 0;
      if (high < low) return Either.left(`the range ${char}-${highChar} is empty`);
      ranges.push([low, high]);
    } else {
      ranges.push([low, low]);
    }
  }
  return Either.left("a [ is never closed by ]");
};

const matchesToken = (token: Token, char: string): boolean => {
  switch (token.kind) {
    case "char":
      return token.char === char;
    case "any":
      return true;
    case "star":
      return false;
    case "class": {
      const code = char.codePointAt(0) ?? 0;
      const inside = token.ranges.some(([low, high]) => code >= low && code <= high);
      return inside !== token.negated;
    }
  }
};

/**
 * The classic wildcard match: `star` elements match any run of items, every other
 * element exactly one item (as `matchOne` says). Backtracking only to the last star is
 * complete for this shape of pattern, so the cost is O(elements × items) calls.
 */
const wildcard = <E, I>(
  elements: ReadonlyArray<E>,
  items: ReadonlyArray<I>,
  isStar: (element: E) => boolean,
  matchOne: (element: E, item: I) => boolean,
): boolean => {
  let e = 0;
  let i = 0;
  let starAt = -1;
  let starItem = 0;
  while (i < items.length) {
    const element = elements[e];
    const item = items[i];
    if (element !== undefined && isStar(element)) {
      starAt = e++;
      starItem = i;
    } else if (element !== undefined && item !== undefined && matchOne(element, item)) {
      e++;
      i++;
    } else if (starAt >= 0) {
      e = starAt + 1;
      i = ++starItem;
    } else {
      return false;
    }
  }
  for (; e < elements.length; e++) {
    const element = elements[e];
    if (element === undefined || !isStar(element)) return false;
  }
  return true;
};

const matchSegment = (tokens: SegmentPattern, segment: string): boolean =>
  wildcard(tokens, Array.from(segment), (token) => token.kind === "star", matchesToken);

/**
 * Compiles a gitattributes pattern (already unquoted): without a `/` it matches the
 * file name at any depth; with one (a leading `/` only anchors) it matches the whole
 * path from the notebook root, where a `**` segment matches any run of directories
 * (`**` at the end: everything inside). NFC-normalised; case-sensitive. Fails with a
 * problem description for what gitattributes forbids or quire does not support: an
 * empty pattern, a negated (`!`) pattern, a trailing `/` (directory patterns never
 * match files; write `dir/**`), empty segments, `.` and `..` segments (no notebook path
 * has one, so the pattern would never match), unclosed classes, empty ranges,
 * `[:class:]`, a trailing backslash.
 */
export const compilePattern = (written: string): Either.Either<PathPattern, string> => {
  const source = written;
  const pattern = written.normalize("NFC");
  if (pattern === "" || pattern === "/") return Either.left("the pattern is empty");
  if (pattern.startsWith("!")) return Either.left("negated patterns (!) are not allowed");
  if (pattern.endsWith("/"))
    return Either.left(
      "a pattern ending in / names a directory and matches no file; write dir/** for everything inside",
    );
  const anchored = pattern.startsWith("/");
  const body = anchored ? pattern.slice(1) : pattern;
  // No notebook path has a `.` or `..` segment: such a pattern would never match, and
  // the person who wrote `./journal.md` would get text conflicts without a word.
  if (body.split("/").some((glob) => glob === "." || glob === ".."))
    return Either.left(
      "the pattern has a . or .. segment, which no notebook path has; write the path from the notebook root (journal.md, /notes/journal.md)",
    );
  if (!anchored && !body.includes("/")) {
    const tokens = compileSegment(body);
    if (Either.isLeft(tokens)) return Either.left(tokens.left);
    const compiled = tokens.right;
    return Either.right({
      source,
      matches: (path) => matchSegment(compiled, path.slice(path.lastIndexOf("/") + 1)),
    });
  }
  const globs = body.split("/");
  const elements: Array<PathElement> = [];
  for (const glob of globs) {
    if (glob === "") return Either.left("the pattern has an empty segment (//)");
    if (glob === "**") {
      if (elements[elements.length - 1]?.kind !== "globstar") elements.push({ kind: "globstar" });
      continue;
    }
    const tokens = compileSegment(glob);
    if (Either.isLeft(tokens)) return Either.left(tokens.left);
    elements.push({ kind: "segment", tokens: tokens.right });
  }
  // A trailing `**` matches what is inside, not the directory itself: one segment or more.
  if (elements.length > 1 && elements[elements.length - 1]?.kind === "globstar")
    elements.splice(elements.length - 1, 0, anySegment);
  return Either.right({
    source,
    matches: (path) =>
      wildcard(
        elements,
        path.split("/"),
        (element) => element.kind === "globstar",
        (element, segment) => element.kind === "segment" && matchSegment(element.tokens, segment),
      ),
  });
};
