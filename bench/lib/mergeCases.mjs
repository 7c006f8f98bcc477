// The merge-engine benchmark inputs: a base text and two sides with scattered,
// non-overlapping edits, generated deterministically so quire and git see the same files.
import { makeRng, randInt, words } from "./rng.mjs";

/** Lines kept untouched between any two edits, so no two hunks touch (git would conflict). */
const GAP = 4;

const shuffle = (rng, items) => {
  for (let i = items.length - 1; i > 0; i--) {
    const j = randInt(rng, i + 1);
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
};

/**
 * Applies edits to `base` (an array of lines without terminators). Each edit is
 * `{ at, kind, count, side }`; edits are sorted and far apart. Returns the edited lines.
 */
const applyEdits = (base, edits, makeLine) => {
  const out = [];
  let next = 0;
  let serial = 0;
  for (const edit of edits) {
    while (next < edit.at) out.push(base[next++]);
    if (edit.kind === "modify") {
      for (let i = 0; i < edit.count; i++) out.push(makeLine(serial++));
      next += edit.count;
    } else if (edit.kind === "insert") {
      for (let i = 0; i < edit.count; i++) out.push(makeLine(serial++));
    } else {
      next += edit.count;
    }
  }
  while (next < base.length) out.push(base[next++]);
  return out;
};

/**
 * Chooses `perSide` edits for each side: the file is cut into equal slots, one edit per
 * slot, at least GAP untouched lines from the slot's ends; slots are dealt to the sides
 * at random.
 */
const planEdits = (rng, lineCount, perSide, kinds) => {
  const total = perSide * 2;
  const slot = Math.floor(lineCount / total);
  if (slot < 2 * GAP + 4) throw new Error(`too many edits (${total}) for ${lineCount} lines`);
  const sides = shuffle(rng, [...Array(perSide).fill("local"), ...Array(perSide).fill("remote")]);
  const edits = { local: [], remote: [] };
  for (let s = 0; s < total; s++) {
    const kind = kinds[randInt(rng, kinds.length)];
    const count = 1 + randInt(rng, kind === "delete" ? 2 : 3);
    const room = slot - 2 * GAP - count;
    const at = s * slot + GAP + randInt(rng, Math.max(1, room));
    edits[sides[s]].push({ at, kind, count });
  }
  return edits;
};

const toText = (lines) => lines.join("\n") + "\n";

/**
 * A merge case of `lineCount` distinct prose lines (~40 bytes each) with `perSide`
 * scattered edits (modify, insert or delete 1-3 lines) on each side.
 */
export const proseCase = (name, lineCount, perSide, seed) => {
  const rng = makeRng(seed);
  const base = [];
  for (let i = 0; i < lineCount; i++) base.push(`${i} ${words(rng, 32)}`);
  const edits = planEdits(rng, lineCount, perSide, ["modify", "insert", "delete"]);
  const local = applyEdits(base, edits.local, (n) => `local ${n} ${words(rng, 32)}`);
  const remote = applyEdits(base, edits.remote, (n) => `remote ${n} ${words(rng, 32)}`);
  return {
    name,
    lines: lineCount,
    editsPerSide: perSide,
    base: toText(base),
    local: toText(local),
    remote: toText(remote),
  };
};

/**
 * A file of `lineCount` identical lines (the worst case for LCS diffs: every line
 * matches every other) with `perSide` edits on each side that replace or insert
 * distinct lines. Deleting identical lines is left out (git slides such deletions
 * arbitrarily far, so the sides' hunks would touch), and the edit count stays below
 * git's diff cost bound (~sqrt(lines)): beyond it git's heuristics give up on a minimal
 * diff and even git conflicts on these inputs.
 */
export const identicalCase = (name, lineCount, perSide, seed) => {
  const rng = makeRng(seed);
  const base = Array(lineCount).fill("    }");
  const edits = planEdits(rng, lineCount, perSide, ["modify", "insert"]);
  const local = applyEdits(base, edits.local, (n) => `local ${n} ${words(rng, 24)}`);
  const remote = applyEdits(base, edits.remote, (n) => `remote ${n} ${words(rng, 24)}`);
  return {
    name,
    lines: lineCount,
    editsPerSide: perSide,
    base: toText(base),
    local: toText(local),
    remote: toText(remote),
  };
};

/** The benchmark's cases (SPEC issue 6, workload 1). */
export const mergeCases = () => [
  proseCase("merge 1k lines, 5 edits/side", 1_000, 5, 1),
  proseCase("merge 10k lines, 50 edits/side", 10_000, 50, 2),
  proseCase("merge 100k lines (~4 MB), 500 edits/side", 100_000, 500, 3),
  identicalCase("merge 100k identical lines, 100 edits/side", 100_000, 100, 4),
];
