/**
 * Unified diffs in the form `git diff` prints (SPEC §11): per file a `diff --git` line,
 * `new file mode` / `deleted file mode` for an added or deleted file, the `---`/`+++`
 * lines, and hunks with three lines of context, `@@ -a,b +c,d @@` headers (a count of 1
 * left out, an empty side numbered by the line before it) and `\ No newline at end of
 * file` after a last line without one. The hunks are those of the line diff the merge
 * uses (git's own algorithm, lineDiff.ts), lines compared byte for byte, so the output
 * is `git diff --no-indent-heuristic`'s for text (test/domain/unifiedDiff.test.ts
 * compares the two); git's default indent heuristic may place a hunk among repeated
 * lines a line or two elsewhere (the same change). No `index` line: quire shows no
 * content ids.
 */
import { diffClasses, type DiffHunk } from "./lineDiff.js";
import { LineClassifier } from "./lines.js";

/** Lines of context around each change (git's default). */
const context = 3;

const lineAt = (text: string, starts: Int32Array, index: number): string =>
  text.slice(starts[index] ?? 0, starts[index + 1] ?? 0);

const range = (start: number, count: number): string =>
  count === 0 ? `${start},0` : count === 1 ? `${start + 1}` : `${start + 1},${count}`;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * What git's default function matcher takes of `line`: `undefined` unless it starts with
 * an ASCII letter, `_` or `$`; else its first 80 bytes without trailing white space.
 */
const functionLine = (line: string): string | undefined => {
  if (!/^[A-Za-z_$]/.test(line)) return undefined;
  const bytes = encoder.encode(line).subarray(0, 80);
  let end = bytes.length;
  // C's isspace: space, \t, \n, \v, \f, \r.
  while (end > 0 && [0x20, 0x09, 0x0a, 0x0b, 0x0c, 0x0d].includes(bytes[end - 1] ?? 0)) end--;
  return decoder.decode(bytes.subarray(0, end));
};

/** Groups hunks closer than twice the context into the hunks a unified diff prints. */
const groups = (hunks: ReadonlyArray<DiffHunk>): Array<Array<DiffHunk>> => {
  const out: Array<Array<DiffHunk>> = [];
  for (const hunk of hunks) {
    const last = out[out.length - 1];
    const previous = last?.[last.length - 1];
    if (
      last !== undefined &&
      previous !== undefined &&
      hunk.start1 - (previous.start1 + previous.count1) <= 2 * context
    )
      last.push(hunk);
    else out.push([hunk]);
  }
  return out;
};

/**
 * The unified diff of the notebook file `path` from `before` to `after` (`undefined`:
 * absent, so added or deleted), every line LF-terminated; empty when they are equal.
 */
export const unifiedDiff = (
  path: string,
  before: string | undefined,
  after: string | undefined,
): string => {
  if (before === after) return "";
  const classifier = new LineClassifier("exact");
  const old = classifier.classify(before ?? "");
  const updated = classifier.classify(after ?? "");
  const n = old.starts.length - 1;
  const m = updated.starts.length - 1;
  const out = [`diff --git a/${path} b/${path}`];
  if (before === undefined) out.push("new file mode 100644");
  if (after === undefined) out.push("deleted file mode 100644");
  const hunks = diffClasses(old.classes, updated.classes, classifier.size);
  // An empty file added or deleted: git prints no --- / +++ lines and no hunk.
  if (hunks.length === 0) return `${out.join("\n")}\n`;
  out.push(before === undefined ? "--- /dev/null" : `--- a/${path}`);
  out.push(after === undefined ? "+++ /dev/null" : `+++ b/${path}`);
  const emit = (sign: string, text: string, starts: Int32Array, index: number) => {
    const line = lineAt(text, starts, index);
    if (line.endsWith("\n")) out.push(`${sign}${line.slice(0, -1)}`);
    else out.push(`${sign}${line}`, "\\ No newline at end of file");
  };
  // As git's xdiff: searched back from the line before a hunk down to (not including)
  // where the previous hunk's search began; found nowhere, the previous one stays.
  let funcLine = "";
  let searchedDownTo = -1;
  for (const group of groups(hunks)) {
    const first = group[0];
    const last = group[group.length - 1];
    if (first === undefined || last === undefined) continue;
    const start1 = Math.max(0, first.start1 - context);
    const end1 = Math.min(n, last.start1 + last.count1 + context);
    const start2 = first.start2 - (first.start1 - start1);
    const end2 = Math.min(m, last.start2 + last.count2 + context);
    for (let l = start1 - 1; l > searchedDownTo && l >= 0; l--) {
      const found = functionLine(lineAt(old.text, old.starts, l));
      if (found !== undefined) {
        funcLine = found;
        break;
      }
    }
    searchedDownTo = start1 - 1;
    out.push(
      `@@ -${range(start1, end1 - start1)} +${range(start2, end2 - start2)} @@${funcLine === "" ? "" : ` ${funcLine}`}`,
    );
    let at1 = start1;
    let at2 = start2;
    for (const hunk of group) {
      for (; at1 < hunk.start1; at1++, at2++) emit(" ", old.text, old.starts, at1);
      for (let i = 0; i < hunk.count1; i++) emit("-", old.text, old.starts, at1++);
      for (let i = 0; i < hunk.count2; i++) emit("+", updated.text, updated.starts, at2++);
    }
    for (; at1 < end1; at1++, at2++) emit(" ", old.text, old.starts, at1);
  }
  return `${out.join("\n")}\n`;
};
