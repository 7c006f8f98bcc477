/**
 * One entry of a JSON (or JSON-with-comments) client configuration, read, set and
 * removed by splicing the file's text: every byte outside the entry stays as it was
 * (comments, order, formatting, trailing commas); only the separator our entry needs
 * (one comma) is added or taken away. The file is parsed with jsonc-parser, which
 * accepts comments and trailing commas (VS Code's own format) and gives each value's
 * exact offsets; a file it cannot parse is refused, never rewritten.
 */
import { Either } from "effect";
import {
  type Node,
  type ParseError,
  ScanError,
  SyntaxKind,
  createScanner,
  getNodeValue,
  parseTree,
  printParseErrorCode,
} from "jsonc-parser";
import { sameValue } from "./sameValue.js";

/** Why a configuration file cannot be read or edited; `message` is for the person. */
export interface EntryProblem {
  readonly message: string;
}

const problem = (message: string): Either.Either<never, EntryProblem> => Either.left({ message });

/** Line and column (1-based) of `offset` in `text`. */
const position = (text: string, offset: number): string => {
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  return `line ${line}, column ${offset - before.lastIndexOf("\n")}`;
};

/**
 * The deepest nesting of objects and arrays a configuration file may have. jsonc-parser
 * and the walks over its tree recurse once per level, so a file nested thousands of
 * levels deep (no client writes one) would exhaust the stack; a few hundred levels are
 * far beyond any real configuration and far within the stack.
 */
export const maxJsonDepth = 256;

/**
 * Where `text` first opens an object or array deeper than {@link maxJsonDepth}, or
 * `undefined`. The scanner is a loop (no recursion), and skips strings and comments.
 */
const tooDeepAt = (text: string): number | undefined => {
  const scanner = createScanner(text, true);
  let depth = 0;
  for (let token = scanner.scan(); token !== SyntaxKind.EOF; token = scanner.scan()) {
    if (token === SyntaxKind.OpenBraceToken || token === SyntaxKind.OpenBracketToken) {
      depth += 1;
      if (depth > maxJsonDepth) return scanner.getTokenOffset();
    } else if (token === SyntaxKind.CloseBraceToken || token === SyntaxKind.CloseBracketToken) {
      depth = Math.max(0, depth - 1);
    }
  }
  return undefined;
};

/**
 * Whether `text` holds nothing but blanks and complete comments (an unterminated block
 * comment does not count: text after it would be commented out).
 */
const onlyComments = (text: string): boolean => {
  const scanner = createScanner(text, false);
  for (;;) {
    const token = scanner.scan();
    if (scanner.getTokenError() !== ScanError.None) return false;
    if (token === SyntaxKind.EOF) return true;
    if (
      token !== SyntaxKind.Trivia &&
      token !== SyntaxKind.LineBreakTrivia &&
      token !== SyntaxKind.LineCommentTrivia &&
      token !== SyntaxKind.BlockCommentTrivia
    )
      return false;
  }
};

/**
 * The parsed root object, or why the text is not a JSON object. Empty text, or text of
 * only comments (a file a person prepared for the entry), has no root.
 */
const parseRoot = (text: string): Either.Either<Node | undefined, EntryProblem> => {
  if (text.trim() === "" || onlyComments(text)) return Either.right(undefined);
  const deep = tooDeepAt(text);
  if (deep !== undefined)
    return problem(
      `nested more than ${maxJsonDepth} levels deep at ${position(text, deep)}, which quire does not edit; edit the file by hand`,
    );
  const errors: Array<ParseError> = [];
  const root = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
  const [first] = errors;
  if (first !== undefined)
    return problem(
      `not valid JSON: ${printParseErrorCode(first.error)} at ${position(text, first.offset)}`,
    );
  if (root === undefined || root.type !== "object")
    return problem("not a JSON object at the top level");
  return Either.right(root);
};

/** The property nodes named `key` of object node `object`, in order. */
const propertiesOf = (object: Node, key: string): ReadonlyArray<Node> =>
  (object.children ?? []).filter((property) => property.children?.[0]?.value === key);

/** Walks `path` from the root: the object nodes found along it and the entry's property node. */
const locate = (
  root: Node,
  path: ReadonlyArray<string>,
): Either.Either<
  { readonly parents: ReadonlyArray<Node>; readonly entry?: Node },
  EntryProblem
> => {
  const parents: Array<Node> = [root];
  for (const [index, key] of path.entries()) {
    const current = parents[parents.length - 1];
    const found = current === undefined ? [] : propertiesOf(current, key);
    // A key written twice: JSON.parse keeps the last, a client may read either, and
    // changing one would leave the other in force (an uninstall that says "removed"
    // while the client still starts the old entry). A person decides which one stays.
    if (found.length > 1)
      return problem(
        `"${path.slice(0, index + 1).join(".")}" is written ${found.length} times; remove all but one by hand, then run this again`,
      );
    const property = found[0];
    if (property === undefined) return Either.right({ parents });
    if (index === path.length - 1) return Either.right({ parents, entry: property });
    const value = property.children?.[1];
    if (value?.type !== "object")
      return problem(`"${path.slice(0, index + 1).join(".")}" is not an object`);
    parents.push(value);
  }
  return Either.right({ parents });
};

/** The value at `path` (`undefined` when absent), or why the text cannot be read. */
export const readJsonEntry = (
  text: string,
  path: ReadonlyArray<string>,
): Either.Either<unknown, EntryProblem> =>
  Either.flatMap(parseRoot(text), (root) =>
    root === undefined
      ? Either.right(undefined)
      : Either.map(locate(root, path), ({ entry }) => {
          const value = entry?.children?.[1];
          const read: unknown = value === undefined ? undefined : getNodeValue(value);
          return read;
        }),
  );

const lineStart = (text: string, offset: number): number => text.lastIndexOf("\n", offset - 1) + 1;

/** The whitespace at the start of the line holding `offset`. */
const indentAt = (text: string, offset: number): string =>
  /^[ \t]*/.exec(text.slice(lineStart(text, offset)))?.[0] ?? "";

/** The file's indentation unit: that of the top level's first member, else two spaces. */
const indentUnit = (text: string, root: Node | undefined): string => {
  const first = root?.children?.[0];
  if (first === undefined || lineStart(text, first.offset) === lineStart(text, root?.offset ?? 0))
    return "  ";
  const unit = indentAt(text, first.offset).slice(indentAt(text, root?.offset ?? 0).length);
  return unit === "" ? "  " : unit;
};

const eolOf = (text: string): string => (text.includes("\r\n") ? "\r\n" : "\n");

/** `"key": value` with the value's lines after the first indented by `indent`. */
const member = (key: string, value: unknown, indent: string, unit: string, eol: string): string =>
  `${JSON.stringify(key)}: ${JSON.stringify(value, null, unit).split("\n").join(`${eol}${indent}`)}`;

/** Skips spaces and tabs (not newlines) from `offset`. */
const skipBlanks = (text: string, offset: number): number => {
  let at = offset;
  while (text[at] === " " || text[at] === "\t") at += 1;
  return at;
};

/** The offset just before the line break ending the line of `offset` (or the text's end). */
const lineEnd = (text: string, offset: number): number => {
  const newline = text.indexOf("\n", offset);
  const end = newline === -1 ? text.length : newline;
  return text[end - 1] === "\r" ? end - 1 : end;
};

/** Whether only a line comment (or nothing) follows `offset` on its line. */
const restIsComment = (text: string, offset: number): boolean => {
  const rest = text.slice(skipBlanks(text, offset), lineEnd(text, offset));
  return rest === "" || rest.startsWith("//");
};

/** Inserts `"key": value` as the last member of object node `object`. */
const insertMember = (
  text: string,
  object: Node,
  key: string,
  value: unknown,
  unit: string,
  eol: string,
): string => {
  const members = object.children ?? [];
  const last = members[members.length - 1];
  const close = object.offset + object.length - 1;
  if (last === undefined) {
    const outer = indentAt(text, object.offset);
    const inner = `${outer}${unit}`;
    const body = member(key, value, inner, unit, eol);
    const sameLine = !text.slice(object.offset, close).includes("\n");
    const insertion = sameLine ? `${eol}${inner}${body}${eol}${outer}` : `${eol}${inner}${body}`;
    return text.slice(0, object.offset + 1) + insertion + text.slice(object.offset + 1);
  }
  const lastEnd = last.offset + last.length;
  const afterLast = skipBlanks(text, lastEnd);
  const hasComma = text[afterLast] === ",";
  const compact = lineStart(text, last.offset) === lineStart(text, object.offset);
  if (compact) {
    // `{"a": 1}`: stay on the line.
    const body = `${JSON.stringify(key)}: ${JSON.stringify(value)}`;
    return hasComma
      ? `${text.slice(0, afterLast + 1)} ${body},${text.slice(afterLast + 1)}`
      : `${text.slice(0, lastEnd)}, ${body}${text.slice(lastEnd)}`;
  }
  const indent = indentAt(text, last.offset);
  const body = member(key, value, indent, unit, eol);
  // After the last member's line (and its trailing comment), in the file's comma style.
  const commaEnd = hasComma ? afterLast + 1 : lastEnd;
  if (!restIsComment(text, commaEnd)) {
    // Something else shares the line (`"a": 1 }`): insert right after the member.
    return hasComma
      ? `${text.slice(0, commaEnd)} ${body},${text.slice(commaEnd)}`
      : `${text.slice(0, lastEnd)}, ${body}${text.slice(lastEnd)}`;
  }
  const end = lineEnd(text, commaEnd);
  const withComma = hasComma ? text : `${text.slice(0, lastEnd)},${text.slice(lastEnd)}`;
  const shifted = hasComma ? end : end + 1;
  return `${withComma.slice(0, shifted)}${eol}${indent}${body}${hasComma ? "," : ""}${withComma.slice(shifted)}`;
};

/**
 * The text with the entry at `path` set to `value`: an existing entry's value is
 * replaced in place; a missing one is added as the last member of its object, creating
 * the missing parent objects. Fails (the text unchanged) when it is not a JSON object or
 * a parent on `path` is not an object.
 */
export const setJsonEntry = (
  text: string,
  path: ReadonlyArray<string>,
  value: unknown,
): Either.Either<string, EntryProblem> =>
  Either.flatMap(parseRoot(text), (root) => {
    const eol = eolOf(text);
    const unit = indentUnit(text, root);
    if (root === undefined) {
      const nested = path.reduceRight<unknown>((inner, key) => ({ [key]: inner }), value);
      const object = `${JSON.stringify(nested, null, 2).split("\n").join(eol)}${eol}`;
      // A file of only comments keeps them, above the new object.
      if (text.trim() === "") return Either.right(object);
      return Either.right(`${text}${/\r?\n$/.test(text) ? "" : eol}${object}`);
    }
    return Either.map(locate(root, path), ({ parents, entry }) => {
      const existing = entry?.children?.[1];
      if (existing !== undefined) {
        const indent = indentAt(text, entry?.offset ?? existing.offset);
        const rendered = JSON.stringify(value, null, unit).split("\n").join(`${eol}${indent}`);
        return (
          text.slice(0, existing.offset) + rendered + text.slice(existing.offset + existing.length)
        );
      }
      const parent = parents[parents.length - 1] ?? root;
      const missing = path.slice(parents.length - 1);
      const [key, ...below] = missing;
      const nested = below.reduceRight<unknown>((inner, name) => ({ [name]: inner }), value);
      return insertMember(text, parent, key ?? "", nested, unit, eol);
    });
  });

/**
 * The text without the entry at `path` (and the comma that separated it); the same text
 * when there is none. A member on lines of its own takes those lines with it. Fails when
 * the text is not a JSON object or a parent on `path` is not an object, and when no cut
 * leaves a text that parses to the same settings without the entry (and stays free of
 * trailing commas if it was).
 */
export const removeJsonEntry = (
  text: string,
  path: ReadonlyArray<string>,
): Either.Either<string, EntryProblem> =>
  Either.flatMap(parseRoot(text), (root) => {
    if (root === undefined) return Either.right(text);
    return Either.flatMap(locate(root, path), ({ entry }) => {
      const object = entry?.parent;
      if (entry === undefined || object === undefined) return Either.right(text);
      const expected = withoutEntry(getNodeValue(root), path);
      // The layout-aware removal gives back the file an install added to; a hand-written
      // layout it does not foresee (a comma first on the next line, a comment before the
      // comma) could leave a stray comma, so its result is parsed again and, failing that,
      // only the entry and its one comma are cut.
      const strict = isStrict(text);
      const tidy = tidyRemoval(text, entry, object);
      if (removedExactly(tidy, expected, strict)) return Either.right(tidy);
      const bare = bareRemoval(text, entry, object);
      if (removedExactly(bare, expected, strict)) return Either.right(bare);
      return problem(
        `cannot remove "${path.join(".")}" without changing other settings; edit the file by hand`,
      );
    });
  });

/** `value` without the member at `path` (objects along it copied, nothing else). */
const withoutEntry = (value: unknown, path: ReadonlyArray<string>): unknown => {
  const [key, ...rest] = path;
  if (key === undefined || typeof value !== "object" || value === null || Array.isArray(value))
    return value;
  const members = Object.entries(value);
  return Object.fromEntries(
    rest.length === 0
      ? members.filter(([name]) => name !== key)
      : members.map(([name, item]) => [name, name === key ? withoutEntry(item, rest) : item]),
  );
};

/** Whether `text` has no trailing comma (a client reading it with JSON.parse accepts it). */
const isStrict = (text: string): boolean => {
  const errors: Array<ParseError> = [];
  parseTree(text, errors, { allowTrailingComma: false, disallowComments: false });
  return errors.length === 0;
};

/** Whether `text` parses, without errors (nor trailing commas if `strict`), to `expected`. */
const removedExactly = (text: string, expected: unknown, strict: boolean): boolean =>
  (!strict || isStrict(text)) &&
  Either.match(parseRoot(text), {
    onLeft: () => false,
    onRight: (root) => root !== undefined && sameValue(getNodeValue(root), expected),
  });

/** The offset of the comma that is the next token from `offset` (past blanks and comments). */
const commaFrom = (text: string, offset: number): number | undefined => {
  const scanner = createScanner(text, true);
  scanner.setPosition(offset);
  return scanner.scan() === SyntaxKind.CommaToken ? scanner.getTokenOffset() : undefined;
};

/** The text without `entry` and the one comma that separated it, every comment kept. */
const bareRemoval = (text: string, entry: Node, object: Node): string => {
  const members = object.children ?? [];
  const previous = members[members.indexOf(entry) - 1];
  const end = entry.offset + entry.length;
  const after = commaFrom(text, end);
  const comma =
    after ??
    (previous === undefined ? undefined : commaFrom(text, previous.offset + previous.length));
  const cuts: ReadonlyArray<readonly [number, number]> = [
    [entry.offset, end] as const,
    ...(comma === undefined ? [] : [[comma, comma + 1] as const]),
  ].sort((a, b) => b[0] - a[0]);
  return cuts.reduce((result, [from, to]) => result.slice(0, from) + result.slice(to), text);
};

/**
 * The text without `entry`, its comma and, when the entry had its lines to itself, those
 * lines: the exact inverse of {@link setJsonEntry}'s insertion.
 */
const tidyRemoval = (text: string, entry: Node, object: Node): string => {
  const members = object.children ?? [];
  const index = members.indexOf(entry);
  const previous = index > 0 ? members[index - 1] : undefined;
  const start = entry.offset;
  const end = entry.offset + entry.length;
  const afterEntry = skipBlanks(text, end);
  const hasComma = text[afterEntry] === ",";
  const through = hasComma ? afterEntry + 1 : end;
  const ownLines =
    text.slice(lineStart(text, start), start).trim() === "" &&
    text.slice(through, lineEnd(text, through)).trim() === "";
  let from = ownLines ? lineStart(text, start) : start;
  let to = ownLines ? Math.min(text.length, lineEnd(text, through) + eolOf(text).length) : through;
  const previousEnd = previous === undefined ? undefined : previous.offset + previous.length;
  if (!ownLines && !hasComma && previousEnd !== undefined) {
    // `"a": 1, "quire": {…}` on one line: take the comma and blanks before it too (a
    // comment there is kept by the bare removal instead).
    if (/^[\s,]*$/.test(text.slice(previousEnd, start))) from = previousEnd;
  } else if (!ownLines && hasComma) {
    to = skipBlanks(text, to);
  }
  let result = text.slice(0, from) + text.slice(to);
  if (members.length === 1) {
    // The object is empty now: `{}`, as such an object is usually written.
    const open = object.offset;
    const close = result.indexOf("}", open);
    if (close !== -1 && result.slice(open + 1, close).trim() === "")
      return result.slice(0, open + 1) + result.slice(close);
  }
  if (ownLines && !hasComma && previousEnd !== undefined) {
    // The entry was last without a trailing comma: the comma before it goes too.
    const comma = skipBlanks(result, previousEnd);
    if (result[comma] === ",") result = result.slice(0, comma) + result.slice(comma + 1);
  }
  return result;
};
