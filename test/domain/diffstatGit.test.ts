/**
 * countChanges against `git diff --no-index --numstat` on generated files (LF line
 * endings, with and without a final newline). Skipped only when git is unavailable.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { countChanges } from "../../src/domain/diffstat.js";

const hasGit = spawnSync("git", ["--version"]).status === 0;
const dir = mkdtempSync(join(tmpdir(), "quire-diffstat-git-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const gitNumstat = (before: string, after: string): { insertions: number; deletions: number } => {
  writeFileSync(join(dir, "before"), before);
  writeFileSync(join(dir, "after"), after);
  const run = spawnSync(
    "git",
    [
      "-c",
      "diff.algorithm=myers",
      "diff",
      "--no-index",
      "--no-ext-diff",
      "--numstat",
      "before",
      "after",
    ],
    { cwd: dir, encoding: "utf8", maxBuffer: 1 << 30 },
  );
  if (run.status !== 0 && run.status !== 1) throw new Error(`git diff failed: ${run.stderr}`);
  const match = /^(\d+)\t(\d+)\t/.exec(run.stdout);
  return match === null
    ? { insertions: 0, deletions: 0 }
    : { insertions: Number(match[1]), deletions: Number(match[2]) };
};

const render = (lines: ReadonlyArray<string>, finalNewline: boolean): string => {
  const joined = lines.map((line) => `${line}\n`).join("");
  return finalNewline || joined.length === 0 ? joined : joined.slice(0, -1);
};

describe.skipIf(!hasGit)("countChanges agrees with git diff --numstat", () => {
  it("on generated small files", () => {
    const lineArb = fc.constantFrom("a", "b", "c", "", "d e", "}");
    const fileArb = fc.tuple(fc.array(lineArb, { maxLength: 25 }), fc.boolean());
    fc.assert(
      fc.property(fileArb, fileArb, ([before, f1], [after, f2]) => {
        const a = render(before, f1);
        const b = render(after, f2);
        expect(countChanges(a, b)).toEqual(gitNumstat(a, b));
      }),
      { numRuns: 200, seed: 424242 },
    );
  });

  it("on larger edited files with repeated lines", () => {
    let state = 99;
    const next = (n: number): number => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return Math.floor((state / 2 ** 32) * n);
    };
    for (let round = 0; round < 8; round++) {
      const alphabet = round % 2 === 0 ? 5 : 5000;
      const before = Array.from({ length: 100 + next(3000) }, () => `w${next(alphabet)}`);
      const after = [...before];
      for (let k = next(round % 3 === 0 ? 1500 : 60); k > 0; k--) {
        const at = next(after.length + 1);
        const op = next(3);
        if (op === 0) after.splice(at, 0, `n${next(50)}`);
        else if (op === 1) after.splice(at, 1 + next(4));
        else after[at] = `m${next(9)}`;
      }
      const a = render(before, true);
      const b = render(after, round % 4 !== 1);
      expect(countChanges(a, b)).toEqual(gitNumstat(a, b));
    }
  });
});
