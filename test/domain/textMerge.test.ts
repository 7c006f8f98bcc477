import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { findMarkerBlocks } from "../../src/domain/markers.js";
import { mergeText } from "../../src/domain/textMerge.js";

const text = (...lines: Array<string>): string => lines.map((line) => `${line}\n`).join("");

describe("mergeText examples", () => {
  it("takes both sides of edits separated by unchanged lines", () => {
    const base = text("a", "b", "c", "d", "e");
    const result = mergeText(base, text("A", "b", "c", "d", "e"), text("a", "b", "c", "d", "E"));
    expect(result).toEqual({ text: text("A", "b", "c", "d", "E"), conflicts: [] });
  });

  it("writes overlapping edits as one complete conflict block", () => {
    const result = mergeText(text("a", "b", "c"), text("a", "L", "c"), text("a", "R", "c"));
    expect(result.text).toBe(
      text("a", "<<<<<<< local", "L", "=======", "R", ">>>>>>> remote", "c"),
    );
    expect(result.conflicts).toEqual([{ start: 2, end: 6 }]);
  });

  it("conflicts on edits of adjacent lines, as git does", () => {
    const result = mergeText(
      text("a", "b", "c", "d"),
      text("a", "B", "c", "d"),
      text("a", "b", "C", "d"),
    );
    expect(result.text).toBe(
      text("a", "<<<<<<< local", "B", "c", "=======", "b", "C", ">>>>>>> remote", "d"),
    );
    expect(result.conflicts).toEqual([{ start: 2, end: 8 }]);
  });

  it("does not conflict on identical changes", () => {
    const base = text("a", "b", "c");
    const changed = text("a", "X", "c", "d");
    expect(mergeText(base, changed, changed)).toEqual({ text: changed, conflicts: [] });
    // Identical in part: only the differing lines conflict.
    const result = mergeText(base, text("a", "X", "Y", "c"), text("a", "X", "Z", "c"));
    expect(result.text).toBe(
      text("a", "X", "<<<<<<< local", "Y", "=======", "Z", ">>>>>>> remote", "c"),
    );
  });

  it("merges add/add against the empty base, conflicting on what differs", () => {
    const result = mergeText("", text("title", "local body"), text("title", "remote body"));
    expect(result.text).toBe(
      text("title", "<<<<<<< local", "local body", "=======", "remote body", ">>>>>>> remote"),
    );
    expect(result.conflicts).toEqual([{ start: 2, end: 6 }]);
  });

  it("ends marker lines with CRLF when local's first line break is CRLF", () => {
    const result = mergeText("a\r\nb\r\n", "a\r\nL\r\n", "a\r\nR\r\n");
    expect(result.text).toBe("a\r\n<<<<<<< local\r\nL\r\n=======\r\nR\r\n>>>>>>> remote\r\n");
    // Only local's first line break counts: remote's CRLF lines keep their endings.
    const lf = mergeText("a\nb\n", "a\nL\r\n", "a\nR\r\n");
    expect(lf.text).toBe("a\n<<<<<<< local\nL\r\n=======\nR\r\n>>>>>>> remote\n");
  });

  it("adds a line ending to a conflict side whose last line has none", () => {
    const result = mergeText("a\nb", "a\nL", "a\nR");
    expect(result.text).toBe("a\n<<<<<<< local\nL\n=======\nR\n>>>>>>> remote\n");
    expect(result.conflicts).toEqual([{ start: 2, end: 6 }]);
    const crlf = mergeText("a\r\nb", "a\r\nL", "a\r\nR");
    expect(crlf.text).toBe("a\r\n<<<<<<< local\r\nL\r\n=======\r\nR\r\n>>>>>>> remote\r\n");
  });

  it("treats a missing final newline as a change of the last line", () => {
    expect(mergeText("a\nx\nb\n", "a\nx\nb", "A\nx\nb\n")).toEqual({
      text: "A\nx\nb",
      conflicts: [],
    });
    // Dropping the final newline touches the last line, so an edit of the line
    // before it conflicts (git treats touching changes as overlapping).
    expect(mergeText("a\nb\n", "a\nb", "A\nb\n").conflicts).toHaveLength(1);
  });

  it("conflicts when one side only converted line endings and the other changed content", () => {
    // As git merge-file: the conversion touches every line, so it overlaps the edit. A
    // conflict, never a silent pick of one side: the edit and the conversion both stay.
    const converted = mergeText(text("a", "b", "c"), "a\r\nb\r\nc\r\n", text("a", "B", "c"));
    expect(converted.text).toBe(
      "<<<<<<< local\r\na\r\nb\r\nc\r\n=======\r\na\nB\nc\n>>>>>>> remote\r\n",
    );
    expect(converted.conflicts).toEqual([{ start: 1, end: 9 }]);
    const edited = mergeText(text("a", "b", "c"), text("a", "B", "c"), "a\r\nb\r\nc\r\n");
    expect(edited.text).toBe(
      text("<<<<<<< local", "a", "B", "c", "=======") + "a\r\nb\r\nc\r\n>>>>>>> remote\n",
    );
    // A conversion of only some lines conflicts only where it meets the edit.
    const base = text("a", "b", "c", "d", "e", "f");
    expect(mergeText(base, "a\r\nb\nc\nd\ne\nf\n", text("a", "b", "c", "d", "e", "F")).text).toBe(
      "a\r\nb\nc\nd\ne\nF\n",
    );
  });

  it("merges a dropped final newline with an edit elsewhere, keeping both", () => {
    const base = text("a", "b", "c", "d", "e");
    expect(mergeText(base, "a\nb\nc\nd\ne", text("A", "b", "c", "d", "e")).text).toBe(
      "A\nb\nc\nd\ne",
    );
  });

  it("reports every block, in order, with ranges in the merged text", () => {
    const base = text("1", "2", "3", "4", "5", "6", "7", "8", "9");
    const result = mergeText(
      base,
      text("1", "L2", "3", "4", "5", "6", "7", "L8", "9"),
      text("1", "R2", "3", "4", "5", "6", "7", "R8", "9"),
    );
    expect(result.conflicts).toEqual([
      { start: 2, end: 6 },
      { start: 12, end: 16 },
    ]);
    expect(findMarkerBlocks(result.text)).toEqual(result.conflicts);
  });

  it("keeps deletions on one side and edits elsewhere on the other", () => {
    const base = text("a", "b", "c", "d", "e", "f");
    expect(mergeText(base, text("a", "d", "e", "f"), text("a", "b", "c", "d", "e", "F")).text).toBe(
      text("a", "d", "e", "F"),
    );
  });

  it("handles empty texts", () => {
    expect(mergeText("", "", "")).toEqual({ text: "", conflicts: [] });
    expect(mergeText("a\n", "", "a\n")).toEqual({ text: "", conflicts: [] });
    expect(mergeText("a\n", "", "b\n").conflicts).toHaveLength(1);
  });
});

// Small alphabets force overlapping, touching and ambiguous edits.
const lineArb = fc.constantFrom("a", "b", "c", "", "x y", "}", "{ z");
const linesArb = fc.array(lineArb, { maxLength: 14 });
const eolArb = fc.constantFrom("\n", "\r\n");
const render = (lines: ReadonlyArray<string>, eol: string, finalNewline: boolean): string => {
  const joined = lines.map((line) => line + eol).join("");
  return finalNewline || joined.length === 0 ? joined : joined.slice(0, -eol.length);
};
const textArb = fc
  .tuple(linesArb, eolArb, fc.boolean())
  .map(([lines, eol, finalNewline]) => render(lines, eol, finalNewline));
/** Three related texts: a base and two edits of it. */
const editArb = fc.array(
  fc.tuple(fc.nat(), fc.constantFrom("insert", "delete", "replace"), lineArb),
  { maxLength: 4 },
);
const applyEdits = (
  lines: ReadonlyArray<string>,
  edits: ReadonlyArray<[number, string, string]>,
): Array<string> => {
  const out = [...lines];
  for (const [at, op, line] of edits) {
    const index = out.length === 0 ? 0 : at % (out.length + (op === "insert" ? 1 : 0));
    if (op === "insert") out.splice(index, 0, line);
    else if (op === "delete") out.splice(index, 1);
    else if (index < out.length) out[index] = line;
  }
  return out;
};
const mergeCaseArb = fc
  .tuple(linesArb, editArb, editArb, eolArb, fc.boolean(), fc.boolean(), fc.boolean())
  .map(([base, localEdits, remoteEdits, eol, f1, f2, f3]) => ({
    base: render(base, eol, f1),
    local: render(applyEdits(base, localEdits), eol, f2),
    remote: render(applyEdits(base, remoteEdits), eol, f3),
  }));

describe("mergeText properties", () => {
  it("takes the other side when one side is unchanged", () => {
    fc.assert(
      fc.property(textArb, textArb, (base, other) => {
        expect(mergeText(base, base, other)).toEqual({ text: other, conflicts: [] });
        expect(mergeText(base, other, base)).toEqual({ text: other, conflicts: [] });
      }),
      { numRuns: 300 },
    );
  });

  it("does not conflict when both sides made the same change", () => {
    fc.assert(
      fc.property(textArb, textArb, (base, changed) => {
        expect(mergeText(base, changed, changed)).toEqual({ text: changed, conflicts: [] });
      }),
      { numRuns: 300 },
    );
  });

  it("is deterministic", () => {
    fc.assert(
      fc.property(mergeCaseArb, ({ base, local, remote }) => {
        expect(mergeText(base, local, remote)).toEqual(mergeText(base, local, remote));
      }),
      { numRuns: 200 },
    );
  });

  it("reports exactly the complete marker blocks it writes", () => {
    fc.assert(
      fc.property(mergeCaseArb, ({ base, local, remote }) => {
        const result = mergeText(base, local, remote);
        expect(findMarkerBlocks(result.text)).toEqual(result.conflicts);
      }),
      { numRuns: 500 },
    );
  });

  it("merges disjoint edits of distinct lines cleanly and keeps both", () => {
    // Base lines are all distinct; each segment is edited by at most one side and
    // edited segments are separated by an untouched line, so the edits cannot touch.
    const segmentArb = fc.tuple(
      fc.constantFrom("none", "local", "remote"),
      fc.constantFrom("insert", "delete", "replace"),
    );
    fc.assert(
      fc.property(fc.array(segmentArb, { minLength: 1, maxLength: 12 }), (segments) => {
        const base: Array<string> = [];
        const local: Array<string> = [];
        const remote: Array<string> = [];
        const merged: Array<string> = [];
        segments.forEach(([who, op], index) => {
          const separator = `keep ${index}`;
          const original = `line ${index}`;
          const edited =
            op === "delete"
              ? []
              : op === "insert"
                ? [original, `${who} ${index}`]
                : [`${who} ${index}`];
          base.push(separator, original);
          local.push(separator, ...(who === "local" ? edited : [original]));
          remote.push(separator, ...(who === "remote" ? edited : [original]));
          merged.push(separator, ...(who === "none" ? [original] : edited));
        });
        base.push("end");
        local.push("end");
        remote.push("end");
        merged.push("end");
        expect(mergeText(text(...base), text(...local), text(...remote))).toEqual({
          text: text(...merged),
          conflicts: [],
        });
      }),
      { numRuns: 300 },
    );
  });
});
