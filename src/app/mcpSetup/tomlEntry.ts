/**
 * One `[table]` of a TOML client configuration (Codex's `[mcp_servers.<name>]`), read,
 * set and removed by replacing only that table's lines: every other byte stays as it
 * was. smol-toml parses the file (a file it cannot parse is refused) and parses the
 * result again, which must equal the original with only our table changed; anything
 * else (our table written as an inline table or dotted keys elsewhere, a parent that is
 * an inline table) is refused rather than written.
 */
import { Either } from "effect";
import { type TomlTable, TomlError, parse } from "smol-toml";
import type { EntryProblem } from "./jsonEntry.js";
import { sameValue } from "./sameValue.js";

const problem = (message: string): Either.Either<never, EntryProblem> => Either.left({ message });

const parseToml = (text: string): Either.Either<TomlTable, EntryProblem> => {
  try {
    return Either.right(parse(text));
  } catch (error) {
    const detail = error instanceof Error ? error.message.split("\n")[0] : String(error);
    // Where, as for JSON files: the first line of smol-toml's message does not say.
    const where = error instanceof TomlError ? ` (line ${error.line}, column ${error.column})` : "";
    return problem(`not valid TOML: ${detail}${where}`);
  }
};

const isTable = (value: unknown): value is TomlTable =>
  typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Date);

/** The value at `path` in a parsed document, if any. */
const valueAt = (document: TomlTable, path: ReadonlyArray<string>): unknown => {
  let current: unknown = document;
  for (const key of path) {
    if (!isTable(current)) return undefined;
    current = current[key];
  }
  return current;
};

/** A deep copy of `document` with `path` set to `value` (or deleted when undefined). */
const withValue = (document: TomlTable, path: ReadonlyArray<string>, value: unknown): unknown => {
  const [key, ...rest] = path;
  if (key === undefined) return value;
  const copy: Record<string, unknown> = { ...document };
  if (rest.length === 0) {
    if (value === undefined) delete copy[key];
    else copy[key] = value;
    return copy;
  }
  const child = document[key];
  copy[key] = withValue(isTable(child) ? child : {}, rest, value);
  return copy;
};

/** The key of a `[table]` / `[[array]]` header line, split into unquoted parts, or undefined. */
const headerKey = (line: string): ReadonlyArray<string> | undefined => {
  const match = /^\s*\[(\[?)(.*?)\]\]?\s*(#.*)?$/.exec(line);
  if (match === null) return undefined;
  const raw = match[2] ?? "";
  const parts: Array<string> = [];
  let at = 0;
  while (at < raw.length) {
    while (raw[at] === " " || raw[at] === "\t") at += 1;
    const quote = raw[at];
    let part = "";
    if (quote === '"' || quote === "'") {
      const close = raw.indexOf(quote, at + 1);
      if (close === -1) return undefined;
      part = raw.slice(at + 1, close);
      at = close + 1;
    } else {
      const bare = /^[A-Za-z0-9_-]+/.exec(raw.slice(at));
      if (bare === null) return undefined;
      part = bare[0];
      at += part.length;
    }
    parts.push(part);
    while (raw[at] === " " || raw[at] === "\t") at += 1;
    if (at < raw.length) {
      if (raw[at] !== ".") return undefined;
      at += 1;
    }
  }
  return parts;
};

/** A line of the file: its text (with its line break) and the header key it opens, if any. */
interface Line {
  readonly text: string;
  readonly header?: ReadonlyArray<string>;
}

/** A string still open at the end of a line: only a multi-line one can be. */
type OpenString = '"""' | "'''" | undefined;

/**
 * The multi-line string open at the end of `line`, given the one open at its start.
 * Outside strings, `#` starts a comment to the end of the line (a `"""` in a comment
 * opens nothing); inside a basic string (`"`, `"""`) a backslash escapes the next
 * character; a `#` inside any string is text. A closing `"""` may be preceded by one or
 * two quotes of the string's own (`""""` ends a string whose last character is `"`).
 */
const openAfter = (line: string, atStart: OpenString): OpenString => {
  let open: string | undefined = atStart;
  let at = 0;
  while (at < line.length) {
    const char = line[at];
    if (open === undefined) {
      if (char === "#") break;
      if (line.startsWith('"""', at) || line.startsWith("'''", at)) {
        open = line.slice(at, at + 3);
        at += 3;
      } else {
        if (char === '"' || char === "'") open = char;
        at += 1;
      }
    } else if (char === "\\" && open.startsWith('"')) {
      at += 2;
    } else if (line.startsWith(open, at)) {
      at += open.length;
      if (open.length === 3) while (line[at] === open[0]) at += 1;
      open = undefined;
    } else {
      at += 1;
    }
  }
  // A one-line string ends with its line (unclosed, the file does not parse anyway).
  return open === '"""' || open === "'''" ? open : undefined;
};

/**
 * The file's lines; a line that starts inside a multi-line string is never taken for a
 * header ({@link openAfter} follows strings and comments; should it still be fooled, the
 * re-parse check refuses the edit).
 */
const linesOf = (text: string): ReadonlyArray<Line> => {
  const lines = text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  let open: OpenString = undefined;
  return lines.map((line) => {
    const starts = open === undefined;
    open = openAfter(line, open);
    const header = starts ? headerKey(line.replace(/\r?\n$/, "")) : undefined;
    return header === undefined ? { text: line } : { text: line, header };
  });
};

const startsWith = (key: ReadonlyArray<string>, prefix: ReadonlyArray<string>): boolean =>
  prefix.every((part, index) => key[index] === part);

/** [from, to) line ranges of the table at `path` and its sub-tables, without trailing blank or comment lines. */
const tableRanges = (
  lines: ReadonlyArray<Line>,
  path: ReadonlyArray<string>,
): ReadonlyArray<readonly [number, number]> => {
  const ranges: Array<readonly [number, number]> = [];
  for (let index = 0; index < lines.length; index += 1) {
    const header = lines[index]?.header;
    if (header === undefined || !startsWith(header, path)) continue;
    let end = index + 1;
    while (end < lines.length && lines[end]?.header === undefined) end += 1;
    let trimmed = end;
    while (
      trimmed > index + 1 &&
      /^\s*(#.*)?$/.test((lines[trimmed - 1]?.text ?? "").replace(/\r?\n$/, ""))
    )
      trimmed -= 1;
    ranges.push([index, trimmed]);
    index = end - 1;
  }
  return ranges;
};

/** TOML basic string (JSON's escapes are TOML's, plus DEL, which TOML wants escaped). */
const tomlString = (value: string): string => JSON.stringify(value).replace(/\u007f/g, "\\u007F");

const tomlKey = (key: string): string => (/^[A-Za-z0-9_-]+$/.test(key) ? key : tomlString(key));

/** The `[path]` table holding `entry` (string and string-array values only). */
const renderTable = (
  path: ReadonlyArray<string>,
  entry: Readonly<Record<string, string | ReadonlyArray<string>>>,
  eol: string,
): string =>
  [
    `[${path.map(tomlKey).join(".")}]`,
    ...Object.entries(entry).map(
      ([key, value]) =>
        `${tomlKey(key)} = ${typeof value === "string" ? tomlString(value) : `[${value.map(tomlString).join(", ")}]`}`,
    ),
  ]
    .map((line) => `${line}${eol}`)
    .join("");

/** The value of the table at `path` (`undefined` when absent), or why the text cannot be read. */
export const readTomlEntry = (
  text: string,
  path: ReadonlyArray<string>,
): Either.Either<unknown, EntryProblem> =>
  Either.map(parseToml(text), (document) => valueAt(document, path));

/** Splices: the lines of our ranges replaced by `replacement` (in the first range) or appended. */
const splice = (
  text: string,
  path: ReadonlyArray<string>,
  replacement: string | undefined,
): string => {
  const lines = linesOf(text);
  const ranges = tableRanges(lines, path);
  const eol = text.includes("\r\n") ? "\r\n" : "\n";
  if (ranges.length === 0) {
    if (replacement === undefined) return text;
    if (text === "") return replacement;
    const ended = text.endsWith("\n") ? text : `${text}${eol}`;
    return `${ended}${eol}${replacement}`;
  }
  const out: Array<string> = [];
  let next = 0;
  const blank = (line: Line | undefined) => /^\s*$/.test(line?.text ?? "");
  for (const [rangeIndex, [from, to]] of ranges.entries()) {
    const replaced = rangeIndex === 0 && replacement !== undefined;
    // A table that goes takes the blank lines before it along, so no gap is left twice.
    let keep = from;
    while (!replaced && keep > next && blank(lines[keep - 1])) keep -= 1;
    out.push(...lines.slice(next, keep).map((line) => line.text));
    if (replaced) out.push(replacement);
    next = to;
  }
  out.push(...lines.slice(next).map((line) => line.text));
  return out.join("");
};

/** The document without empty tables (a parent our table alone created goes with it). */
const pruned = (value: unknown): unknown => {
  if (!isTable(value)) return value;
  const entries = Object.entries(value)
    .map(([key, child]) => [key, pruned(child)] as const)
    .filter(([, child]) => !(isTable(child) && Object.keys(child).length === 0));
  return Object.fromEntries(entries);
};

/**
 * Checks that `after` parses to `before` with only `path` changed to `expected`, so an
 * edit that touched anything else (or made the file invalid) is never written.
 */
const verified = (
  before: TomlTable,
  after: string,
  path: ReadonlyArray<string>,
  expected: unknown,
): Either.Either<string, EntryProblem> =>
  Either.flatMap(
    Either.mapLeft(parseToml(after), () => ({
      message: `cannot edit [${path.join(".")}] without changing other settings; edit the file by hand`,
    })),
    (parsed) =>
      sameValue(pruned(parsed), pruned(withValue(before, path, expected)))
        ? Either.right(after)
        : problem(
            `cannot edit [${path.join(".")}] without changing other settings (it is written as an inline table or dotted keys, or a parent table is inline); edit the file by hand`,
          ),
  );

/**
 * The text with the table at `path` (and any sub-tables of it) replaced by one holding
 * exactly `entry`, or appended at the end after a blank line when there is none. Fails
 * (the text unchanged) when the file is not valid TOML or the edit would change anything
 * but that table.
 */
export const setTomlEntry = (
  text: string,
  path: ReadonlyArray<string>,
  entry: Readonly<Record<string, string | ReadonlyArray<string>>>,
): Either.Either<string, EntryProblem> =>
  Either.flatMap(parseToml(text), (before) => {
    const eol = text.includes("\r\n") ? "\r\n" : "\n";
    return verified(before, splice(text, path, renderTable(path, entry, eol)), path, entry);
  });

/**
 * The text without the table at `path` and its sub-tables; the same text when there is
 * none. Fails when the file is not valid TOML or the entry is written in a form whose
 * removal would touch other lines.
 */
export const removeTomlEntry = (
  text: string,
  path: ReadonlyArray<string>,
): Either.Either<string, EntryProblem> =>
  Either.flatMap(parseToml(text), (before) =>
    valueAt(before, path) === undefined
      ? Either.right(text)
      : verified(before, splice(text, path, undefined), path, undefined),
  );
