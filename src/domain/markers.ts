/** The complete-marker-block scanner (SPEC §6.3). */
import type { LineRange } from "./tree.js";

/**
 * Finds every complete marker block in `text`: the exact lines `<<<<<<< local`,
 * `=======`, `>>>>>>> remote` at column zero, in order, LF or CRLF terminated (the last
 * may end the text), not nested. Returns their one-based inclusive line ranges, ordered.
 */
export const findMarkerBlocks = (_text: string): ReadonlyArray<LineRange> => {
  throw new Error("not implemented yet");
};
