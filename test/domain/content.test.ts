import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  countLinesOfBytes,
  decodeText,
  encodeText,
  textProblem,
} from "../../src/domain/content.js";
import { countLines } from "../../src/domain/lines.js";

const problemOf = (bytes: Uint8Array) => {
  const decoded = decodeText(bytes);
  return "problem" in decoded ? decoded.problem : undefined;
};

// Bytes that are often almost UTF-8: valid text with stray, truncated or forbidden
// sequences (surrogates, overlongs, beyond U+10FFFF) spliced in.
const nearlyText = fc
  .array(
    fc.oneof(
      fc.string({ unit: "grapheme", maxLength: 6 }).map((s) => [...encodeText(s)]),
      fc.constantFrom(
        [0xed, 0xa0, 0x80],
        [0xc0, 0xaf],
        [0xf4, 0x90, 0x80, 0x80],
        [0xe2, 0x82],
        [0x80],
        [0xff],
        [0xef, 0xbb, 0xbf],
        [0x00],
        [0x0a],
        [0x0d, 0x0a],
      ),
    ),
    { maxLength: 20 },
  )
  .map((parts) => Uint8Array.from(parts.flat()));

describe("textProblem", () => {
  it("finds exactly what decodeText finds", () => {
    fc.assert(
      fc.property(fc.oneof(nearlyText, fc.uint8Array({ maxLength: 40 })), (bytes) => {
        expect(textProblem(bytes)).toBe(problemOf(bytes));
      }),
      { numRuns: 2000 },
    );
  });

  it("names NUL before invalid UTF-8, as decodeText does", () => {
    expect(textProblem(Uint8Array.of(0xff, 0x00))).toBe("CONTAINS_NUL");
    expect(textProblem(Uint8Array.of(0xff))).toBe("NOT_UTF8");
    expect(textProblem(encodeText("\uFEFFé\n"))).toBeUndefined();
  });
});

describe("countLinesOfBytes", () => {
  it("counts the lines countLines counts in the decoded text", () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom("a", "é", "\n", "\r", "😀", " ") }), (text) => {
        expect(countLinesOfBytes(encodeText(text))).toBe(countLines(text));
      }),
      { numRuns: 2000 },
    );
  });

  it("counts a final run without LF and nothing for empty content", () => {
    expect(countLinesOfBytes(encodeText(""))).toBe(0);
    expect(countLinesOfBytes(encodeText("a"))).toBe(1);
    expect(countLinesOfBytes(encodeText("a\n"))).toBe(1);
    expect(countLinesOfBytes(encodeText("a\nb"))).toBe(2);
    expect(countLinesOfBytes(encodeText("\n\n"))).toBe(2);
  });
});
