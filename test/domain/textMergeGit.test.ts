/**
 * mergeText against the real `git merge-file -p -L local -L base -L remote`: identical
 * output wherever git merges cleanly, a conflict wherever git reports one. Skipped only
 * when no git executable is available.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { mergeText } from "../../src/domain/textMerge.js";

const hasGit = spawnSync("git", ["--version"]).status === 0;
const dir = mkdtempSync(join(tmpdir(), "quire-merge-git-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface GitMerge {
  readonly status: number;
  readonly text: string;
}

const gitMerge = (base: string, local: string, remote: string): GitMerge => {
  writeFileSync(join(dir, "base"), base);
  writeFileSync(join(dir, "local"), local);
  writeFileSync(join(dir, "remote"), remote);
  const run = spawnSync(
    "git",
    [
      "-c",
      "merge.conflictStyle=merge",
      "merge-file",
      "-p",
      "-L",
      "local",
      "-L",
      "base",
      "-L",
      "remote",
      join(dir, "local"),
      join(dir, "base"),
      join(dir, "remote"),
    ],
    { cwd: dir, encoding: "utf8", maxBuffer: 1 << 30 },
  );
  if (run.status === null || run.status < 0)
    throw new Error(`git merge-file failed: ${run.stderr}`);
  return { status: run.status, text: run.stdout };
};

/**
 * Asserts agreement and returns whether git conflicted. Beyond the contract (same
 * clean merges, conflicts where git has them), LF-only cases must produce git's exact
 * output, conflict blocks included, and git's number of conflicts; with CRLF around,
 * git picks marker line endings by another rule than SPEC §6.3, so only the contract
 * is checked.
 */
const agreesWithGit = (base: string, local: string, remote: string): boolean => {
  const git = gitMerge(base, local, remote);
  const mine = mergeText(base, local, remote);
  if (git.status === 0) {
    expect(mine.conflicts).toEqual([]);
    expect(mine.text).toBe(git.text);
  } else {
    expect(mine.conflicts.length).toBeGreaterThan(0);
  }
  if (!`${base}${local}${remote}`.includes("\r")) {
    expect(mine.text).toBe(git.text);
    expect(Math.min(mine.conflicts.length, 127)).toBe(git.status);
  }
  return git.status > 0;
};

const lineArb = fc.constantFrom("a", "b", "c", "", "x y", "}", "{ z");
const render = (lines: ReadonlyArray<string>, eol: string, finalNewline: boolean): string => {
  const joined = lines.map((line) => line + eol).join("");
  return finalNewline || joined.length === 0 ? joined : joined.slice(0, -eol.length);
};
const editsArb = fc.array(
  fc.tuple(fc.nat(), fc.constantFrom("insert", "delete", "replace"), lineArb),
  {
    maxLength: 5,
  },
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
const eolArb = fc.constantFrom("\n", "\n", "\n", "\r\n");
const caseArb = fc
  .record({
    base: fc.array(lineArb, { maxLength: 14 }),
    localEdits: editsArb,
    remoteEdits: editsArb,
    baseEol: eolArb,
    localEol: eolArb,
    remoteEol: eolArb,
    finals: fc.tuple(fc.boolean(), fc.boolean(), fc.boolean()),
  })
  .map((c) => ({
    base: render(c.base, c.baseEol, c.finals[0]),
    local: render(applyEdits(c.base, c.localEdits), c.localEol, c.finals[1]),
    remote: render(applyEdits(c.base, c.remoteEdits), c.remoteEol, c.finals[2]),
  }));

/** A deterministic pseudo-random source for the larger generated files. */
const random = (seed: number): ((n: number) => number) => {
  let state = seed;
  return (n) => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return Math.floor((state / 2 ** 32) * n);
  };
};

describe.skipIf(!hasGit)("mergeText agrees with git merge-file", () => {
  it("on a few hundred small generated cases", () => {
    let conflicts = 0;
    let clean = 0;
    fc.assert(
      fc.property(caseArb, ({ base, local, remote }) => {
        if (agreesWithGit(base, local, remote)) conflicts++;
        else clean++;
      }),
      { numRuns: 300, seed: 20240601 },
    );
    // The generator must exercise both outcomes for the comparison to mean anything.
    expect(conflicts).toBeGreaterThan(30);
    expect(clean).toBeGreaterThan(30);
  });

  it("on larger files with repeated lines and many scattered edits", () => {
    const next = random(7);
    for (let round = 0; round < 12; round++) {
      const alphabet = round % 2 === 0 ? 6 : 3000;
      const base = Array.from({ length: 200 + next(2500) }, () => `w${next(alphabet)}`);
      const edit = (): Array<string> => {
        const out = [...base];
        const count = round % 3 === 0 ? next(1200) : next(40);
        for (let k = 0; k < count; k++) {
          const at = next(out.length + 1);
          const op = next(3);
          if (op === 0) out.splice(at, 0, `n${next(40)}`, `w${next(30)}`);
          else if (op === 1) out.splice(at, 1 + next(3));
          else out[at] = `m${next(8)}`;
        }
        return out;
      };
      const toText = (lines: ReadonlyArray<string>): string =>
        lines.map((line) => `${line}\n`).join("");
      agreesWithGit(toText(base), toText(edit()), toText(edit()));
    }
  });

  it("on prose-like files where rewritten paragraphs keep their blank lines", () => {
    // Blank lines are frequent, new lines unmatched: xdiff's rules for setting aside
    // frequent lines inside unmatched runs decide the alignment here.
    const next = random(5);
    for (let round = 0; round < 10; round++) {
      const paragraph = (tag: string): Array<string> =>
        Array.from({ length: 1 + next(6) }, () => `${tag} ${next(1_000_000)}`).concat(
          next(4) === 0 ? ["", ""] : [""],
        );
      const base = Array.from({ length: 150 + next(400) }, () => paragraph("base")).flat();
      const edit = (tag: string): string => {
        const out: Array<string> = [];
        for (let i = 0; i < base.length;) {
          const span = 1 + next(30);
          const chunk = base.slice(i, i + span);
          const roll = next(10);
          if (roll === 0)
            out.push(...chunk.map((line) => (line === "" ? "" : `${tag} ${next(1_000_000)}`)));
          else if (roll === 1) out.push(...chunk.filter((line) => line === ""));
          else if (roll === 2) out.push(...chunk, ...paragraph(tag));
          else out.push(...chunk);
          i += span;
        }
        return out.map((line) => `${line}\n`).join("");
      };
      agreesWithGit(base.map((line) => `${line}\n`).join(""), edit("local"), edit("remote"));
    }
  });

  it("on large files where the diff must cut its search short", () => {
    // ~60k lines and ~1000 edits per side: past xdiff's cost bounds, where its
    // heuristics choose the split points.
    const next = random(11);
    // [distinct lines in the base (0 = all distinct), lines between edits]
    for (const [alphabet, spacing] of [
      [0, 60],
      [0, 16],
      [2000, 16],
      [40, 60],
    ] as const) {
      const base = Array.from({ length: 60_000 }, (_, i) =>
        alphabet === 0 ? `line ${i}` : `same ${next(alphabet)}`,
      );
      const edit = (tag: string): string => {
        const out = [...base];
        for (let slot = Math.floor(60_000 / spacing) - 1; slot >= 0; slot--) {
          const at = slot * spacing + next(spacing - 5);
          const op = next(3);
          if (op === 0) out.splice(at, 0, `${tag} inserted ${slot}`);
          else if (op === 1) out.splice(at, 1 + next(2));
          else out[at] = `${tag} modified ${slot}`;
        }
        return out.map((line) => `${line}\n`).join("");
      };
      agreesWithGit(base.map((line) => `${line}\n`).join(""), edit("L"), edit("R"));
    }
  });
});
