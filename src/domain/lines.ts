/**
 * Line splitting and classification for the diff and merge engine (SPEC §6.3, §6.4).
 *
 * A line is a run of text ending with, and including, `\n`; a final run without `\n`
 * is a line too; the empty text has no lines. This is how git's xdiff cuts records.
 * Lines are not materialised as strings: a text is described by its line start
 * offsets, and each line gets an integer class (equal lines, equal classes) so the
 * diff compares numbers. Classification is the hot path of a large merge, hence the
 * hand-rolled hash table and the block comparison against a similar text.
 */

/** A text cut into lines: line i is `text.slice(starts[i], starts[i + 1])`. */
export interface LineIndex {
  readonly text: string;
  /** Line start offsets, plus `text.length` at the end (length = line count + 1). */
  readonly starts: Int32Array;
}

/** A text's lines together with their classes from one {@link LineClassifier}. */
export interface ClassifiedText extends LineIndex {
  readonly classes: Int32Array;
}

const LF = 10;
const CR = 13;
const BOM = 0xfeff;

/** The number of lines of `text`. */
export const countLines = (text: string): number => {
  let count = 0;
  for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", at + 1)) count++;
  if (text.length > 0 && text.charCodeAt(text.length - 1) !== LF) count++;
  return count;
};

/** Cuts `text` into lines, in one pass. */
export const indexLines = (text: string): LineIndex => {
  const length = text.length;
  let starts = new Int32Array(Math.max(16, (length >> 5) + 2));
  let count = 0;
  let position = 0;
  while (position < length) {
    if (count + 1 >= starts.length) {
      const grown = new Int32Array(2 * starts.length);
      grown.set(starts);
      starts = grown;
    }
    starts[count++] = position;
    const newline = text.indexOf("\n", position);
    position = newline === -1 ? length : newline + 1;
  }
  starts[count] = length;
  return { text, starts: starts.subarray(0, count + 1) };
};

/** Splits `text` into line strings that keep their terminators; `lines.join("") === text`. */
export const splitLines = (text: string): Array<string> => {
  const { starts } = indexLines(text);
  const lines: Array<string> = [];
  for (let i = 0; i + 1 < starts.length; i++) lines.push(text.slice(starts[i], starts[i + 1]));
  return lines;
};

/** How lines are compared. */
export type LineEquality =
  /** Byte for byte, terminator included (the merge). */
  | "exact"
  /** Ignoring one CR before the LF or at the end of a final line (the diffstat, SPEC §6.4). */
  | "ignore-cr"
  /**
   * Ignoring the line ending altogether: LF, CRLF, a lone final CR or none, and a byte
   * order mark at the start of the text (the union merge, where an editor's change of
   * line endings, of the final newline or of the mark must not make a shared line look
   * like two lines).
   */
  | "ignore-eol";

/** Lines hashed per block before comparing whole blocks again. */
const MIN_BLOCK = 8;
const MAX_BLOCK = 4096;
/** How far ahead a resynchronisation looks for the reference line that matches. */
const RESYNC_WINDOW = 64;

/**
 * Assigns every distinct line a class, consistently across all the texts it sees, so
 * the classes of different texts can be compared. Not thread-safe, not persistent:
 * one classifier per merge or diff.
 */
export class LineClassifier {
  private readonly ignoreCr: boolean;
  private readonly ignoreEol: boolean;
  private readonly texts: Array<string> = [];
  private slots: Int32Array;
  private classHash: Int32Array;
  private classText: Int32Array;
  private classStart: Int32Array;
  private classEnd: Int32Array;
  private classComplete: Uint8Array;
  private count = 0;

  /** `expectedLines` only sizes the tables up front; they grow as needed. */
  constructor(equality: LineEquality, expectedLines = 64) {
    this.ignoreEol = equality === "ignore-eol";
    this.ignoreCr = equality === "ignore-cr" || this.ignoreEol;
    const classes = Math.max(16, expectedLines);
    let capacity = 32;
    while (capacity < 2 * classes) capacity *= 2;
    this.slots = new Int32Array(capacity);
    this.classHash = new Int32Array(classes);
    this.classText = new Int32Array(classes);
    this.classStart = new Int32Array(classes);
    this.classEnd = new Int32Array(classes);
    this.classComplete = new Uint8Array(classes);
  }

  /** The number of classes so far; every class is below it. */
  get size(): number {
    return this.count;
  }

  /** Cuts `text` into lines and classifies every one of them. */
  classify(text: string): ClassifiedText {
    const { starts } = indexLines(text);
    const lineCount = starts.length - 1;
    const classes = new Int32Array(lineCount);
    const textId = this.addText(text);
    for (let line = 0; line < lineCount; line++) {
      classes[line] = this.classOf(textId, starts[line] ?? 0, starts[line + 1] ?? 0);
    }
    return { text, starts, classes };
  }

  /**
   * Same result as {@link classify}, but much faster when `text` shares long runs of
   * lines with `reference` (classified by this classifier): matching runs are found
   * by comparing whole blocks of text and take the reference's classes, only the
   * other lines are hashed.
   */
  classifyLike(text: string, reference: ClassifiedText): ClassifiedText {
    const { starts } = indexLines(text);
    const lineCount = starts.length - 1;
    const classes = new Int32Array(lineCount);
    const textId = this.addText(text);
    const ref = reference.text;
    const refStarts = reference.starts;
    const refClasses = reference.classes;
    const refCount = refStarts.length - 1;
    const refUnterminated = ref.length > 0 && ref.charCodeAt(ref.length - 1) !== LF;
    const uniquePosition = this.uniquePositions(refClasses);
    // Classes created from here on are lines the reference does not have.
    const referenceClasses = this.count;

    let line = 0;
    let refLine = 0;
    let block = MIN_BLOCK;
    while (line < lineCount) {
      // Copy the longest run of whole reference lines that the text repeats here.
      const available = Math.min(block, refCount - refLine, lineCount - line);
      const matched = this.matchingLines(
        text,
        starts[line] ?? 0,
        reference,
        refLine,
        available,
        refUnterminated,
      );
      if (matched > 0) {
        // The text equals the reference here, so its lines are the reference's lines.
        classes.set(refClasses.subarray(refLine, refLine + matched), line);
        line += matched;
        refLine += matched;
        block = matched === available ? Math.min(2 * block, MAX_BLOCK) : MIN_BLOCK;
        if (matched === available) continue;
      } else {
        block = MIN_BLOCK;
      }
      if (line >= lineCount) break;

      // A line the reference does not have here: hash it, then look for where the
      // reference continues so block copying can resume.
      const cls = this.classOf(textId, starts[line] ?? 0, starts[line + 1] ?? 0);
      classes[line] = cls;
      line++;
      if (cls >= referenceClasses) continue;
      const windowEnd = Math.min(refCount, refLine + RESYNC_WINDOW);
      let found = -1;
      for (let r = refLine; r < windowEnd; r++) {
        if (refClasses[r] === cls) {
          found = r;
          break;
        }
      }
      if (found === -1) {
        const unique = uniquePosition[cls] ?? -1;
        if (unique >= refLine) found = unique;
      }
      if (found !== -1) refLine = found + 1;
    }
    return { text, starts, classes };
  }

  /**
   * The number of reference lines, from `refLine` and at most `limit`, that `text`
   * repeats verbatim from offset `at` — found with a few native string comparisons.
   */
  private matchingLines(
    text: string,
    at: number,
    reference: ClassifiedText,
    refLine: number,
    limit: number,
    refUnterminated: boolean,
  ): number {
    const refStarts = reference.starts;
    const refCount = refStarts.length - 1;
    const from = refStarts[refLine] ?? 0;
    // Under "ignore-eol" a first line is keyed without its byte order mark and any other
    // line with it: equal text at the start of one and elsewhere in the other may differ.
    if (this.ignoreEol && (at === 0) !== (refLine === 0)) return 0;
    const matches = (lines: number): boolean => {
      const to = refStarts[refLine + lines] ?? 0;
      // A final reference line without LF only matches a final line of the text.
      if (refUnterminated && refLine + lines === refCount && at + (to - from) !== text.length)
        return false;
      // Native substring equality is a memcmp; startsWith is far slower on large runs.
      return text.substring(at, at + (to - from)) === reference.text.substring(from, to);
    };
    if (limit <= 0) return 0;
    if (matches(limit)) return limit;
    // Inside a run of changed lines even the first line differs: say so cheaply.
    if (limit === 1 || !matches(1)) return 0;
    // Binary search for the longest matching prefix of the block.
    let low = 1;
    let high = limit - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (matches(middle)) low = middle;
      else high = middle - 1;
    }
    return low;
  }

  /** For each class, its line in `classes` if it occurs exactly once, else -1. */
  private uniquePositions(classes: Int32Array): Int32Array {
    const positions = new Int32Array(this.count).fill(-1);
    const seen = new Uint8Array(this.count);
    for (let i = 0; i < classes.length; i++) {
      const cls = classes[i] ?? 0;
      if (seen[cls] === 0) {
        seen[cls] = 1;
        positions[cls] = i;
      } else {
        positions[cls] = -1;
      }
    }
    return positions;
  }

  private addText(text: string): number {
    this.texts.push(text);
    return this.texts.length - 1;
  }

  /** The class of the line [start, end) of text `textId`, creating it if new. */
  private classOf(textId: number, lineStart: number, end: number): number {
    const text = this.texts[textId] ?? "";
    // A byte order mark an editor adds or drops is not part of the first line's text.
    const start =
      this.ignoreEol && lineStart === 0 && end > 0 && text.charCodeAt(0) === BOM ? 1 : lineStart;
    let keyEnd = end;
    let complete = 0;
    if (this.ignoreCr) {
      if (keyEnd > start && text.charCodeAt(keyEnd - 1) === LF) {
        keyEnd--;
        // Only the union merge lets a final line without LF equal the same line with one.
        complete = this.ignoreEol ? 0 : 1;
      }
      if (keyEnd > start && text.charCodeAt(keyEnd - 1) === CR) keyEnd--;
    }
    const hash = hashRange(text, start, keyEnd, complete);
    const length = keyEnd - start;
    const mask = this.slots.length - 1;
    let slot = hash & mask;
    for (;;) {
      const entry = this.slots[slot] ?? 0;
      if (entry === 0) break;
      const cls = entry - 1;
      if (
        this.classHash[cls] === hash &&
        (this.classEnd[cls] ?? 0) - (this.classStart[cls] ?? 0) === length &&
        this.classComplete[cls] === complete &&
        sameRange(
          this.texts[this.classText[cls] ?? 0] ?? "",
          this.classStart[cls] ?? 0,
          text,
          start,
          length,
        )
      ) {
        return cls;
      }
      slot = (slot + 1) & mask;
    }
    const cls = this.count++;
    if (cls >= this.classHash.length) this.growClasses();
    this.classHash[cls] = hash;
    this.classText[cls] = textId;
    this.classStart[cls] = start;
    this.classEnd[cls] = keyEnd;
    this.classComplete[cls] = complete;
    this.slots[slot] = cls + 1;
    if (2 * this.count > this.slots.length) this.growSlots();
    return cls;
  }

  private growClasses(): void {
    const size = 2 * this.classHash.length;
    const grow = (old: Int32Array): Int32Array => {
      const next = new Int32Array(size);
      next.set(old);
      return next;
    };
    this.classHash = grow(this.classHash);
    this.classText = grow(this.classText);
    this.classStart = grow(this.classStart);
    this.classEnd = grow(this.classEnd);
    const complete = new Uint8Array(size);
    complete.set(this.classComplete);
    this.classComplete = complete;
  }

  private growSlots(): void {
    const slots = new Int32Array(2 * this.slots.length);
    const mask = slots.length - 1;
    for (let cls = 0; cls < this.count; cls++) {
      let slot = (this.classHash[cls] ?? 0) & mask;
      while (slots[slot] !== 0) slot = (slot + 1) & mask;
      slots[slot] = cls + 1;
    }
    this.slots = slots;
  }
}

/** A 32-bit hash of `text[start, end)` and a flag, four characters per multiply. */
const hashRange = (text: string, start: number, end: number, flag: number): number => {
  let h = (end - start) ^ (flag << 30);
  let p = start;
  for (const last = end - 3; p < last; p += 4) {
    const word =
      text.charCodeAt(p) ^
      (text.charCodeAt(p + 1) << 8) ^
      (text.charCodeAt(p + 2) << 16) ^
      (text.charCodeAt(p + 3) << 24);
    h = Math.imul(h ^ word, 0x9e3779b1);
    h ^= h >>> 15;
  }
  for (; p < end; p++) h = Math.imul(h ^ text.charCodeAt(p), 0x85ebca6b);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h;
};

const sameRange = (
  a: string,
  aStart: number,
  b: string,
  bStart: number,
  length: number,
): boolean => {
  for (let k = 0; k < length; k++) {
    if (a.charCodeAt(aStart + k) !== b.charCodeAt(bStart + k)) return false;
  }
  return true;
};
