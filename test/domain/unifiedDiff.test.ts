/**
 * The unified diff against `git diff` itself: random texts over a small alphabet of
 * lines (so that hunks, context merging, moved and repeated lines all occur), with and
 * without a final newline, added, deleted and modified files. The only line git prints
 * that quire does not is `index <ids>`; git runs without its indent heuristic, which
 * quire's line diff (the merge's, as `git merge-file`'s) does not have.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unifiedDiff } from "../../src/domain/unifiedDiff.js";

let repo: string;
const git = (...args: ReadonlyArray<string>): string =>
  execFileSync("git", ["-c", "core.autocrlf=false", "-c", "diff.noprefix=false", ...args], {
    cwd: repo,
    encoding: "utf8",
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", HOME: repo },
  });

beforeAll(() => {
  repo = mkdtempSync(join(tmpdir(), "quire-udiff-"));
  git("init", "-q");
  git("config", "user.email", "t@example.com");
  git("config", "user.name", "t");
});
afterAll(() => rmSync(repo, { recursive: true, force: true }));

/** What git prints for `before` → `after` of `f.md` (absent: undefined), `index` line dropped. */
const gitDiff = (before: string | undefined, after: string | undefined): string => {
  const file = join(repo, "f.md");
  git("rm", "-q", "--cached", "--ignore-unmatch", "f.md");
  try {
    unlinkSync(file);
  } catch {
    // not there
  }
  if (before !== undefined) {
    writeFileSync(file, before);
    git("add", "f.md");
  }
  git("commit", "-q", "--allow-empty", "-m", "base");
  if (after === undefined) {
    if (before !== undefined) unlinkSync(file);
  } else writeFileSync(file, after);
  // Intent-to-add so that a new file shows as one.
  if (before === undefined && after !== undefined) git("add", "-N", "f.md");
  // Without git's indent heuristic (on by default since git 2.14), which may move a hunk
  // among repeated lines by a line or two; the hunks are otherwise git's own.
  const out = git(
    "diff",
    "--no-color",
    "--no-ext-diff",
    "--no-indent-heuristic",
    "-U3",
    "--",
    "f.md",
  );
  return out
    .split("\n")
    .filter((line) => !line.startsWith("index "))
    .join("\n");
};

/** A text and an edit of it: a few lines changed, inserted or removed here and there. */
const edited = fc
  .array(
    fc.constantFrom(
      "a\n",
      "b\n",
      "c\n",
      "d\n",
      "same\n",
      "x y\n",
      "\n",
      "a\r\n",
      "  indented\n",
      "fn_1() {\n",
      "ünï\n",
    ),
    {
      minLength: 1,
      maxLength: 60,
    },
  )
  .chain((lines) =>
    fc
      .array(
        fc.tuple(
          fc.nat({ max: lines.length }),
          fc.constantFrom("delete", "insert", "change"),
          fc.constantFrom("new\n", "b\n", "$x\n", ""),
        ),
        { minLength: 1, maxLength: 4 },
      )
      .map((edits) => {
        const after: string[] = [...lines];
        for (const [at, kind, line] of edits) {
          if (kind === "delete") after.splice(at, 1);
          else if (kind === "insert") after.splice(at, 0, line);
          else after.splice(at, 1, line);
        }
        return [lines.join(""), after.join("")] as const;
      }),
  );

const text = fc
  .array(fc.constantFrom("a\n", "b\n", "c\n", "d\n", "same\n", "x y\n", "\n", "a\r\n"), {
    maxLength: 30,
  })
  .chain((lines) =>
    fc.constantFrom(lines.join(""), `${lines.join("")}tail`, lines.join("").replace(/\n$/, "")),
  );

// Each case runs git several times: 300 cases take ~35 s on a quiet 2-core machine and
// passed 60 s when the whole suite ran beside other work, so the cases get more room
// than vitest's default (a bound on a hang, never a measurement).
const gitCases = { timeout: 240_000 };

describe("unified diffs", () => {
  it("are exactly git's for modified files", gitCases, () => {
    fc.assert(
      fc.property(text, text, (before, after) => {
        if (before === after) return;
        expect(unifiedDiff("f.md", before, after)).toBe(gitDiff(before, after));
      }),
      { numRuns: 60 },
    );
  });

  it(
    "are exactly git's for local edits of long files (separate hunks, function context)",
    gitCases,
    () => {
      fc.assert(
        fc.property(edited, ([before, after]) => {
          if (before === after) return;
          expect(unifiedDiff("f.md", before, after)).toBe(gitDiff(before, after));
        }),
        { numRuns: 300 },
      );
    },
  );

  it("place a removed line among equal ones as git does without its indent heuristic", () => {
    const before = "x y\nx y\nx y\n  indented\n\nfn_1() {\nx y\nd\n\na\n";
    const after = "x y\nx y\n  indented\n\nfn_1() {\nx y\nd\n\na\n";
    expect(unifiedDiff("f.md", before, after)).toBe(gitDiff(before, after));
  });

  it("are exactly git's where a hunk has lines before it (git's function context)", () => {
    const before = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
    const after = "a\nB\nc\nd\ne\nf\ng\nh\ni\nJ\nk";
    expect(unifiedDiff("f.md", before, after)).toBe(gitDiff(before, after));
  });

  it("are exactly git's for added and deleted files (empty ones too)", () => {
    for (const content of ["one\ntwo\n", "no newline", "", "a\n".repeat(12)]) {
      expect(unifiedDiff("f.md", undefined, content), `added ${JSON.stringify(content)}`).toBe(
        gitDiff(undefined, content),
      );
      expect(unifiedDiff("f.md", content, undefined), `deleted ${JSON.stringify(content)}`).toBe(
        gitDiff(content, undefined),
      );
    }
    expect(unifiedDiff("f.md", "same\n", "same\n")).toBe("");
  });
});
