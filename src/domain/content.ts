/**
 * File content rules (SPEC §4): notebook files are UTF-8 without U+0000, identified
 * by the SHA-256 of their bytes.
 */
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

/** UTF-8 bytes of a string. */
export const encodeText = (text: string): Uint8Array => utf8Encoder.encode(text);
