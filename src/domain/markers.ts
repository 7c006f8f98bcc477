/** The complete-marker-block scanner (SPEC §6.3). */
import type { LineRange } from "./tree.js";

/** The line opening a conflict block, without its line ending. */
export const LOCAL_MARKER = "<<<<<<< local";
/** The line between the local and the remote side of a conflict block. */
export const SEPARATOR_MARKER = "=======";
/** The line closing a conflict block. */
export const REMOTE_MARKER = ">>>>>>> remote";

const START = LOCAL_MARKER;
const SEPARATOR = SEPARATOR_MARKER;
const END = REMOTE_MARKER;

/** Which marker a line is, if any: the exact text followed by LF, CRLF or the end of the text. */
const Marker = { None: 0, Start: 1, Separator: 2, End: 3 } as const;
type Marker = (typeof Marker)[keyof typeof Marker];

const LESS = 60;
const EQUALS = 61;
const GREATER = 62;
const CR = 13;

const markerAt = (text: string, start: number, end: number): Marker => {
  // `end` excludes the LF; a CR right before it belongs to the line ending.
  let contentEnd = end;
  if (end < text.length && contentEnd > start && text.charCodeAt(contentEnd - 1) === CR)
    contentEnd--;
  const length = contentEnd - start;
  const first = text.charCodeAt(start);
  if (first === LESS && length === START.length && text.startsWith(START, start))
    return Marker.Start;
  if (first === EQUALS && length === SEPARATOR.length && text.startsWith(SEPARATOR, start))
    return Marker.Separator;
  if (first === GREATER && length === END.length && text.startsWith(END, start)) return Marker.End;
  return Marker.None;
};

/**
 * Finds every complete marker block in `text`: the exact lines `<<<<<<< local`,
 * `=======`, `>>>>>>> remote` at column zero, in order, LF or CRLF terminated (the last
 * may end the text), not nested. Returns their one-based inclusive line ranges, ordered.
 *
 * Scanning rule: a `<<<<<<< local` line opens a candidate; another one before the
 * block completes restarts the candidate there (so the innermost block counts); the
 * first `=======` after the opener arms it (further `=======` lines are content); the
 * next `>>>>>>> remote` after an armed opener closes the block; a `>>>>>>> remote`
 * before any `=======` drops the candidate. A final line ending in a lone CR is not a
 * marker (its CR is content, not a line ending). Never fails; linear time.
 */
export const findMarkerBlocks = (text: string): ReadonlyArray<LineRange> => {
  const blocks: Array<LineRange> = [];
  let opened = 0; // line number of the candidate's opener, 0 if none
  let armed = false;
  let line = 0;
  for (let start = 0; start < text.length;) {
    line++;
    const newline = text.indexOf("\n", start);
    const end = newline === -1 ? text.length : newline;
    const first = text.charCodeAt(start);
    // Only lines starting with a marker character need a closer look.
    const marker =
      first === LESS || first === EQUALS || first === GREATER
        ? markerAt(text, start, end)
        : Marker.None;
    if (marker === Marker.Start) {
      opened = line;
      armed = false;
    } else if (marker === Marker.Separator) {
      if (opened !== 0) armed = true;
    } else if (marker === Marker.End && opened !== 0) {
      if (armed) blocks.push({ start: opened, end: line });
      opened = 0;
      armed = false;
    }
    start = end + 1;
  }
  return blocks;
};
