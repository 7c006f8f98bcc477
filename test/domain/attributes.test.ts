import { Either } from "effect";
import { describe, expect, it } from "vitest";
import {
  maxAttributesBytes,
  maxAttributesRules,
  mergePolicyOf,
  noAttributes,
  parseAttributes,
} from "../../src/domain/attributes.js";
import { compilePattern } from "../../src/domain/glob.js";

const matches = (pattern: string, path: string): boolean => {
  const compiled = compilePattern(pattern);
  if (Either.isLeft(compiled)) throw new Error(`refused ${pattern}: ${compiled.left}`);
  return compiled.right.matches(path);
};

const problemOf = (pattern: string): string => {
  const compiled = compilePattern(pattern);
  if (Either.isRight(compiled)) throw new Error(`accepted ${pattern}`);
  return compiled.left;
};

describe("compilePattern (gitattributes globs)", () => {
  it("matches a pattern without a slash against the file name at any depth", () => {
    expect(matches("journal.md", "journal.md")).toBe(true);
    expect(matches("journal.md", "team/a/journal.md")).toBe(true);
    expect(matches("journal.md", "journal.md.bak")).toBe(false);
    expect(matches("*.md", "a/b/c.md")).toBe(true);
    expect(matches("*.md", "c.txt")).toBe(false);
    expect(matches("*", "any/thing")).toBe(true);
    expect(matches("log-?.md", "log-1.md")).toBe(true);
    expect(matches("log-?.md", "log-12.md")).toBe(false);
    // `?` is one character (a code point), also beyond ASCII.
    expect(matches("?.md", "é.md")).toBe(true);
  });

  it("matches a pattern with a slash against the whole path from the root", () => {
    expect(matches("/journal.md", "journal.md")).toBe(true);
    expect(matches("/journal.md", "a/journal.md")).toBe(false);
    expect(matches("logs/*.md", "logs/mon.md")).toBe(true);
    expect(matches("logs/*.md", "logs/2024/mon.md")).toBe(false);
    expect(matches("logs/*.md", "x/logs/mon.md")).toBe(false);
    expect(matches("logs/*/today.md", "logs/mon/today.md")).toBe(true);
  });

  it("knows the ** forms: leading, trailing and in the middle", () => {
    expect(matches("**/log.md", "log.md")).toBe(true);
    expect(matches("**/log.md", "a/b/log.md")).toBe(true);
    expect(matches("logs/**", "logs/a.md")).toBe(true);
    expect(matches("logs/**", "logs/a/b.md")).toBe(true);
    expect(matches("logs/**", "logs")).toBe(false);
    expect(matches("logs/**", "other/logs/a.md")).toBe(false);
    expect(matches("a/**/b.md", "a/b.md")).toBe(true);
    expect(matches("a/**/b.md", "a/x/y/b.md")).toBe(true);
    expect(matches("a/**/b.md", "a/x/y/c.md")).toBe(false);
    expect(matches("a/**/**/b.md", "a/b.md")).toBe(true);
    // Other runs of stars are plain stars: they stay inside one segment.
    expect(matches("a/x**.md", "a/xyz.md")).toBe(true);
    expect(matches("a/x**.md", "a/x/z.md")).toBe(false);
  });

  it("knows classes and escapes", () => {
    expect(matches("[ab].md", "a.md")).toBe(true);
    expect(matches("[ab].md", "c.md")).toBe(false);
    expect(matches("[!ab].md", "c.md")).toBe(true);
    expect(matches("[^ab].md", "a.md")).toBe(false);
    expect(matches("[a-c]x", "bx")).toBe(true);
    expect(matches("[a-c]x", "dx")).toBe(false);
    expect(matches("[]x]", "]")).toBe(true);
    expect(matches("[a-]", "-")).toBe(true);
    expect(matches("\\[x].md", "[x].md")).toBe(true);
    expect(matches("\\[x].md", "x.md")).toBe(false);
    expect(matches("a\\?", "a?")).toBe(true);
    expect(matches("a\\?", "ab")).toBe(false);
  });

  it("is case-sensitive and compares NFC", () => {
    expect(matches("Journal.md", "journal.md")).toBe(false);
    expect(matches("cafe\u0301.md", "caf\u00e9.md")).toBe(true);
  });

  it("refuses what gitattributes forbids or quire does not support", () => {
    expect(problemOf("")).toMatch(/empty/);
    expect(problemOf("!*.md")).toMatch(/negated/);
    expect(problemOf("logs/")).toMatch(/logs\/\*\*|dir\/\*\*/);
    expect(problemOf("a//b")).toMatch(/empty segment/);
    // Accepted before, they matched nothing: the file merged as text without a word.
    for (const never of ["./journal.md", "a/../b.md", "/./x", "..", "notes/."])
      expect(problemOf(never)).toMatch(/\. or \.\. segment/);
    expect(Either.isRight(compilePattern(".journal.md"))).toBe(true);
    expect(Either.isRight(compilePattern("..md"))).toBe(true);
    expect(problemOf("[ab")).toMatch(/never closed/);
    expect(problemOf("[[:alpha:]]")).toMatch(/not supported/);
    expect(problemOf("[z-a]")).toMatch(/empty/);
    expect(problemOf("a\\")).toMatch(/backslash/);
  });

  it("stays fast on patterns that make backtracking matchers explode", () => {
    const pattern = `${"*a".repeat(40)}b`;
    const path = "a".repeat(4000);
    expect(matches(pattern, path)).toBe(false);
    const deep = `${"**/a/".repeat(30)}b`;
    expect(matches(deep, `${"a/".repeat(1000)}c`)).toBe(false);
  });
});

describe("parseAttributes", () => {
  it("parses rules, skipping blank lines and comments, with their line numbers", () => {
    const parsed = parseAttributes(
      "# merge policies\n\n*.log.md merge=union\r\n  # indented comment\n\tdocs/** merge=text\n",
    );
    expect(parsed.problems).toEqual([]);
    expect(parsed.rules.map((rule) => [rule.line, rule.pattern.source, rule.merge])).toEqual([
      [3, "*.log.md", "union"],
      [5, "docs/**", "text"],
    ]);
  });

  it("accepts a double-quoted pattern with spaces, a BOM and a final line without newline", () => {
    const parsed = parseAttributes(
      '\uFEFF"team journal.md"   merge=union\n"a \\"b\\".md" merge=text',
    );
    expect(parsed.problems).toEqual([]);
    expect(parsed.rules.map((rule) => rule.pattern.source)).toEqual([
      "team journal.md",
      'a "b".md',
    ]);
    expect(mergePolicyOf(parsed, "x/team journal.md")).toBe("union");
  });

  it("reports each malformed line with its number and the problem", () => {
    const parsed = parseAttributes(
      [
        "journal.md merge=union",
        "journal.md",
        "journal.md marge=union",
        "journal.md merge=ours",
        "journal.md -merge",
        "journal.md merge=union merge=text",
        "journal.md merge=union # trailing comment",
        "!journal.md merge=union",
        "logs/ merge=union",
        "[attr]binary -diff -merge -text",
        '"unterminated merge=union',
        '"a\\tb" merge=union',
        '"a"merge=union',
        "[ab merge=union",
        "ok.md merge=text",
      ].join("\n"),
    );
    expect(parsed.rules.map((rule) => rule.line)).toEqual([1, 15]);
    expect(parsed.problems.map((problem) => problem.line)).toEqual([
      2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
    ]);
    const problem = (line: number) => parsed.problems.find((p) => p.line === line)?.problem;
    expect(problem(2)).toMatch(/no attribute/);
    expect(problem(3)).toMatch(/unknown attribute "marge=union"/);
    expect(problem(4)).toMatch(/unknown attribute "merge=ours"/);
    expect(problem(6)).toMatch(/one attribute per line/);
    expect(problem(7)).toMatch(/comments must be on their own line/);
    expect(problem(8)).toMatch(/negated/);
    expect(problem(10)).toMatch(/macro/);
    expect(problem(11)).toMatch(/never closed/);
    expect(problem(12)).toMatch(/escaped/);
    expect(problem(13)).toMatch(/white space/);
  });
});

describe("parseAttributes within its limits", () => {
  const rule = (k: number) => `notes/r${k}/**/*.md merge=union`;

  it("reads at most maxAttributesRules rule lines: a hostile file costs no more than that", () => {
    // 132,000 rules (~4 MB): all parsed, and all tried for every path merged, they took
    // seconds per path.
    const rules = Array.from({ length: 132_000 }, (_, k) => rule(k));
    const parsed = parseAttributes(["# many", "", ...rules, ""].join("\n"));
    expect(parsed.rules).toHaveLength(maxAttributesRules);
    expect(parsed.rules[maxAttributesRules - 1]?.line).toBe(maxAttributesRules + 2);
    expect(parsed.beyondLimit).toEqual({
      limit: "rules",
      firstLine: maxAttributesRules + 3,
      lastLine: 132_002,
    });
    // A rule beyond the limit is absent: its path merges as text.
    expect(mergePolicyOf(parsed, "notes/r5/x.md")).toBe("union");
    expect(mergePolicyOf(parsed, "notes/r131999/x.md")).toBe("text");
  });

  it("counts malformed lines as rules, comments and blank lines not", () => {
    const text = [
      ...Array.from({ length: maxAttributesRules - 1 }, () => "bad"),
      "# a comment",
      "",
      "ok.md merge=union",
      "late.md merge=union",
    ].join("\n");
    const parsed = parseAttributes(text);
    expect(parsed.problems).toHaveLength(maxAttributesRules - 1);
    expect(parsed.rules.map((r) => r.pattern.source)).toEqual(["ok.md"]);
    expect(parsed.beyondLimit).toEqual({
      limit: "rules",
      firstLine: maxAttributesRules + 3,
      lastLine: maxAttributesRules + 3,
    });
  });

  it("reads at most maxAttributesBytes: the line that crosses it is not read", () => {
    const padding = `# ${"x".repeat(maxAttributesBytes - 40)}`;
    const text = `${padding}\na.md merge=union\n"${"é".repeat(20)}.md" merge=union\nc.md merge=union\n`;
    const parsed = parseAttributes(text);
    expect(parsed.rules.map((r) => r.pattern.source)).toEqual(["a.md"]);
    expect(parsed.beyondLimit).toEqual({ limit: "bytes", firstLine: 3, lastLine: 4 });
    expect(parseAttributes(`${padding}\na.md merge=union\n`).beyondLimit).toBeUndefined();
  });
});

describe("mergePolicyOf", () => {
  it("is text without attributes or without a matching line", () => {
    expect(mergePolicyOf(noAttributes, "journal.md")).toBe("text");
    expect(mergePolicyOf(parseAttributes("*.log merge=union\n"), "journal.md")).toBe("text");
  });

  it("takes the last matching line", () => {
    const attributes = parseAttributes(
      "*.md merge=union\nnotes/** merge=text\nnotes/journal.md merge=union\n",
    );
    expect(mergePolicyOf(attributes, "todo.md")).toBe("union");
    expect(mergePolicyOf(attributes, "notes/plan.md")).toBe("text");
    expect(mergePolicyOf(attributes, "notes/journal.md")).toBe("union");
    expect(mergePolicyOf(attributes, "notes/deep/journal.md")).toBe("text");
    expect(mergePolicyOf(parseAttributes("a.md merge=text\n*.md merge=union\n"), "a.md")).toBe(
      "union",
    );
  });

  it("ignores malformed lines (they never match)", () => {
    const attributes = parseAttributes("*.md merge=union\n*.md merge=bogus\n");
    expect(mergePolicyOf(attributes, "a.md")).toBe("union");
  });
});
