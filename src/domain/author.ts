/**
 * Who a publication is recorded as (SPEC §11): the MCP client's `clientInfo` name and
 * version, `cli` with the OS user, or a name the operator gives (`--author` /
 * `QUIRE_AUTHOR`, an agent's role in a fleet). Every publication carries it, others
 * read it in `quire log`, so it is bounded and printable like a message line.
 */
import { utf8Length } from "./paths.js";
import { terminalSafe } from "./shownText.js";

/** An author as an increment records it. */
export interface AuthorName {
  readonly name: string;
  readonly version: string;
}

/** The most UTF-8 bytes an author name (or version) may have. */
export const maxAuthorBytes = 256;

// C0, DEL and C1 controls, and the line and paragraph separators: one author is one line.
const controls = /[\p{Cc}\u2028\u2029]/u;

// A lone surrogate half has no UTF-8 form; in a `u` regex a pair is one code point.
const loneSurrogate = /\p{Surrogate}/u;

/**
 * Why `name` cannot be an operator-given author (`undefined` when it can): blank,
 * a control character (a newline included), or more than {@link maxAuthorBytes} bytes.
 */
export const authorProblem = (name: string): string | undefined => {
  if (/^\p{White_Space}*$/u.test(name)) return "must contain visible text";
  if (controls.test(name)) return "must not contain control characters (one line of text)";
  if (loneSurrogate.test(name)) return "must be valid Unicode text (it holds a lone surrogate)";
  if (utf8Length(name) > maxAuthorBytes) return `must be at most ${maxAuthorBytes} UTF-8 bytes`;
  return undefined;
};

/** Cuts `text` to at most `max` UTF-8 bytes without splitting a character. */
const cutUtf8 = (text: string, max: number): string => {
  if (utf8Length(text) <= max) return text;
  let out = "";
  let bytes = 0;
  for (const char of text) {
    const size = utf8Length(char);
    if (bytes + size > max) break;
    out += char;
    bytes += size;
  }
  return out;
};

/**
 * A part of an author a client chose (its `clientInfo` name or version): anything the
 * client sent is accepted, as one printable line — control characters become spaces,
 * runs of white space one space, a lone surrogate half (no UTF-8 form) and a
 * bidirectional control (which would reorder how the name reads wherever it is shown,
 * `notes_log`'s structured answer included) U+FFFD, and it is cut to
 * {@link maxAuthorBytes}. Blank becomes `fallback`. Never fails: a client's odd name must
 * not make its commits fail.
 */
const printable = (text: string, fallback: string): string => {
  const line = terminalSafe(
    text
      .replace(new RegExp(controls.source, "gu"), " ")
      .replace(new RegExp(loneSurrogate.source, "gu"), "\uFFFD")
      .replace(/\s+/gu, " ")
      .trim(),
  );
  return line === "" ? fallback : cutUtf8(line, maxAuthorBytes);
};

/** The author a client's `clientInfo` names, made printable and bounded. */
export const clientAuthor = (name: string, version: string): AuthorName => ({
  name: printable(name, "unknown"),
  version: printable(version, ""),
});

/**
 * The author recorded for a publication: the client's own (`client`), or, when the
 * operator named one (`named`, already checked by {@link authorProblem}), that name with
 * the client in the version field (`claude-code 1.2.3`, `cli alice`), so both stay
 * visible in the log.
 */
export const recordedAuthor = (client: AuthorName, named: string | undefined): AuthorName =>
  named === undefined
    ? client
    : {
        name: named,
        version: cutUtf8(`${client.name} ${client.version}`.trim(), maxAuthorBytes),
      };
