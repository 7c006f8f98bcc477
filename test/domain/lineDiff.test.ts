import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { diffClasses, type DiffHunk } from "../../src/domain/lineDiff.js";
import { LineClassifier, indexLines, splitLines } from "../../src/domain/lines.js";

const classesOf = (...texts: Array<string>): { classes: Array<Int32Array>; count: number } => {
  const classifier = new LineClassifier("exact");
  const classes = texts.map((text) => classifier.classify(text).classes);
  return { classes, count: classifier.size };
};

const diff = (a: string, b: string): Array<DiffHunk> => {
  const { classes, count } = classesOf(a, b);
  return diffClasses(classes[0] ?? new Int32Array(), classes[1] ?? new Int32Array(), count);
};

/** Applies hunks of a diff of `a` to turn it into the second sequence. */
const apply = (
  a: ReadonlyArray<string>,
  b: ReadonlyArray<string>,
  hunks: ReadonlyArray<DiffHunk>,
): Array<string> => {
  const out: Array<string> = [];
  let at = 0;
  for (const hunk of hunks) {
    out.push(...a.slice(at, hunk.start1), ...b.slice(hunk.start2, hunk.start2 + hunk.count2));
    at = hunk.start1 + hunk.count1;
  }
  out.push(...a.slice(at));
  return out;
};

describe("line splitting", () => {
  it("keeps terminators and counts a final line without newline", () => {
    expect(splitLines("a\nb\r\nc")).toEqual(["a\n", "b\r\n", "c"]);
    expect(splitLines("a\n")).toEqual(["a\n"]);
    expect(splitLines("")).toEqual([]);
    expect(splitLines("\n\n")).toEqual(["\n", "\n"]);
    expect([...indexLines("ab\ncd").starts]).toEqual([0, 3, 5]);
  });

  it("classifies equal lines alike across texts, with or without block matching", () => {
    const classifier = new LineClassifier("exact");
    const base = classifier.classify("x\ny\nz\ny\n");
    const like = classifier.classifyLike("y\nx\nq\nz\n", base);
    expect([...base.classes]).toEqual([0, 1, 2, 1]);
    expect([...like.classes]).toEqual([1, 0, 3, 2]);
  });

  it("ignores one CR before the line end in ignore-cr mode only", () => {
    const exact = new LineClassifier("exact");
    expect([...exact.classify("a\r\na\n").classes]).toEqual([0, 1]);
    const loose = new LineClassifier("ignore-cr");
    expect([...loose.classify("a\r\na\na\r\r\na").classes]).toEqual([0, 0, 1, 2]);
  });

  it("gives classifyLike the same classes as classify", () => {
    const lineArb = fc.constantFrom("a", "b", "c\r", "", "long line of text", "a");
    const textArb = fc
      .tuple(fc.array(lineArb, { maxLength: 60 }), fc.boolean())
      .map(([lines, final]) => lines.join("\n") + (final ? "\n" : ""));
    fc.assert(
      fc.property(textArb, textArb, (reference, text) => {
        const one = new LineClassifier("exact");
        const ref = one.classify(reference);
        const viaLike = one.classifyLike(text, ref);
        const two = new LineClassifier("exact");
        two.classify(reference);
        const direct = two.classify(text);
        expect([...viaLike.starts]).toEqual([...direct.starts]);
        expect([...viaLike.classes]).toEqual([...direct.classes]);
      }),
      { numRuns: 300 },
    );
  });
});

describe("diffClasses", () => {
  it("finds no hunk between equal texts", () => {
    expect(diff("a\nb\n", "a\nb\n")).toEqual([]);
    expect(diff("", "")).toEqual([]);
  });

  it("reports insertions, deletions and replacements in order", () => {
    expect(diff("a\nb\nc\n", "a\nx\nc\nd\n")).toEqual([
      { start1: 1, count1: 1, start2: 1, count2: 1 },
      { start1: 3, count1: 0, start2: 3, count2: 1 },
    ]);
    expect(diff("a\nb\n", "")).toEqual([{ start1: 0, count1: 2, start2: 0, count2: 0 }]);
  });

  it("slides an ambiguous insertion down to its last possible place, as git does", () => {
    // Inserting "a" into "a a b" could go anywhere among the a's; git reports it last.
    expect(diff("a\na\nb\n", "a\na\na\nb\n")).toEqual([
      { start1: 2, count1: 0, start2: 2, count2: 1 },
    ]);
  });

  it("produces a correct edit script", () => {
    const lineArb = fc.constantFrom("a\n", "b\n", "c\n", "\n", "d");
    fc.assert(
      fc.property(
        fc.array(lineArb, { maxLength: 40 }),
        fc.array(lineArb, { maxLength: 40 }),
        (a, b) => {
          const hunks = diff(a.join(""), b.join(""));
          const linesA = splitLines(a.join(""));
          const linesB = splitLines(b.join(""));
          expect(apply(linesA, linesB, hunks)).toEqual(linesB);
          // Hunks are ordered, non-empty, and separated by at least one unchanged line.
          hunks.forEach((hunk, i) => {
            expect(hunk.count1 + hunk.count2).toBeGreaterThan(0);
            const previous = hunks[i - 1];
            if (previous !== undefined)
              expect(hunk.start1).toBeGreaterThan(previous.start1 + previous.count1);
          });
        },
      ),
      { numRuns: 500 },
    );
  });

  it("stays correct on large inputs past the search cost bound", () => {
    const a = Array.from({ length: 20_000 }, (_, i) => `line ${i % 7 === 0 ? "same" : i}\n`);
    const b = a
      .map((line, i) => (i % 13 === 0 ? `changed ${i}\n` : line))
      .filter((_, i) => i % 17 !== 0);
    const hunks = diff(a.join(""), b.join(""));
    expect(apply(a, b, hunks)).toEqual(b);
  });
});
