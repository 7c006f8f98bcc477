/**
 * Myers' O(ND) difference algorithm in linear space ("An O(ND) Difference Algorithm
 * and its Variations", 1986), with the same cost-bounding heuristics and tie-breaking
 * as git's xdiff, so that the merge places hunks exactly where `git merge-file` does.
 *
 * Works on two sequences of integer line classes and marks, in two change arrays, the
 * lines that are not part of the common subsequence it finds.
 */

/** Below this edit cost the search is always exact. */
const HEURISTIC_MIN_COST = 256;
/** The smallest cost bound; the real bound grows with the square root of the input. */
const MAX_COST_MIN = 256;
/** A run of this many equal lines counts as a "good snake" for the heuristics. */
const SNAKE_COUNT = 20;
/** How far ahead of the cost a sampled diagonal must be to be taken early. */
const K_HEURISTIC = 4;
/** Stands for "beyond any line" in the backward search vector. */
const LINE_MAX = 0x7fffffff;

/** Git's cheap integer square-root estimate (a power of two). */
export const bogoSqrt = (n: number): number => {
  let i = 1;
  for (let rest = n; rest > 0; rest = Math.floor(rest / 4)) i *= 2;
  return i;
};

/** Where a box is split: the point (i1, i2) and whether each half must be minimal. */
interface SplitPoint {
  i1: number;
  i2: number;
  minLow: boolean;
  minHigh: boolean;
}

/**
 * The diagonal search state for one diff: `v` holds the forward vector at offset
 * `forward` and the backward vector at offset `backward`, indexed by diagonal k = i1 - i2.
 */
interface SearchSpace {
  readonly a: Int32Array;
  readonly b: Int32Array;
  readonly v: Int32Array;
  readonly forward: number;
  readonly backward: number;
  readonly maxCost: number;
}

/**
 * Finds a point on a good path through the box [off1, lim1) × [off2, lim2) by running
 * the forward and backward searches until they overlap; past the cost bound (unless
 * `needMin`) it settles for the furthest-reaching or a promising diagonal instead.
 */
const split = (
  s: SearchSpace,
  off1: number,
  lim1: number,
  off2: number,
  lim2: number,
  needMin: boolean,
  out: SplitPoint,
): void => {
  const { a, b, v, forward: fo, backward: bo } = s;
  const dmin = off1 - lim2;
  const dmax = lim1 - off2;
  const fmid = off1 - off2;
  const bmid = lim1 - lim2;
  const odd = ((fmid - bmid) & 1) !== 0;
  let fmin = fmid;
  let fmax = fmid;
  let bmin = bmid;
  let bmax = bmid;
  v[fo + fmid] = off1;
  v[bo + bmid] = lim1;

  for (let ec = 1; ; ec++) {
    let gotSnake = false;

    // Widen the forward diagonal range by one on each side, or shrink it at a border.
    if (fmin > dmin) v[fo + --fmin - 1] = -1;
    else ++fmin;
    if (fmax < dmax) v[fo + ++fmax + 1] = -1;
    else --fmax;

    for (let d = fmax; d >= fmin; d -= 2) {
      const left = v[fo + d - 1] ?? -1;
      const right = v[fo + d + 1] ?? -1;
      let i1 = left >= right ? left + 1 : right;
      const prev1 = i1;
      let i2 = i1 - d;
      while (i1 < lim1 && i2 < lim2 && a[i1] === b[i2]) {
        i1++;
        i2++;
      }
      if (i1 - prev1 > SNAKE_COUNT) gotSnake = true;
      v[fo + d] = i1;
      if (odd && bmin <= d && d <= bmax && (v[bo + d] ?? LINE_MAX) <= i1) {
        out.i1 = i1;
        out.i2 = i2;
        out.minLow = true;
        out.minHigh = true;
        return;
      }
    }

    if (bmin > dmin) v[bo + --bmin - 1] = LINE_MAX;
    else ++bmin;
    if (bmax < dmax) v[bo + ++bmax + 1] = LINE_MAX;
    else --bmax;

    for (let d = bmax; d >= bmin; d -= 2) {
      const left = v[bo + d - 1] ?? LINE_MAX;
      const right = v[bo + d + 1] ?? LINE_MAX;
      let i1 = left < right ? left : right - 1;
      const prev1 = i1;
      let i2 = i1 - d;
      while (i1 > off1 && i2 > off2 && a[i1 - 1] === b[i2 - 1]) {
        i1--;
        i2--;
      }
      if (prev1 - i1 > SNAKE_COUNT) gotSnake = true;
      v[bo + d] = i1;
      if (!odd && fmin <= d && d <= fmax && i1 <= (v[fo + d] ?? -1)) {
        out.i1 = i1;
        out.i2 = i2;
        out.minLow = true;
        out.minHigh = true;
        return;
      }
    }

    if (needMin) continue;

    // Past the heuristic threshold, take a diagonal that is far along, not too far
    // off the middle, and ends a long snake: a likely good split.
    if (gotSnake && ec > HEURISTIC_MIN_COST) {
      let best = 0;
      for (let d = fmax; d >= fmin; d -= 2) {
        const dd = d > fmid ? d - fmid : fmid - d;
        const i1 = v[fo + d] ?? -1;
        const i2 = i1 - d;
        const value = i1 - off1 + (i2 - off2) - dd;
        if (
          value > K_HEURISTIC * ec &&
          value > best &&
          off1 + SNAKE_COUNT <= i1 &&
          i1 < lim1 &&
          off2 + SNAKE_COUNT <= i2 &&
          i2 < lim2
        ) {
          for (let k = 1; a[i1 - k] === b[i2 - k]; k++) {
            if (k === SNAKE_COUNT) {
              best = value;
              out.i1 = i1;
              out.i2 = i2;
              break;
            }
          }
        }
      }
      if (best > 0) {
        out.minLow = true;
        out.minHigh = false;
        return;
      }

      for (let d = bmax; d >= bmin; d -= 2) {
        const dd = d > bmid ? d - bmid : bmid - d;
        const i1 = v[bo + d] ?? LINE_MAX;
        const i2 = i1 - d;
        const value = lim1 - i1 + (lim2 - i2) - dd;
        if (
          value > K_HEURISTIC * ec &&
          value > best &&
          off1 < i1 &&
          i1 <= lim1 - SNAKE_COUNT &&
          off2 < i2 &&
          i2 <= lim2 - SNAKE_COUNT
        ) {
          for (let k = 0; a[i1 + k] === b[i2 + k]; k++) {
            if (k === SNAKE_COUNT - 1) {
              best = value;
              out.i1 = i1;
              out.i2 = i2;
              break;
            }
          }
        }
      }
      if (best > 0) {
        out.minLow = false;
        out.minHigh = true;
        return;
      }
    }

    // Too expensive: split at the furthest-reaching point of either search.
    if (ec >= s.maxCost) {
      let fbest = -1;
      let fbest1 = -1;
      for (let d = fmax; d >= fmin; d -= 2) {
        let i1 = Math.min(v[fo + d] ?? -1, lim1);
        let i2 = i1 - d;
        if (lim2 < i2) {
          i1 = lim2 + d;
          i2 = lim2;
        }
        if (fbest < i1 + i2) {
          fbest = i1 + i2;
          fbest1 = i1;
        }
      }
      let bbest = LINE_MAX;
      let bbest1 = LINE_MAX;
      for (let d = bmax; d >= bmin; d -= 2) {
        let i1 = Math.max(off1, v[bo + d] ?? LINE_MAX);
        let i2 = i1 - d;
        if (i2 < off2) {
          i1 = off2 + d;
          i2 = off2;
        }
        if (i1 + i2 < bbest) {
          bbest = i1 + i2;
          bbest1 = i1;
        }
      }
      if (lim1 + lim2 - bbest < fbest - (off1 + off2)) {
        out.i1 = fbest1;
        out.i2 = fbest - fbest1;
        out.minLow = true;
        out.minHigh = false;
      } else {
        out.i1 = bbest1;
        out.i2 = bbest - bbest1;
        out.minLow = false;
        out.minHigh = true;
      }
      return;
    }
  }
};

/**
 * Compares `a` and `b` (line classes) and sets `changed1[map1[i]]` / `changed2[map2[j]]`
 * for every line of `a` / `b` outside the common subsequence found. `map1`/`map2`
 * translate positions in `a`/`b` to the caller's line numbers. Iterative divide and
 * conquer, so deep recursion cannot overflow the stack; memory is linear.
 */
export const markChanges = (
  a: Int32Array,
  b: Int32Array,
  map1: Int32Array,
  map2: Int32Array,
  changed1: Uint8Array,
  changed2: Uint8Array,
): void => {
  const n = a.length;
  const m = b.length;
  const diagonals = n + m + 3;
  const space: SearchSpace = {
    a,
    b,
    v: new Int32Array(2 * diagonals + 2),
    forward: m + 1,
    backward: diagonals + m + 1,
    maxCost: Math.max(bogoSqrt(diagonals), MAX_COST_MIN),
  };
  const point: SplitPoint = { i1: 0, i2: 0, minLow: false, minHigh: false };
  // Pending boxes as (off1, lim1, off2, lim2, needMin) quintuples.
  const stack: Array<number> = [0, n, 0, m, 0];
  while (stack.length > 0) {
    const needMin = stack.pop() === 1;
    let lim2 = stack.pop() ?? 0;
    let off2 = stack.pop() ?? 0;
    let lim1 = stack.pop() ?? 0;
    let off1 = stack.pop() ?? 0;

    // Shrink the box by the snakes at both of its ends.
    while (off1 < lim1 && off2 < lim2 && a[off1] === b[off2]) {
      off1++;
      off2++;
    }
    while (off1 < lim1 && off2 < lim2 && a[lim1 - 1] === b[lim2 - 1]) {
      lim1--;
      lim2--;
    }

    if (off1 === lim1) {
      for (let j = off2; j < lim2; j++) changed2[map2[j] ?? 0] = 1;
    } else if (off2 === lim2) {
      for (let i = off1; i < lim1; i++) changed1[map1[i] ?? 0] = 1;
    } else {
      split(space, off1, lim1, off2, lim2, needMin, point);
      const { i1, i2, minLow, minHigh } = point;
      stack.push(i1, lim1, i2, lim2, minHigh ? 1 : 0);
      stack.push(off1, i1, off2, i2, minLow ? 1 : 0);
    }
  }
};
