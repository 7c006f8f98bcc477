/**
 * The line diff used by the merge and the diffstat: git's xdiff Myers diff (default
 * options) re-implemented over integer line classes — trim the common ends, set aside
 * lines that cannot match, run the bounded Myers search, slide hunks into canonical
 * positions. Same hunks as git, so merges agree with `git merge-file` and counts agree
 * with `git diff --numstat`. Linear memory; no quadratic loops over lines.
 */
import { compactChanges } from "./compact.js";
import { bogoSqrt, markChanges } from "./myers.js";

/** One hunk of a diff: `count1` lines at `start1` in the first sequence became `count2` lines at `start2` in the second. */
export interface DiffHunk {
  readonly start1: number;
  readonly count1: number;
  readonly start2: number;
  readonly count2: number;
}

/** Lines occurring at least this often in the other file may be set aside (git's cap). */
const MAX_EQUAL_LIMIT = 1024;
/** How far the set-aside scan looks around a frequent line. */
const SCAN_WINDOW = 100;
/** A frequent line is set aside when frequent lines are under 1/4 of its run. */
const KEEP_RUN_RATIO = 4;

/** How a line of one file occurs in the other: not at all, a few times, very often. */
const NONE = 0;
const SOME = 1;
const MANY = 2;

/**
 * Classifies lines [from, to) of `lines` by how often they occur in the other file
 * and returns the positions of those worth diffing; the others are marked changed.
 *
 * A line without any match is set aside. A very frequent line is set aside too when
 * it sits in a run of unmatched and frequent lines (within a window of 100 lines each
 * way) in which frequent lines are under a quarter: matching it would only produce
 * noise. Git scans that window line by line; prefix sums give the same answer in
 * constant time per line, which matters for files of many identical lines.
 */
const selectLines = (
  lines: Int32Array,
  from: number,
  to: number,
  countsInOther: Int32Array,
  changed: Uint8Array,
): Int32Array => {
  const limit = Math.min(bogoSqrt(lines.length), MAX_EQUAL_LIMIT);
  const size = to - from;
  // Indexed by line - from.
  const kind = new Uint8Array(size);
  let anyMany = false;
  for (let i = 0; i < size; i++) {
    const occurrences = countsInOther[lines[from + i] ?? 0] ?? 0;
    const k = occurrences === 0 ? NONE : occurrences >= limit ? MANY : SOME;
    kind[i] = k;
    if (k === MANY) anyMany = true;
  }
  const setAside = anyMany ? frequentLinesToSetAside(kind) : undefined;
  const kept = new Int32Array(size);
  let count = 0;
  for (let i = 0; i < size; i++) {
    const k = kind[i];
    if (k === SOME || (k === MANY && setAside?.[i] !== 1)) kept[count++] = from + i;
    else changed[from + i + 1] = 1;
  }
  return kept.subarray(0, count);
};

/** For each frequent line of `kind`, 1 if it lies in a mostly unmatched run (see {@link selectLines}). */
const frequentLinesToSetAside = (kind: Uint8Array): Uint8Array => {
  const size = kind.length;
  // noneBefore[i] = unmatched lines in [0, i).
  const noneBefore = new Int32Array(size + 1);
  for (let i = 0; i < size; i++)
    noneBefore[i + 1] = (noneBefore[i] ?? 0) + (kind[i] === NONE ? 1 : 0);
  const noneIn = (start: number, end: number): number =>
    (noneBefore[end] ?? 0) - (noneBefore[start] ?? 0);
  // Nearest line with a few matches on each side; such a line ends a run.
  const previousSome = new Int32Array(size);
  for (let i = 0, last = -1; i < size; i++) {
    previousSome[i] = last;
    if (kind[i] === SOME) last = i;
  }
  const nextSome = new Int32Array(size);
  for (let i = size - 1, last = size; i >= 0; i--) {
    nextSome[i] = last;
    if (kind[i] === SOME) last = i;
  }
  const result = new Uint8Array(size);
  for (let i = 0; i < size; i++) {
    if (kind[i] !== MANY) continue;
    const before = Math.max(i - SCAN_WINDOW, 0, (previousSome[i] ?? -1) + 1);
    const unmatchedBefore = noneIn(before, i);
    if (unmatchedBefore === 0) continue;
    const after = Math.min(i + SCAN_WINDOW, size - 1, (nextSome[i] ?? size) - 1);
    const unmatchedAfter = noneIn(i + 1, after + 1);
    if (unmatchedAfter === 0) continue;
    const unmatched = unmatchedBefore + unmatchedAfter;
    // The line itself counts once on each side, as in git.
    const frequent = 2 + (i - before) + (after - i) - unmatched;
    if (frequent * KEEP_RUN_RATIO < frequent + unmatched) result[i] = 1;
  }
  return result;
};

/** Renumbers the classes of `a` and `b` densely so per-class tables stay small. */
const densify = (
  a: Int32Array,
  b: Int32Array,
): { a: Int32Array; b: Int32Array; classCount: number } => {
  const ids = new Map<number, number>();
  const renumber = (source: Int32Array): Int32Array => {
    const out = new Int32Array(source.length);
    for (let i = 0; i < source.length; i++) {
      const c = source[i] ?? 0;
      let id = ids.get(c);
      if (id === undefined) {
        id = ids.size;
        ids.set(c, id);
      }
      out[i] = id;
    }
    return out;
  };
  return { a: renumber(a), b: renumber(b), classCount: ids.size };
};

const countClasses = (lines: Int32Array, classCount: number): Int32Array => {
  const counts = new Int32Array(classCount);
  for (let i = 0; i < lines.length; i++) {
    const cls = lines[i] ?? 0;
    counts[cls] = (counts[cls] ?? 0) + 1;
  }
  return counts;
};

/** Reads the hunks off two compacted change arrays, in order. */
const buildHunks = (
  changed1: Uint8Array,
  n: number,
  changed2: Uint8Array,
  m: number,
): Array<DiffHunk> => {
  const hunks: Array<DiffHunk> = [];
  // Walk backwards like git; changedX[i] is "line i - 1 changed".
  let i1 = n;
  let i2 = m;
  while (i1 >= 0 || i2 >= 0) {
    if (changed1[i1] === 1 || changed2[i2] === 1) {
      const end1 = i1;
      const end2 = i2;
      while (changed1[i1] === 1) i1--;
      while (changed2[i2] === 1) i2--;
      hunks.push({ start1: i1, count1: end1 - i1, start2: i2, count2: end2 - i2 });
    }
    i1--;
    i2--;
  }
  return hunks.reverse();
};

/**
 * Diffs two sequences of line classes (every class below `classCount`) exactly as
 * git's default diff does and returns the hunks in order. Deterministic; empty when
 * the sequences are equal. Never fails.
 */
export const diffClasses = (a: Int32Array, b: Int32Array, classCount: number): Array<DiffHunk> => {
  const n = a.length;
  const m = b.length;
  if (classCount > 4 * (n + m) + 64) {
    const dense = densify(a, b);
    return diffClasses(dense.a, dense.b, dense.classCount);
  }
  const changed1 = new Uint8Array(n + 2);
  const changed2 = new Uint8Array(m + 2);

  const shorter = Math.min(n, m);
  let prefix = 0;
  while (prefix < shorter && a[prefix] === b[prefix]) prefix++;
  let suffix = 0;
  while (suffix < shorter - prefix && a[n - 1 - suffix] === b[m - 1 - suffix]) suffix++;

  const kept1 = selectLines(a, prefix, n - suffix, countClasses(b, classCount), changed1);
  const kept2 = selectLines(b, prefix, m - suffix, countClasses(a, classCount), changed2);

  const reduced1 = new Int32Array(kept1.length);
  const map1 = new Int32Array(kept1.length);
  for (let i = 0; i < kept1.length; i++) {
    const line = kept1[i] ?? 0;
    reduced1[i] = a[line] ?? 0;
    map1[i] = line + 1;
  }
  const reduced2 = new Int32Array(kept2.length);
  const map2 = new Int32Array(kept2.length);
  for (let i = 0; i < kept2.length; i++) {
    const line = kept2[i] ?? 0;
    reduced2[i] = b[line] ?? 0;
    map2[i] = line + 1;
  }
  markChanges(reduced1, reduced2, map1, map2, changed1, changed2);

  compactChanges(changed1, a, changed2, m);
  compactChanges(changed2, b, changed1, n);
  return buildHunks(changed1, n, changed2, m);
};
