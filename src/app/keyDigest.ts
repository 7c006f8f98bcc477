/** A digest naming a tuple of strings, for keys built from several parts. */
import { createHash } from "node:crypto";
import { encodeText } from "../domain/content.js";

/**
 * The lowercase hex SHA-256 of `parts` in a length-prefixed encoding (`<bytes>:` before
 * each part's UTF-8), so that no two different tuples collide by concatenation.
 */
export const keyDigest = (parts: ReadonlyArray<string>): string => {
  const hash = createHash("sha256");
  for (const part of parts) {
    const bytes = encodeText(part);
    hash.update(`${bytes.length}:`);
    hash.update(bytes);
  }
  return hash.digest("hex");
};
