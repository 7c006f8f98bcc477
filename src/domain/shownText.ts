/**
 * Text from outside quire made safe to show (SPEC §9, §11; docs/history.md,
 * docs/working-copy.md): a file's name, a message or an author comes from the disk or
 * from other writers, and printed as it is it could move a terminal's cursor, recolour
 * it, reorder what it shows (bidirectional controls), break one line of a report into
 * two, or make two different names look the same (invisible characters). Such
 * characters are shown as U+FFFD, as an undecodable byte of a name is.
 */

/**
 * The bidirectional formatting characters: the marks (ALM, LRM, RLM), embeddings and
 * overrides, and isolates. Each reorders the text around it without being seen.
 */
const bidi = "\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069";

/** Every control character but tab, the line and paragraph separators and the bidi controls. */
const unsafeInText = new RegExp(`[^\\P{Cc}\\t]|[\\u2028\\u2029${bidi}]`, "gu");

/**
 * As {@link unsafeInText}, but a newline (LF) stays, and so does a CR right before one: it
 * is a CRLF file's line ending, which only returns the cursor before the newline (git
 * prints it as is); shown as U+FFFD, every line of such a file ended in one.
 */
const unsafeInLines = new RegExp(`[^\\P{Cc}\\t\\n\\r]|\\r(?!\\n)|[\\u2028\\u2029${bidi}]`, "gu");

/**
 * What a name may not show: every control character (C0 with tab and newline, DEL, C1),
 * every format character (the bidi controls, zero-width space, word joiner, U+FEFF, the
 * soft hyphen, tags…), the line and paragraph separators, and every other character
 * Unicode says to draw as nothing (Hangul fillers…). A name has no use for a tab, and an
 * invisible character would make two names look alike. But for the characters that
 * shape what is written and are part of how people spell names: the zero-width
 * non-joiner and joiner (Persian and Indic words, emoji sequences) and the variation
 * selectors (an emoji's presentation) — shown as U+FFFD, `می‌خواهم.md` or `❤️.md` would
 * be mangled in every report.
 */
const unsafeInName =
  /(?![\u200c\u200d\ufe00-\ufe0f\u{e0100}-\u{e01ef}])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/gu;

/**
 * `text` (a message, an author, a diff) with every control character but tab (and LF,
 * and CR before LF, when `lines`), the line and paragraph separators and the bidirectional controls
 * replaced by U+FFFD. Never fails. A tab and the characters that shape scripts (such as
 * the zero-width joiner of an emoji) stay: they belong to a text and cannot rewrite the
 * terminal.
 */
export const terminalSafe = (text: string, lines = false): string =>
  text.replace(lines ? unsafeInLines : unsafeInText, "\uFFFD");

/**
 * A file's name (or a path) as shown in a report, one line of text: every control
 * character (tab included), format character, line or paragraph separator and
 * invisible character replaced by U+FFFD. Never fails. Only the shown text changes:
 * structured answers (MCP `structuredContent`, `--json`, the library's objects) carry
 * the exact name.
 */
export const shownName = (name: string): string => name.replace(unsafeInName, "\uFFFD");
