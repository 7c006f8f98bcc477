import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { findMarkerBlocks } from "../../src/domain/markers.js";

const lines = (...all: Array<string>): string => all.map((line) => `${line}\n`).join("");

describe("findMarkerBlocks", () => {
  it("finds a complete block with its one-based inclusive range", () => {
    const text = lines(
      "intro",
      "<<<<<<< local",
      "mine",
      "=======",
      "theirs",
      ">>>>>>> remote",
      "outro",
    );
    expect(findMarkerBlocks(text)).toEqual([{ start: 2, end: 6 }]);
  });

  it("accepts CRLF line endings and a last marker that ends the text", () => {
    expect(findMarkerBlocks("<<<<<<< local\r\na\r\n=======\r\nb\r\n>>>>>>> remote\r\n")).toEqual([
      { start: 1, end: 5 },
    ]);
    expect(findMarkerBlocks("<<<<<<< local\n=======\n>>>>>>> remote")).toEqual([
      { start: 1, end: 3 },
    ]);
  });

  it("finds every block, in order", () => {
    const block = ["<<<<<<< local", "a", "=======", "b", ">>>>>>> remote"];
    expect(findMarkerBlocks(lines(...block, "x", ...block))).toEqual([
      { start: 1, end: 5 },
      { start: 7, end: 11 },
    ]);
  });

  it("treats a block with any one marker line changed as ordinary text", () => {
    const variants = [
      ["<<<<<<< local ", "=======", ">>>>>>> remote"],
      ["<<<<<<< LOCAL", "=======", ">>>>>>> remote"],
      [" <<<<<<< local", "=======", ">>>>>>> remote"],
      ["<<<<<<<< local", "=======", ">>>>>>> remote"],
      ["<<<<<<< local", "======= ", ">>>>>>> remote"],
      ["<<<<<<< local", "========", ">>>>>>> remote"],
      ["<<<<<<< local", "=======", ">>>>>>> remote2"],
      ["<<<<<<< local", "=======", ">>>>>>> theirs"],
      ["<<<<<<< local", "=======", "\t>>>>>>> remote"],
    ];
    for (const [start = "", separator = "", end = ""] of variants) {
      expect(findMarkerBlocks(lines(start, "a", separator, "b", end))).toEqual([]);
    }
  });

  it("needs the markers in order", () => {
    expect(findMarkerBlocks(lines("=======", "<<<<<<< local", ">>>>>>> remote"))).toEqual([]);
    expect(findMarkerBlocks(lines("<<<<<<< local", ">>>>>>> remote", "======="))).toEqual([]);
    expect(findMarkerBlocks(lines(">>>>>>> remote", "=======", "<<<<<<< local"))).toEqual([]);
  });

  it("does not treat a lone CR at the very end as a line ending", () => {
    expect(findMarkerBlocks("<<<<<<< local\n=======\n>>>>>>> remote\r")).toEqual([]);
  });

  it("restarts at an inner opener, so nested blocks count once, innermost", () => {
    const text = lines(
      "<<<<<<< local",
      "<<<<<<< local",
      "a",
      "=======",
      "b",
      ">>>>>>> remote",
      "=======",
      "c",
      ">>>>>>> remote",
    );
    expect(findMarkerBlocks(text)).toEqual([{ start: 2, end: 6 }]);
  });

  it("treats further separators inside an armed block as content", () => {
    const text = lines("<<<<<<< local", "Title", "=======", "=======", "b", ">>>>>>> remote");
    expect(findMarkerBlocks(text)).toEqual([{ start: 1, end: 6 }]);
  });

  it("drops a candidate closed before its separator", () => {
    const text = lines("<<<<<<< local", ">>>>>>> remote", "=======", ">>>>>>> remote");
    expect(findMarkerBlocks(text)).toEqual([]);
  });

  it("finds nothing in text without marker lines", () => {
    const plain = fc.array(fc.constantFrom("a", "<<<<<<<", "====", ">>>>>>>", "", "<< local"), {
      maxLength: 30,
    });
    fc.assert(
      fc.property(plain, (all) => {
        expect(findMarkerBlocks(lines(...all))).toEqual([]);
      }),
    );
  });

  it("finds a block embedded anywhere, with the right line numbers", () => {
    const filler = fc.array(fc.constantFrom("a", "b", "", "=== x"), { maxLength: 20 });
    fc.assert(
      fc.property(filler, filler, filler, filler, (before, local, remote, after) => {
        const text = lines(
          ...before,
          "<<<<<<< local",
          ...local,
          "=======",
          ...remote,
          ">>>>>>> remote",
          ...after,
        );
        const start = before.length + 1;
        expect(findMarkerBlocks(text)).toEqual([
          { start, end: start + local.length + remote.length + 2 },
        ]);
      }),
    );
  });
});
