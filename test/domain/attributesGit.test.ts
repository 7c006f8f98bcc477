/**
 * The attribute patterns and their precedence against the real `git check-attr`: for the
 * subset quire supports (ASCII names; docs/merge.md says where `?` differs beyond ASCII),
 * a `.gitattributes` with the same lines gives every path the same `merge` value.
 * Needs a git executable (fails without one).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mergePolicyOf, parseAttributes } from "../../src/domain/attributes.js";

let repo: string;
beforeAll(() => {
  repo = mkdtempSync(join(tmpdir(), "quire-attributes-git-"));
  const init = spawnSync("git", ["init", "-q", repo], { encoding: "utf8" });
  if (init.status !== 0) throw new Error(`git init failed (is git installed?): ${init.stderr}`);
});
afterAll(() => rmSync(repo, { recursive: true, force: true }));

const patterns = [
  "journal.md",
  "*.md",
  "/top.md",
  "notes/*.md",
  "notes/**",
  "**/log.md",
  "a/**/b.md",
  "?.md",
  "[ab].md",
  "[!ab].md",
  "[a-c]*.md",
  "*",
  "logs/*/today.md",
  "a**b.md",
  '"my journal.md"',
  "notes/**/*.md",
  "/notes/sub/**",
  "*.log.md",
  "x\\[1].md",
];

const paths = [
  "journal.md",
  "notes/journal.md",
  "top.md",
  "x/top.md",
  "notes/a.md",
  "notes/sub/a.md",
  "notes/sub/deeper/c.txt",
  "log.md",
  "deep/er/log.md",
  "a/b.md",
  "a/x/b.md",
  "a/x/y/b.md",
  "ab.md",
  "a.md",
  "b.md",
  "c.md",
  "ca.md",
  "dd.md",
  "logs/mon/today.md",
  "logs/today.md",
  "my journal.md",
  "team/my journal.md",
  "notes",
  "axxb.md",
  "a/xb.md",
  "x.log.md",
  "x[1].md",
  "x1.md",
  "readme",
];

/** What git says each path's `merge` attribute is for these attribute lines. */
const gitPolicies = (lines: ReadonlyArray<string>): ReadonlyArray<string> => {
  writeFileSync(join(repo, ".gitattributes"), lines.map((line) => `${line}\n`).join(""));
  const run = spawnSync("git", ["check-attr", "-z", "--stdin", "merge"], {
    cwd: repo,
    input: paths.map((path) => `${path}\0`).join(""),
    encoding: "utf8",
  });
  if (run.status !== 0) throw new Error(`git check-attr failed: ${run.stderr}`);
  // NUL-separated triples: path, attribute, value.
  const fields = run.stdout.split("\0");
  return paths.map((_, k) => {
    const value = fields[k * 3 + 2];
    // "unspecified" (no line matches) is the default, the text merge.
    return value === "union" ? "union" : "text";
  });
};

const quirePolicies = (lines: ReadonlyArray<string>): ReadonlyArray<string> => {
  const attributes = parseAttributes(lines.map((line) => `${line}\n`).join(""));
  expect(attributes.problems).toEqual([]);
  return paths.map((path) => mergePolicyOf(attributes, path));
};

describe("attribute patterns agree with git check-attr", () => {
  it("for each supported pattern on its own", () => {
    for (const pattern of patterns) {
      const lines = [`${pattern} merge=union`];
      expect(quirePolicies(lines), pattern).toEqual(gitPolicies(lines));
    }
  });

  it("for generated files of several lines, where the last matching line wins", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom(...patterns), fc.constantFrom("union", "text")), {
          minLength: 1,
          maxLength: 6,
        }),
        (rules) => {
          const lines = rules.map(([pattern, merge]) => `${pattern} merge=${merge}`);
          expect(quirePolicies(lines)).toEqual(gitPolicies(lines));
        },
      ),
      { numRuns: 60 },
    );
  });
});
