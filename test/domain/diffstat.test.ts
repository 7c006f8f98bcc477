import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { countChanges } from "../../src/domain/diffstat.js";

describe("countChanges", () => {
  it("counts every line of an added or deleted file", () => {
    expect(countChanges(undefined, "a\nb\nc")).toEqual({ insertions: 3, deletions: 0 });
    expect(countChanges("a\nb\n", undefined)).toEqual({ insertions: 0, deletions: 2 });
    expect(countChanges(undefined, "")).toEqual({ insertions: 0, deletions: 0 });
    expect(countChanges("", undefined)).toEqual({ insertions: 0, deletions: 0 });
    expect(countChanges(undefined, undefined)).toEqual({ insertions: 0, deletions: 0 });
  });

  it("counts a modification from the line diff", () => {
    expect(countChanges("a\nb\nc\n", "a\nB\nc\nd\n")).toEqual({ insertions: 2, deletions: 1 });
    expect(countChanges("a\nb\n", "a\nb\n")).toEqual({ insertions: 0, deletions: 0 });
    expect(countChanges("", "x\n")).toEqual({ insertions: 1, deletions: 0 });
  });

  it("ignores one trailing CR when comparing lines", () => {
    expect(countChanges("a\r\nb\r\n", "a\nb\n")).toEqual({ insertions: 0, deletions: 0 });
    expect(countChanges("a\r\nb\r\n", "a\nB\n")).toEqual({ insertions: 1, deletions: 1 });
    expect(countChanges("a\r\r\n", "a\n")).toEqual({ insertions: 1, deletions: 1 });
  });

  it("counts a final line without LF, distinct from the same line with LF (as git)", () => {
    expect(countChanges("a\nb", "a\nb\n")).toEqual({ insertions: 1, deletions: 1 });
    expect(countChanges("a", "a\nb")).toEqual({ insertions: 2, deletions: 1 });
  });

  it("balances: before lines - deletions = after lines - insertions", () => {
    const textArb = fc
      .array(fc.constantFrom("a", "b", "c", ""), { maxLength: 20 })
      .map((lines) => lines.map((l) => `${l}\n`).join(""));
    fc.assert(
      fc.property(textArb, textArb, (before, after) => {
        const { insertions, deletions } = countChanges(before, after);
        const count = (text: string): number => text.split("\n").length - 1;
        expect(count(before) - deletions).toBe(count(after) - insertions);
      }),
      { numRuns: 300 },
    );
  });
});
