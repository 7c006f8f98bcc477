import { describe, expect, it } from "vitest";
import { shownName, terminalSafe } from "../../src/domain/shownText.js";

describe("shownName", () => {
  it("shows controls, invisible and bidi characters as U+FFFD", () => {
    expect(shownName("a\tb\n\u001b[31m.md")).toBe("a\uFFFDb\uFFFD\uFFFD[31m.md");
    expect(shownName("x\u200by\u2060z\ufeff.md")).toBe("x\uFFFDy\uFFFDz\uFFFD.md");
    expect(shownName("\u202egnp.md\u200e")).toBe("\uFFFDgnp.md\uFFFD");
  });

  it("keeps the joiners and variation selectors that spell a name", () => {
    // Persian with a zero-width non-joiner, an emoji ZWJ sequence, a heart with VS16.
    for (const name of ["می\u200cخواهم.md", "\u{1F469}\u200d\u{1F4BB}.md", "\u2764\ufe0f.md"])
      expect(shownName(name)).toBe(name);
  });
});

describe("terminalSafe", () => {
  it("shows controls as U+FFFD, keeping tabs, and newlines when asked", () => {
    expect(terminalSafe("a\tb\n\u001b[2J")).toBe("a\tb\uFFFD\uFFFD[2J");
    expect(terminalSafe("a\tb\n\u001b[2J", true)).toBe("a\tb\n\uFFFD[2J");
  });

  it("keeps a CRLF line ending in lines, never a CR elsewhere", () => {
    // A CRLF file's diff: every line ended in U+FFFD before.
    expect(terminalSafe("-a\r\n+b\r\n", true)).toBe("-a\r\n+b\r\n");
    expect(terminalSafe("a\rb\r", true)).toBe("a\uFFFDb\uFFFD");
    expect(terminalSafe("a\r\n")).toBe("a\uFFFD\uFFFD");
  });
});
