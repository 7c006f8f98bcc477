/**
 * The three-way line merge plan, following git's xdiff merge at its default level
 * ("zealous, alphanumeric"): combine the hunks of base→local and base→remote; hunks
 * that overlap *or touch* in the base conflict unless identical; conflicts are then
 * narrowed by diffing the two sides against each other, and conflicts separated by
 * at most three lines, or by lines without any letter or digit, are joined.
 */
import { diffClasses, type DiffHunk } from "./lineDiff.js";

/** What a merge chunk takes. */
export const ChunkKind = {
  Conflict: 0,
  Local: 1,
  Remote: 2,
  /** Both sides made the same change after all: take local, which equals remote. */
  Same: 4,
} as const;

/** One of {@link ChunkKind}. */
export type ChunkKind = (typeof ChunkKind)[keyof typeof ChunkKind];

/**
 * A region of the merge: lines [local, local + localCount) of local correspond to
 * [remote, remote + remoteCount) of remote. Lines of local before a chunk that no
 * chunk covers are unchanged on both sides.
 */
export interface MergeChunk {
  kind: ChunkKind;
  local: number;
  localCount: number;
  remote: number;
  remoteCount: number;
}

/** The classified inputs of a merge (classes from one classifier). */
export interface MergeInput {
  readonly base: Int32Array;
  readonly local: Int32Array;
  readonly remote: Int32Array;
  /** Every class is below this. */
  readonly classCount: number;
  /** Whether local line `line` contains an ASCII letter or digit. */
  readonly localLineHasAlnum: (line: number) => boolean;
}

/** Adds a chunk, folding it into the previous one if they overlap or touch on either side. */
const append = (
  chunks: Array<MergeChunk>,
  kind: ChunkKind,
  local: number,
  localCount: number,
  remote: number,
  remoteCount: number,
): void => {
  const last = chunks[chunks.length - 1];
  if (
    last !== undefined &&
    (local <= last.local + last.localCount || remote <= last.remote + last.remoteCount)
  ) {
    if (kind !== last.kind) last.kind = ChunkKind.Conflict;
    last.localCount = local + localCount - last.local;
    last.remoteCount = remote + remoteCount - last.remote;
  } else {
    chunks.push({ kind, local, localCount, remote, remoteCount });
  }
};

const sameLines = (
  a: Int32Array,
  aStart: number,
  b: Int32Array,
  bStart: number,
  count: number,
): boolean => {
  for (let k = 0; k < count; k++) if (a[aStart + k] !== b[bStart + k]) return false;
  return true;
};

/** Walks both hunk lists in base order and lays out the chunks. */
const combine = (
  input: MergeInput,
  toLocal: ReadonlyArray<DiffHunk>,
  toRemote: ReadonlyArray<DiffHunk>,
): Array<MergeChunk> => {
  const chunks: Array<MergeChunk> = [];
  let p1 = 0;
  let p2 = 0;
  for (;;) {
    const x1 = toLocal[p1];
    const x2 = toRemote[p2];
    if (x1 === undefined || x2 === undefined) break;
    const end1 = x1.start1 + x1.count1;
    const end2 = x2.start1 + x2.count1;
    if (end1 < x2.start1) {
      append(
        chunks,
        ChunkKind.Local,
        x1.start2,
        x1.count2,
        x2.start2 - x2.start1 + x1.start1,
        x1.count1,
      );
      p1++;
      continue;
    }
    if (end2 < x1.start1) {
      append(
        chunks,
        ChunkKind.Remote,
        x1.start2 - x1.start1 + x2.start1,
        x2.count1,
        x2.start2,
        x2.count2,
      );
      p2++;
      continue;
    }
    const identical =
      x1.start1 === x2.start1 &&
      x1.count1 === x2.count1 &&
      x1.count2 === x2.count2 &&
      sameLines(input.local, x1.start2, input.remote, x2.start2, x1.count2);
    if (!identical) {
      // Widen both sides to cover the union of the two base ranges.
      const off = x1.start1 - x2.start1;
      const ffo = off + x1.count1 - x2.count1;
      let local = x1.start2;
      let remote = x2.start2;
      if (off > 0) local -= off;
      else remote += off;
      let localCount = x1.start2 + x1.count2 - local;
      let remoteCount = x2.start2 + x2.count2 - remote;
      if (ffo < 0) localCount -= ffo;
      else remoteCount += ffo;
      append(chunks, ChunkKind.Conflict, local, localCount, remote, remoteCount);
    }
    if (end1 >= end2) p2++;
    if (end2 >= end1) p1++;
  }
  const localShift = input.local.length - input.base.length;
  const remoteShift = input.remote.length - input.base.length;
  for (; p1 < toLocal.length; p1++) {
    const x1 = toLocal[p1];
    if (x1 !== undefined)
      append(chunks, ChunkKind.Local, x1.start2, x1.count2, x1.start1 + remoteShift, x1.count1);
  }
  for (; p2 < toRemote.length; p2++) {
    const x2 = toRemote[p2];
    if (x2 !== undefined)
      append(chunks, ChunkKind.Remote, x2.start1 + localShift, x2.count1, x2.start2, x2.count2);
  }
  return chunks;
};

/** Narrows each conflict to the hunks of a local-vs-remote diff of its two sides. */
const refine = (input: MergeInput, chunks: ReadonlyArray<MergeChunk>): Array<MergeChunk> => {
  const refined: Array<MergeChunk> = [];
  for (const chunk of chunks) {
    if (chunk.kind !== ChunkKind.Conflict || chunk.localCount === 0 || chunk.remoteCount === 0) {
      refined.push(chunk);
      continue;
    }
    const hunks = diffClasses(
      input.local.subarray(chunk.local, chunk.local + chunk.localCount),
      input.remote.subarray(chunk.remote, chunk.remote + chunk.remoteCount),
      input.classCount,
    );
    if (hunks.length === 0) {
      chunk.kind = ChunkKind.Same;
      refined.push(chunk);
      continue;
    }
    for (const hunk of hunks) {
      refined.push({
        kind: ChunkKind.Conflict,
        local: chunk.local + hunk.start1,
        localCount: hunk.count1,
        remote: chunk.remote + hunk.start2,
        remoteCount: hunk.count2,
      });
    }
  }
  return refined;
};

/** Joins neighbouring conflicts separated by ≤ 3 local lines or by lines without letters and digits. */
const joinNearConflicts = (
  input: MergeInput,
  chunks: ReadonlyArray<MergeChunk>,
): Array<MergeChunk> => {
  const joined: Array<MergeChunk> = [];
  let current = chunks[0];
  if (current === undefined) return joined;
  for (let k = 1; k < chunks.length; k++) {
    const next = chunks[k];
    if (next === undefined) break;
    const gapStart = current.local + current.localCount;
    const gapEnd = next.local;
    const join =
      current.kind === ChunkKind.Conflict &&
      next.kind === ChunkKind.Conflict &&
      (gapEnd - gapStart <= 3 || !anyAlnum(input, gapStart, gapEnd));
    if (join) {
      current.localCount = next.local + next.localCount - current.local;
      current.remoteCount = next.remote + next.remoteCount - current.remote;
    } else {
      joined.push(current);
      current = next;
    }
  }
  joined.push(current);
  return joined;
};

const anyAlnum = (input: MergeInput, from: number, to: number): boolean => {
  for (let line = from; line < to; line++) if (input.localLineHasAlnum(line)) return true;
  return false;
};

/**
 * Plans the merge of the base→local hunks and base→remote hunks (both non-empty
 * diffs of `input`) as an ordered list of chunks, exactly as git merge-file does.
 */
export const planMerge = (
  input: MergeInput,
  toLocal: ReadonlyArray<DiffHunk>,
  toRemote: ReadonlyArray<DiffHunk>,
): Array<MergeChunk> => joinNearConflicts(input, planRegions(input, toLocal, toRemote));

/**
 * {@link planMerge} before neighbouring conflicts are joined: every conflict is as
 * narrow as the diff of its two sides makes it, and lines both sides share between
 * two conflicts stay outside them. Clean chunks are exactly those of `planMerge`.
 */
export const planRegions = (
  input: MergeInput,
  toLocal: ReadonlyArray<DiffHunk>,
  toRemote: ReadonlyArray<DiffHunk>,
): Array<MergeChunk> => refine(input, combine(input, toLocal, toRemote));
