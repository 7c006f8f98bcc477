import { describe, expect, it } from "vitest";
import {
  authorProblem,
  clientAuthor,
  maxAuthorBytes,
  recordedAuthor,
} from "../../src/domain/author.js";
import { terminalSafe } from "../../src/domain/shownText.js";

describe("authors", () => {
  it("an operator's name is one bounded line of visible text", () => {
    expect(authorProblem("reviewer-2")).toBeUndefined();
    expect(authorProblem("Ana María · 研究")).toBeUndefined();
    for (const bad of [
      "",
      "   ",
      "\t",
      "a\nb",
      "a\rb",
      "a\u0000b",
      "a\u001b[2Jb",
      "a\u0085b",
      "a\u2028b",
      "a\ud800b",
    ])
      expect(authorProblem(bad), JSON.stringify(bad)).toBeDefined();
    expect(authorProblem("é".repeat(maxAuthorBytes / 2))).toBeUndefined();
    expect(authorProblem("é".repeat(maxAuthorBytes / 2 + 1))).toBeDefined();
  });

  it("a client's name is made printable and cut, never refused", () => {
    expect(clientAuthor("claude-code", "1.2.3")).toEqual({ name: "claude-code", version: "1.2.3" });
    expect(clientAuthor("evil\u001b[31m\nname", "1\r\n2")).toEqual({
      name: "evil [31m name",
      version: "1 2",
    });
    expect(clientAuthor("   ", "")).toEqual({ name: "unknown", version: "" });
    // A lone surrogate has no UTF-8 form; a bidi override would make the name read
    // differently wherever it is shown (notes_log's structured answer included).
    expect(clientAuthor("ev\ud800il\u202etxt.exe", "1\u2066")).toEqual({
      name: "ev\uFFFDil\uFFFDtxt.exe",
      version: "1\uFFFD",
    });
    expect(clientAuthor("😀", "")).toEqual({ name: "😀", version: "" });
    const long = clientAuthor("😀".repeat(200), "v");
    expect(Buffer.byteLength(long.name)).toBeLessThanOrEqual(maxAuthorBytes);
    expect(long.name).toBe("😀".repeat(maxAuthorBytes / 4));
  });

  it("a named author keeps the client beside it", () => {
    const client = { name: "cli", version: "alice" };
    expect(recordedAuthor(client, undefined)).toBe(client);
    expect(recordedAuthor(client, "planner")).toEqual({ name: "planner", version: "cli alice" });
  });

  it("text from the store cannot drive the terminal", () => {
    expect(terminalSafe("a\u001b]0;owned\u0007b\tc\nd")).toBe("a\uFFFD]0;owned\uFFFDb\tc\uFFFDd");
    expect(terminalSafe("a\nb\u009bc", true)).toBe("a\nb\uFFFDc");
  });

  it("every bidirectional control is shown as U+FFFD in a message, the marks too; an emoji's joiner stays", () => {
    expect(terminalSafe("a\u061cb\u200ec\u200fd\u202ee\u2067f")).toBe(
      "a\uFFFDb\uFFFDc\uFFFDd\uFFFDe\uFFFDf",
    );
    expect(terminalSafe("\u{1F469}\u200d\u{1F4BB}")).toBe("\u{1F469}\u200d\u{1F4BB}");
  });
});
