/**
 * The notebook's merge attributes: `.quireattributes` at the notebook root, a
 * gitattributes-style list of `PATTERN merge=union` / `PATTERN merge=text` lines
 * (docs/merge.md), and the merge policy they give a path (the last matching line wins).
 */
import { Either } from "effect";
import { compilePattern, type PathPattern } from "./glob.js";
import { utf8Length } from "./paths.js";

/** The notebook path of the attributes file. */
export const attributesPath = ".quireattributes";

/** How a file both sides changed is merged: git's text merge, or the union merge. */
export type MergePolicy = "text" | "union";

/**
 * Which rules a merge follows: `attributes` (pull and commit) honours the `merge=union`
 * of the attributes in force; `text` merges every file as text, for an undo or a restore:
 * a union "merge" there keeps the very lines it was asked to remove (or the person's
 * version beside the restored one) and never conflicts, so the call would answer
 * "undone" or "restored" with the old lines still in the file.
 */
export type MergeRules = "attributes" | "text";

/** One valid line: files matching `pattern` merge with `merge`. */
export interface AttributeRule {
  /** One-based line number in the attributes file. */
  readonly line: number;
  readonly pattern: PathPattern;
  readonly merge: MergePolicy;
}

/** One malformed line and what is wrong with it (English, for the error message). */
export interface AttributeProblem {
  /** One-based line number in the attributes file. */
  readonly line: number;
  readonly problem: string;
}

/**
 * The most UTF-8 bytes of an attributes file that are read (64 KiB; real files hold a few
 * dozen lines). Every merge-policy lookup tries each rule, so a file of 132,000 rules
 * (32 MiB) took ~22 s to parse and seconds per path merged.
 */
export const maxAttributesBytes = 64 * 1024;

/** The most rule lines (neither blank nor comments, malformed ones included) that are read. */
export const maxAttributesRules = 1000;

/** The lines of an attributes file past one of its limits: never read, so they never match. */
export interface AttributesBeyondLimit {
  /** Which limit the file reached: {@link maxAttributesBytes} or {@link maxAttributesRules}. */
  readonly limit: "bytes" | "rules";
  /** The first line not read (one-based) and the file's last line. */
  readonly firstLine: number;
  readonly lastLine: number;
}

/**
 * A parsed attributes file: its valid lines in file order, its malformed ones, and the
 * lines past its limits, if any (not read).
 */
export interface Attributes {
  readonly rules: ReadonlyArray<AttributeRule>;
  readonly problems: ReadonlyArray<AttributeProblem>;
  readonly beyondLimit: AttributesBeyondLimit | undefined;
}

/** No attributes file: every path merges as text. */
export const noAttributes: Attributes = { rules: [], problems: [], beyondLimit: undefined };

/** How many lines `text` holds from `from` on (a final line break ends a line, not starts one). */
const linesFrom = (text: string, from: number): number => {
  let lines = 1;
  for (
    let at = text.indexOf("\n", from);
    at >= 0 && at < text.length - 1;
    at = text.indexOf("\n", at + 1)
  )
    lines++;
  return lines;
};

const isBlank = (char: string | undefined): boolean => char === " " || char === "\t";

/** Splits off the leading pattern of a line (quoted or not) and the rest after it. */
const splitPattern = (
  line: string,
): Either.Either<{ readonly pattern: string; readonly rest: string }, string> => {
  if (!line.startsWith('"')) {
    const end = line.search(/[ \t]/);
    return Either.right(
      end < 0
        ? { pattern: line, rest: "" }
        : { pattern: line.slice(0, end), rest: line.slice(end) },
    );
  }
  // A C-style quoted pattern, as gitattributes allows for names with spaces: `\"` and
  // `\\` are the only escapes a notebook path can need.
  let pattern = "";
  for (let at = 1; at < line.length; at++) {
    const char = line[at];
    if (char === '"') {
      const rest = line.slice(at + 1);
      if (rest !== "" && !isBlank(rest[0]))
        return Either.left("a quoted pattern must be followed by white space");
      return Either.right({ pattern, rest });
    }
    if (char === "\\") {
      const next = line[at + 1];
      if (next !== '"' && next !== "\\")
        return Either.left('only \\" and \\\\ may be escaped in a quoted pattern');
      pattern += next;
      at++;
    } else {
      pattern += char;
    }
  }
  return Either.left("a quoted pattern is never closed by a double quote");
};

const policies: { readonly [attribute: string]: MergePolicy } = {
  "merge=union": "union",
  "merge=text": "text",
};

/** Parses one non-blank, non-comment line (leading white space removed). */
const parseRule = (text: string, line: number): Either.Either<AttributeRule, string> =>
  Either.gen(function* () {
    if (text.startsWith("[attr]"))
      return yield* Either.left("macro attributes ([attr]) are not supported");
    const { pattern, rest } = yield* splitPattern(text);
    const attributes = rest.split(/[ \t]+/).filter((word) => word !== "");
    const [attribute, ...more] = attributes;
    if (attribute === undefined)
      return yield* Either.left(
        `the pattern "${pattern}" has no attribute; add merge=union or merge=text`,
      );
    if (more.length > 0)
      return yield* Either.left(
        `one attribute per line (found ${attributes.length}; comments must be on their own line)`,
      );
    const merge = Object.prototype.hasOwnProperty.call(policies, attribute)
      ? policies[attribute]
      : undefined;
    if (merge === undefined)
      return yield* Either.left(
        `unknown attribute "${attribute}"; the supported ones are merge=union and merge=text`,
      );
    const compiled = compilePattern(pattern);
    if (Either.isLeft(compiled))
      return yield* Either.left(`the pattern "${pattern}": ${compiled.left}`);
    return { line, pattern: compiled.right, merge };
  });

/**
 * Parses the text of an attributes file, line by line (LF or CRLF; a leading BOM is
 * ignored): blank lines and lines whose first non-blank character is `#` are skipped;
 * every other line must be `PATTERN ATTRIBUTE` with exactly one attribute, `merge=union`
 * or `merge=text`, and a pattern {@link compilePattern} accepts (double-quoted when it
 * holds white space). Reads no further than {@link maxAttributesBytes} (a line that
 * crosses it is not read) and {@link maxAttributesRules} rule lines: what lies beyond is
 * `beyondLimit` and never matches, so the cost is bounded whatever the file holds. Never
 * fails: malformed lines are returned as problems, in order.
 */
export const parseAttributes = (text: string): Attributes => {
  const rules: Array<AttributeRule> = [];
  const problems: Array<AttributeProblem> = [];
  const body = text.startsWith("\uFEFF") ? text.slice(1) : text;
  let bytes = 0;
  // Line by line without splitting the whole text: only what is read is looked at.
  for (let start = 0, line = 1; ; line++) {
    const end = body.indexOf("\n", start);
    const raw = body.slice(start, end < 0 ? body.length : end);
    bytes += utf8Length(raw) + (end < 0 ? 0 : 1);
    const content = (raw.endsWith("\r") ? raw.slice(0, -1) : raw).replace(/^[ \t]+/, "");
    const isRule = content !== "" && !content.startsWith("#");
    const limit =
      bytes > maxAttributesBytes
        ? "bytes"
        : isRule && rules.length + problems.length >= maxAttributesRules
          ? "rules"
          : undefined;
    if (limit !== undefined)
      return {
        rules,
        problems,
        beyondLimit: { limit, firstLine: line, lastLine: line - 1 + linesFrom(body, start) },
      };
    if (isRule) {
      const rule = parseRule(content, line);
      if (Either.isRight(rule)) rules.push(rule.right);
      else problems.push({ line, problem: rule.left });
    }
    if (end < 0) return { rules, problems, beyondLimit: undefined };
    start = end + 1;
  }
};

/**
 * The merge policy of `path` (a notebook path): that of the last rule whose pattern
 * matches it, `text` when none does. Malformed lines (problems) never match.
 */
export const mergePolicyOf = (attributes: Attributes, path: string): MergePolicy => {
  for (let k = attributes.rules.length - 1; k >= 0; k--) {
    const rule = attributes.rules[k];
    if (rule !== undefined && rule.pattern.matches(path)) return rule.merge;
  }
  return "text";
};
