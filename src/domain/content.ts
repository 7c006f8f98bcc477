/**
 * File content rules (SPEC §4): notebook files are UTF-8 without U+0000, identified
 * by the SHA-256 of their bytes.
 */
import { isUtf8 } from "node:buffer";
import { createHash } from "node:crypto";

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const utf8Encoder = new TextEncoder();

/** The content id of `bytes`: lowercase hex SHA-256. */
export const contentId = (bytes: Uint8Array): string =>
  createHash("sha256").update(bytes).digest("hex");

/** Why bytes are not notebook text. */
export type ContentProblem = "NOT_UTF8" | "CONTAINS_NUL";

/**
 * Decodes notebook text: the exact string for valid UTF-8 without U+0000, or the
 * problem. A BOM is kept as content (bytes are never normalised).
 */
export const decodeText = (
  bytes: Uint8Array,
): { readonly text: string } | { readonly problem: ContentProblem } => {
  if (bytes.includes(0)) return { problem: "CONTAINS_NUL" };
  try {
    return { text: strictUtf8.decode(bytes) };
  } catch {
    return { problem: "NOT_UTF8" };
  }
};

/**
 * What {@link decodeText} would find wrong with `bytes`, or `undefined` when they are
 * notebook text, without building the string: validating is several times cheaper than
 * decoding, which a line count of an added or deleted file does not need.
 */
export const textProblem = (bytes: Uint8Array): ContentProblem | undefined =>
  bytes.includes(0) ? "CONTAINS_NUL" : isUtf8(bytes) ? undefined : "NOT_UTF8";

/**
 * The number of lines of UTF-8 text given as bytes, counted as {@link countLines}
 * counts them in its string: LF (a byte no multi-byte sequence contains) ends a line,
 * a final run without LF is a line, empty content has none.
 */
export const countLinesOfBytes = (bytes: Uint8Array): number => {
  let count = 0;
  for (let at = bytes.indexOf(LF); at !== -1; at = bytes.indexOf(LF, at + 1)) count++;
  if (bytes.length > 0 && bytes[bytes.length - 1] !== LF) count++;
  return count;
};

const LF = 10;

/** UTF-8 bytes of a string. */
export const encodeText = (text: string): Uint8Array => utf8Encoder.encode(text);

// In a `u` regex a paired surrogate is one code point, so this matches only lone halves.
const loneSurrogate = /\p{Surrogate}/u;

/**
 * Whether `text` is text a caller may send: it has a UTF-8 form (no lone surrogate,
 * which {@link encodeText} would replace with U+FFFD) and no U+0000.
 */
export const isUtf8Text = (text: string): boolean =>
  !loneSurrogate.test(text) && !text.includes("\u0000");

/** The first thing that keeps a string from being {@link isUtf8Text}, and where it is. */
export type TextFault =
  | {
      readonly kind: "LONE_SURROGATE";
      /** The UTF-16 index (as JavaScript and JSON's `\u` escapes count). */
      readonly index: number;
      readonly codeUnit: number;
    }
  | { readonly kind: "NUL"; readonly index: number };

/** What keeps `text` from being {@link isUtf8Text} (the first fault in it), or `undefined`. */
export const textFault = (text: string): TextFault | undefined => {
  const surrogate = loneSurrogate.exec(text);
  const nul = text.indexOf("\u0000");
  if (surrogate !== null && (nul === -1 || surrogate.index < nul))
    return {
      kind: "LONE_SURROGATE",
      index: surrogate.index,
      codeUnit: text.charCodeAt(surrogate.index),
    };
  return nul === -1 ? undefined : { kind: "NUL", index: nul };
};

/**
 * A sentence (without its full stop) saying what is wrong with `subject`'s text: the two
 * faults need different fixes — a lone surrogate is a broken string (an escape or a cut
 * made in the middle of a character), U+0000 a character quire does not take — so each
 * is named, with where it is.
 */
export const textFaultMessage = (subject: string, fault: TextFault): string =>
  fault.kind === "LONE_SURROGATE"
    ? `${subject} is not well-formed Unicode: it holds a lone surrogate (U+${fault.codeUnit.toString(16).toUpperCase()} at UTF-16 index ${fault.index}), which has no UTF-8 form`
    : `${subject} must not contain U+0000 (found at UTF-16 index ${fault.index})`;

/** The largest file a notebook accepts (TOO_LARGE beyond): 32 MiB. */
export const maxFileBytes = 32 * 1024 * 1024;
