/**
 * Post-processing of a raw line diff, as git's xdiff does it: slide each group of
 * changed lines as far down as it can go, merging groups that touch, and then back up
 * to line up with a change in the other file if one is reachable. The position of a
 * hunk decides whether two edits of a merge overlap, so this must match git exactly.
 *
 * Change arrays are indexed by line number + 1 and have a zero sentinel at both ends
 * (index 0 and index n + 1), so scans need no bounds checks.
 */

/** A group of changed lines [start, end) in one file; empty groups sit between lines. */
interface Group {
  start: number;
  end: number;
}

const isChanged = (changed: Uint8Array, line: number): boolean => changed[line + 1] === 1;

const firstGroup = (changed: Uint8Array): Group => {
  const g = { start: 0, end: 0 };
  while (isChanged(changed, g.end)) g.end++;
  return g;
};

/** Moves `g` to the next group; false if it was the last one. */
const nextGroup = (changed: Uint8Array, count: number, g: Group): boolean => {
  if (g.end === count) return false;
  g.start = g.end + 1;
  g.end = g.start;
  while (isChanged(changed, g.end)) g.end++;
  return true;
};

/** Moves `g` to the previous group; false if it was the first one. */
const previousGroup = (changed: Uint8Array, g: Group): boolean => {
  if (g.start === 0) return false;
  g.end = g.start - 1;
  g.start = g.end;
  while (isChanged(changed, g.start - 1)) g.start--;
  return true;
};

/** Slides `g` down by one line if the line after it equals its first line. */
const slideDown = (changed: Uint8Array, lines: Int32Array, g: Group): boolean => {
  if (g.end < lines.length && lines[g.start] === lines[g.end]) {
    changed[g.start + 1] = 0;
    g.start++;
    changed[g.end + 1] = 1;
    g.end++;
    while (isChanged(changed, g.end)) g.end++;
    return true;
  }
  return false;
};

/** Slides `g` up by one line if the line before it equals its last line. */
const slideUp = (changed: Uint8Array, lines: Int32Array, g: Group): boolean => {
  if (g.start > 0 && lines[g.start - 1] === lines[g.end - 1]) {
    g.start--;
    changed[g.start + 1] = 1;
    g.end--;
    changed[g.end + 1] = 0;
    while (isChanged(changed, g.start - 1)) g.start--;
    return true;
  }
  return false;
};

/** Thrown only if the two change arrays do not describe a diff; a bug, never input. */
const broken = (): never => {
  throw new Error("line diff: change groups out of sync");
};

/**
 * Slides the change groups of `changed` (over `lines`) into git's canonical positions,
 * keeping `otherChanged` (over `otherCount` lines) in step. Linear in the file size.
 */
export const compactChanges = (
  changed: Uint8Array,
  lines: Int32Array,
  otherChanged: Uint8Array,
  otherCount: number,
): void => {
  const count = lines.length;
  const g = firstGroup(changed);
  const go = firstGroup(otherChanged);

  for (;;) {
    if (g.end !== g.start) {
      let groupSize: number;
      let earliestEnd: number;
      let endMatchingOther: number;
      do {
        groupSize = g.end - g.start;
        endMatchingOther = -1;
        while (slideUp(changed, lines, g)) {
          if (!previousGroup(otherChanged, go)) broken();
        }
        earliestEnd = g.end;
        if (go.end > go.start) endMatchingOther = g.end;
        while (slideDown(changed, lines, g)) {
          if (!nextGroup(otherChanged, otherCount, go)) broken();
          if (go.end > go.start) endMatchingOther = g.end;
        }
      } while (groupSize !== g.end - g.start);

      if (g.end !== earliestEnd && endMatchingOther !== -1) {
        while (go.end === go.start) {
          if (!slideUp(changed, lines, g)) broken();
          if (!previousGroup(otherChanged, go)) broken();
        }
      }
    }
    if (!nextGroup(changed, count, g)) break;
    if (!nextGroup(otherChanged, otherCount, go)) broken();
  }
};
