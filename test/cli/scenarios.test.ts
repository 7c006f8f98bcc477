/**
 * Issue 2, Done-when 2 (the clean half) through real `quire` processes: two working
 * copies on one file store edit concurrently, both publish, both converge; generations
 * and per-file counts are right (checked against `git diff --numstat`); a no-change
 * commit writes nothing; truly simultaneous commits all land.
 */
import { existsSync, readdirSync, unlinkSync } from "node:fs";
import * as path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import {
  assertBuilt,
  commit,
  currentVersions,
  expectedReport,
  gitNumstat,
  makeWorld,
  parseReport,
  pull,
  read,
  storeFingerprint,
  treeDigest,
  write,
} from "../helpers/cli.js";

beforeAll(assertBuilt);

/** Stories run concurrently (two cores); each is many sequential processes. */
const storyTimeout = 180_000;

/** Runs one phase of a story, prefixing a failure with the phase's name. */
const step = async (name: string, phase: () => Promise<void>): Promise<void> => {
  try {
    await phase();
  } catch (error) {
    if (error instanceof Error) error.message = `[${name}] ${error.message}`;
    throw error;
  }
};

const lines = (...items: ReadonlyArray<string>): string =>
  items.map((item) => `${item}\n`).join("");

describe.concurrent("one file store, several working copies", () => {
  it(
    "A and B: concurrent edits to different files and lines publish, converge, count right",
    async () => {
      const world = makeWorld();
      const A = world.copy("A");
      const B = world.copy("B");
      const shared0 = lines(
        "# Shared",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "end",
      );
      try {
        await step(
          "first publication: A publishes three files at generation 1, B pulls them",
          async () => {
            expect(await pull(world, "A")).toMatchObject({
              code: 0,
              stdout: "OK  generation 0\n0 files changed\n",
            });
            write(A, "notes/a.md", lines("alpha", "beta"));
            write(A, "notes/b.md", lines("gamma", "delta", "epsilon"));
            write(A, "shared.md", shared0);

            const first = await commit(world, "A", "first");
            expect(first.code).toBe(0);
            expect(first.stdout).toBe(
              "OK  generation 1\n" +
                "  notes/a.md  +2\n" +
                "  notes/b.md  +3\n" +
                "  shared.md  +9\n" +
                "3 files changed, 14 insertions(+)\n",
            );
            expect(currentVersions(world).versions).toHaveLength(1);

            const pulled = await pull(world, "B");
            expect(pulled.code).toBe(0);
            expect(pulled.stdout).toBe(first.stdout);
            expect(treeDigest(B)).toBe(treeDigest(A));
          },
        );

        await step(
          "edits to different files and different lines of one file, made concurrently, both publish and converge",
          async () => {
            // Both copies edit before either commits.
            write(A, "notes/a.md", lines("alpha", "BETA from A"));
            write(A, "shared.md", shared0.replace("one\n", "one (A)\n"));
            write(B, "notes/b.md", lines("gamma", "delta", "epsilon", "zeta from B"));
            write(B, "shared.md", shared0.replace("six\n", "six (B)\n"));

            const fromA = await commit(world, "A", "A's edit");
            expect(fromA).toMatchObject({
              code: 0,
              stdout: expectedReport(2, [
                { path: "notes/a.md", insertions: 1, deletions: 1 },
                { path: "shared.md", insertions: 1, deletions: 1 },
              ]),
            });

            // B's publication is what it adds over generation 2 (A's state), merged.
            const fromB = await commit(world, "B", "B's edit");
            expect(fromB).toMatchObject({
              code: 0,
              stdout:
                expectedReport(3, [
                  { path: "notes/b.md", insertions: 1, deletions: 0 },
                  { path: "shared.md", insertions: 1, deletions: 1 },
                ]) +
                // The merge brought A's edits into B's copy, and the report says so.
                "merged in from others (now in the working copy): 2 files\n" +
                "  changed  notes/a.md\n  changed  shared.md\n",
            });
            const merged = shared0.replace("one\n", "one (A)\n").replace("six\n", "six (B)\n");
            // The commit rewrote B to the accepted tree, which already holds A's edits.
            expect(read(B, "shared.md")).toBe(merged);
            expect(read(B, "notes/a.md")).toBe(lines("alpha", "BETA from A"));

            // A's pull reports the on-disk delta; B is already current.
            const [pulledA, pulledB] = await Promise.all([pull(world, "A"), pull(world, "B")]);
            expect(pulledA.stdout).toBe(
              expectedReport(3, [
                { path: "notes/b.md", insertions: 1, deletions: 0 },
                { path: "shared.md", insertions: 1, deletions: 1 },
              ]),
            );
            expect(read(A, "shared.md")).toBe(merged);
            expect(read(A, "notes/b.md")).toBe(lines("gamma", "delta", "epsilon", "zeta from B"));

            expect(pulledB?.stdout).toBe("OK  generation 3\n0 files changed\n");
            expect(treeDigest(A)).toBe(treeDigest(B));
            expect(currentVersions(world).versions).toHaveLength(3);
          },
        );

        await step(
          "a no-change commit keeps the generation and writes nothing to the store",
          async () => {
            const current = currentVersions(world);
            const store = storeFingerprint(world);
            const result = await commit(world, "A", "nothing to say");
            expect(result).toMatchObject({
              code: 0,
              stdout: "OK  generation 3\n0 files changed\n",
            });
            expect(currentVersions(world)).toEqual(current);
            expect(storeFingerprint(world)).toBe(store);

            // Also when the copy was edited and then edited back.
            write(B, "notes/a.md", "scratch\n");
            write(B, "notes/a.md", lines("alpha", "BETA from A"));
            expect((await commit(world, "B", "back to the same")).stdout).toBe(
              "OK  generation 3\n0 files changed\n",
            );
            expect(storeFingerprint(world)).toBe(store);
          },
        );

        await step(
          "per-file counts of a realistic multi-hunk edit equal git diff --numstat",
          async () => {
            const before = Array.from(
              { length: 40 },
              (_, index) => `Line ${index + 1}: some notebook prose about topic ${index % 7}.`,
            );
            write(A, "doc.md", lines(...before));
            expect((await commit(world, "A", "add doc")).stdout).toBe(
              expectedReport(4, [{ path: "doc.md", insertions: 40, deletions: 0 }]),
            );
            expect((await pull(world, "B")).code).toBe(0);

            const after = [...before];
            after[2] = "Line 3: rewritten.";
            after.splice(10, 0, "An inserted paragraph.", "", "And another line.");
            after.splice(18, 3); // deletes three original lines
            after.splice(27, 2, "Replaced two lines", "with three", "lines.");
            after.push("A closing line without a final newline");
            const beforeText = lines(...before);
            const afterText = lines(...after).slice(0, -1);
            const git = gitNumstat(beforeText, afterText);
            expect(git.insertions).toBeGreaterThan(5); // the edit really is multi-hunk

            write(A, "doc.md", afterText);
            // Deleting a file counts all its lines; an added empty file has none.
            unlinkSync(world.copy("A/notes/a.md"));
            unlinkSync(world.copy("A/notes/b.md"));
            write(A, "empty.md", "");
            const expected = expectedReport(5, [
              { path: "doc.md", ...git },
              { path: "empty.md", insertions: 0, deletions: 0 },
              { path: "notes/a.md", insertions: 0, deletions: 2 },
              { path: "notes/b.md", insertions: 0, deletions: 4 },
            ]);
            expect((await commit(world, "A", "multi-hunk")).stdout).toBe(expected);
            expect((await pull(world, "B")).stdout).toBe(expected);
            expect(read(B, "doc.md")).toBe(afterText);
            expect(treeDigest(B)).toBe(treeDigest(A));
            // The emptied directory is removed from B too (empty directories are not state).
            expect(existsSync(world.copy("B/notes"))).toBe(false);
          },
        );
      } finally {
        world.cleanup();
      }
    },
    storyTimeout,
  );

  it(
    "six processes committing disjoint files at once all succeed with distinct generations",
    async () => {
      const world = makeWorld();
      try {
        const names = ["c1", "c2", "c3", "c4", "c5", "c6"];
        const pulls = await Promise.all(names.map((name) => pull(world, name)));
        for (const result of pulls)
          expect(result.stdout).toBe("OK  generation 0\n0 files changed\n");
        names.forEach((name, index) =>
          write(
            world.copy(name),
            `from/${name}.md`,
            lines(...Array.from({ length: index + 1 }, (_, i) => `${name} ${i}`)),
          ),
        );

        // All six race from generation 0: the first publication (create-only `current`) and
        // then replacements. A racer only loses when another one wins, and each wins once,
        // so no racer can lose more than 5 times: the default bound (8) is never exhausted.
        const results = await Promise.all(names.map((name) => commit(world, name, `race ${name}`)));
        const generations = results.map((result, index) => {
          expect(result.code, result.stderr).toBe(0);
          const report = parseReport(result.stdout);
          // Each publication adds exactly its own file over the state it was merged onto.
          expect(report.files).toEqual([
            { path: `from/${names[index] ?? ""}.md`, insertions: index + 1, deletions: 0 },
          ]);
          return report.generation;
        });
        expect([...generations].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6]);
        // One swap per publication, or fewer: a racer that lost stages its publication and
        // another's swap may carry it (commit/staging.ts).
        const swaps = currentVersions(world).versions.length;
        expect(swaps).toBeGreaterThanOrEqual(1);
        expect(swaps).toBeLessThanOrEqual(6);

        // A fresh copy gets every racer's file; the first winner (the stalest copy) converges.
        const first = names[generations.indexOf(1)] ?? "";
        const finals = await Promise.all(["final", first].map((name) => pull(world, name)));
        for (const result of finals) expect(parseReport(result.stdout).generation).toBe(6);
        expect(parseReport(finals[0]?.stdout ?? "").files).toHaveLength(6);
        const reference = treeDigest(world.copy("final"));
        expect(reference.split("\n").map((line) => line.split(" ")[0])).toEqual(
          names.map((name) => `from/${name}.md`),
        );
        expect(treeDigest(world.copy(first))).toBe(reference);
        // Every one of those 14 processes probed the store at start; no probe key is left.
        expect(readdirSync(path.join(world.store, "objects", "probe"))).toEqual([]);
      } finally {
        world.cleanup();
      }
    },
    storyTimeout,
  );
});
