/**
 * Three-way line merges of texts (SPEC §6.3): git's, with git-style conflict markers,
 * and the union merge that keeps both sides' lines where they overlap (docs/merge.md).
 */
import { ChunkKind, planMerge, planRegions, type MergeChunk, type MergeInput } from "./diff3.js";
import { diffClasses, type DiffHunk } from "./lineDiff.js";
import { LineClassifier, type ClassifiedText, type LineEquality } from "./lines.js";
import { LOCAL_MARKER, REMOTE_MARKER, SEPARATOR_MARKER } from "./markers.js";
import type { LineRange } from "./tree.js";

/** The result of {@link mergeText}. */
export interface TextMergeResult {
  /** The merged text; contains complete marker blocks where `conflicts` is non-empty. */
  readonly text: string;
  /** The line ranges of each conflict block in `text`, from `<<<<<<< local` to `>>>>>>> remote` inclusive. */
  readonly conflicts: ReadonlyArray<LineRange>;
}

const LF = 10;
const CR = 13;
const BOM = 0xfeff;

/** CRLF when the first line break of `text` is CRLF, else LF (SPEC §6.3). */
const markerLineEnding = (text: string): string => {
  const newline = text.indexOf("\n");
  return newline > 0 && text.charCodeAt(newline - 1) === CR ? "\r\n" : "\n";
};

const isAsciiAlnum = (code: number): boolean =>
  (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122);

/**
 * Accumulates the merged text as slices of the inputs (joined once at the end) and
 * keeps count of the output lines for the conflict ranges.
 */
class MergeOutput {
  private readonly pieces: Array<string> = [];
  private lines = 0;
  private atLineStart = true;
  private empty = true;
  readonly conflicts: Array<LineRange> = [];

  /**
   * `bomFirstOnly`: a byte order mark opening a side's first line is written only at the
   * start of the result (the union merge compares lines without it, so that line can
   * land anywhere; mid-file it would be content nobody wrote).
   */
  constructor(
    private readonly eol: string,
    private readonly bomFirstOnly: boolean,
  ) {}

  /**
   * Appends lines [from, to) of `source`, on a line of their own: when the union merge
   * takes a side's final line without LF as equal to a line that had one, lines can
   * follow it, and they must not be glued onto it.
   */
  copy(source: ClassifiedText, from: number, to: number): void {
    if (to <= from) return;
    this.breakLine();
    const opening = source.starts[from] ?? 0;
    const start =
      this.bomFirstOnly && !this.empty && opening === 0 && source.text.charCodeAt(0) === BOM
        ? 1
        : opening;
    const end = source.starts[to] ?? 0;
    if (end > start) this.empty = false;
    this.pieces.push(source.text.slice(start, end));
    this.lines += to - from;
    this.atLineStart = source.text.charCodeAt(end - 1) === LF;
  }

  /** Appends lines [from, to) of `source` as one side of a conflict block, always ending with a line break. */
  copySide(source: ClassifiedText, from: number, to: number): void {
    this.copy(source, from, to);
    this.breakLine();
  }

  /** Appends one marker line at the start of a line. */
  marker(text: string): void {
    this.breakLine();
    this.empty = false;
    this.pieces.push(text, this.eol);
    this.lines++;
  }

  /**
   * Writes both sides of a conflict region without markers: remote's lines, then
   * local's, with a line break between them if remote's last line has none.
   */
  union(local: ClassifiedText, remote: ClassifiedText, chunk: MergeChunk): void {
    this.copy(remote, chunk.remote, chunk.remote + chunk.remoteCount);
    if (chunk.localCount > 0 && chunk.remoteCount > 0) this.breakLine();
    this.copy(local, chunk.local, chunk.local + chunk.localCount);
  }

  /** Writes a whole conflict block and records its range. */
  conflict(local: ClassifiedText, remote: ClassifiedText, chunk: MergeChunk): void {
    this.marker(LOCAL_MARKER);
    const start = this.lines;
    this.copySide(local, chunk.local, chunk.local + chunk.localCount);
    this.marker(SEPARATOR_MARKER);
    this.copySide(remote, chunk.remote, chunk.remote + chunk.remoteCount);
    this.marker(REMOTE_MARKER);
    this.conflicts.push({ start, end: this.lines });
  }

  text(): string {
    return this.pieces.join("");
  }

  /** Ends an unterminated line so that what follows starts at column zero. */
  private breakLine(): void {
    if (this.atLineStart) return;
    this.empty = false;
    this.pieces.push(this.eol);
    this.atLineStart = true;
  }
}

/**
 * Renders the planned chunks over the local text (git's merge buffer layout), each
 * conflict as a marker block, or with `union` as both sides' lines.
 */
const render = (
  local: ClassifiedText,
  remote: ClassifiedText,
  chunks: ReadonlyArray<MergeChunk>,
  eol: string,
  union: boolean,
): TextMergeResult => {
  const out = new MergeOutput(eol, union);
  let next = 0;
  for (const chunk of chunks) {
    if (chunk.kind === ChunkKind.Same) continue;
    out.copy(local, next, chunk.local);
    if (chunk.kind === ChunkKind.Conflict) {
      if (union) out.union(local, remote, chunk);
      else out.conflict(local, remote, chunk);
    } else if (chunk.kind === ChunkKind.Local)
      out.copy(local, chunk.local, chunk.local + chunk.localCount);
    else out.copy(remote, chunk.remote, chunk.remote + chunk.remoteCount);
    next = chunk.local + chunk.localCount;
  }
  out.copy(local, next, local.classes.length);
  return { text: out.text(), conflicts: out.conflicts };
};

/** The classified inputs and diffs of a merge neither side left unchanged. */
interface Prepared {
  readonly input: MergeInput;
  readonly localLines: ClassifiedText;
  readonly remoteLines: ClassifiedText;
  readonly toLocal: ReadonlyArray<DiffHunk>;
  readonly toRemote: ReadonlyArray<DiffHunk>;
}

/**
 * Classifies and diffs the inputs with `equality`, or returns the merged text when a
 * side made no change. A side that changed only line endings (possible under
 * "ignore-eol") is not taken whole: its lines are still the ones rendered where both
 * sides hold them.
 */
const prepare = (
  base: string,
  local: string,
  remote: string,
  equality: LineEquality,
): Prepared | string => {
  if (local === remote || remote === base) return local;
  if (local === base) return remote;

  // Sized for typical line lengths; the tables grow if the texts have more lines.
  const classifier = new LineClassifier(
    equality,
    (base.length + local.length + remote.length) >> 5,
  );
  const baseLines = classifier.classify(base);
  const localLines = classifier.classifyLike(local, baseLines);
  const remoteLines = classifier.classifyLike(remote, baseLines);
  const classCount = classifier.size;

  const toLocal = diffClasses(baseLines.classes, localLines.classes, classCount);
  const toRemote = diffClasses(baseLines.classes, remoteLines.classes, classCount);
  // Under "exact" an empty diff means equal texts, handled above; under "ignore-eol" a
  // local side that only changed line endings is rendered with the remote's changes.
  if (toRemote.length === 0) return local;

  const localLineHasAlnum = (line: number): boolean => {
    const end = localLines.starts[line + 1] ?? 0;
    for (let at = localLines.starts[line] ?? 0; at < end; at++) {
      if (isAsciiAlnum(local.charCodeAt(at))) return true;
    }
    return false;
  };
  const input: MergeInput = {
    base: baseLines.classes,
    local: localLines.classes,
    remote: remoteLines.classes,
    classCount,
    localLineHasAlnum,
  };
  return { input, localLines, remoteLines, toLocal, toRemote };
};

/**
 * Merges `local` and `remote` edits of `base` line by line, deterministically, agreeing
 * with `git merge-file -p -L local -L base -L remote local base remote` wherever git
 * merges cleanly, and conflicting wherever git does (changes that overlap or merely
 * touch in the base, unless identical). Lines keep their terminators; a final line
 * without newline is a line. Conflicts are written as complete marker blocks whose
 * marker lines end with CRLF when local's first line break is CRLF, else LF; a side
 * whose last line lacks a newline gets one so markers stay at column zero. Never fails.
 */
export const mergeText = (base: string, local: string, remote: string): TextMergeResult => {
  const prepared = prepare(base, local, remote, "exact");
  if (typeof prepared === "string") return { text: prepared, conflicts: [] };
  const { input, localLines, remoteLines, toLocal, toRemote } = prepared;
  const chunks = planMerge(input, toLocal, toRemote);
  return render(localLines, remoteLines, chunks, markerLineEnding(local), false);
};

/**
 * The union merge of `local` and `remote` edits of `base`: exactly {@link mergeText}
 * wherever that merges cleanly, and where both sides changed the same region (what
 * mergeText writes as a conflict block) the remote's lines, then the local's, without
 * markers. Conflicts are as narrow as the diff of the two sides makes them and are not
 * joined, so a line both sides added identically in a region appears once. Lines are
 * compared without their line ending (LF, CRLF, none at the end), so a line is never
 * repeated because an editor changed endings or the final newline: a line both sides
 * hold is written as local has it, a line one side added as that side has it. When a
 * line without a line break is followed by more lines, one is added (CRLF when local's
 * first line break is CRLF, else LF). A byte order mark is only ever the result's first
 * character (there when local has one). Deterministic; never fails, never writes markers
 * of its own.
 */
export const mergeUnion = (base: string, local: string, remote: string): string => {
  const prepared = prepare(base, local, remote, "ignore-eol");
  if (typeof prepared === "string") return prepared;
  const { input, localLines, remoteLines, toLocal, toRemote } = prepared;
  const chunks = planRegions(input, toLocal, toRemote);
  const text = render(localLines, remoteLines, chunks, markerLineEnding(local), true).text;
  // The working copy's byte order mark stays at its start, wherever its first line went.
  return local.charCodeAt(0) === BOM && text.charCodeAt(0) !== BOM ? `\uFEFF${text}` : text;
};
