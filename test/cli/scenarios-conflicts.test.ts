/**
 * Issue 2, Done-when 2 (the conflict half) through real `quire` processes: overlapping
 * edits → exit 1, `CONTENT_CONFLICT · MERGE_CONFLICT`, each file with its line range,
 * marker blocks exactly as SPEC §6.3 (LF, and CRLF for a CRLF file; same bytes as
 * `git merge-file`); a commit with markers left in is refused (`UNRESOLVED_MARKERS`)
 * before anything is published; after resolving, the commit succeeds with the right
 * counts. Also delete/modify, modify/delete, add/add, and a conflicting pull.
 */
import { existsSync, unlinkSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import {
  type World,
  assertBuilt,
  commit,
  currentVersions,
  candidLines,
  expectedReport,
  gitMergeFile,
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

const lf = (...items: ReadonlyArray<string>): string => items.map((item) => `${item}\n`).join("");
const crlf = (...items: ReadonlyArray<string>): string =>
  items.map((item) => `${item}\r\n`).join("");

/** The store and `current` before a call that must publish nothing. */
const snapshot = (world: World) => ({
  current: currentVersions(world),
  store: storeFingerprint(world),
});

/** Exit 1, nothing on stdout, and exactly the SPEC §2.4 candid text (one line per element). */
const expectCandidError = (
  result: { code: number | null; stdout: string; stderr: string },
  head: string,
  files: ReadonlyArray<string>,
) => {
  expect(result.code, result.stderr).toBe(1);
  expect(result.stdout).toBe("");
  const candid = candidLines(result.stderr);
  expect(candid[0]).toBe(head);
  expect(candid.slice(2, 2 + files.length)).toEqual(files);
  expect(candid.slice(2 + files.length, -1)).toEqual(["action: EDIT_FILES", "retryable: false"]);
  expect(candid[candid.length - 1]).toMatch(/^diagnosticId: [0-9a-f]{16}$/);
  expect(candid).toHaveLength(files.length + 5);
};

/** Each story is many sequential processes; the two stories run concurrently. */
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

describe.concurrent("conflicts between two working copies on one file store", () => {
  it(
    "overlapping LF and CRLF edits: conflict, refused markers, resolution",
    async () => {
      const world = makeWorld();
      const A = world.copy("A");
      const B = world.copy("B");
      const fBase = lf("intro", "l2", "l3", "l4", "l5");
      const gBase = crlf("intro", "l2", "l3", "l4", "l5");
      const fRemote = lf("intro", "A2", "l3", "l4", "l5");
      const gRemote = crlf("intro", "A2", "l3", "l4", "l5");
      const fLocal = lf("intro", "B2", "l3", "l4", "l5");
      const gLocal = crlf("intro", "B2", "l3", "l4", "l5");
      try {
        await step(
          "the second commit exits 1 with MERGE_CONFLICT, ranges, SPEC §6.3 blocks, and publishes nothing",
          async () => {
            await pull(world, "A");
            write(A, "f.md", fBase);
            write(A, "g.md", gBase);
            write(A, "same.md", lf("x"));
            expect((await commit(world, "A", "base")).code).toBe(0);
            expect((await pull(world, "B")).code).toBe(0);

            // Both edit before either commits.
            write(A, "f.md", fRemote);
            write(A, "g.md", gRemote);
            write(A, "same.md", lf("x", "identical change"));
            write(B, "f.md", fLocal);
            write(B, "g.md", gLocal);
            write(B, "same.md", lf("x", "identical change"));
            write(B, "b-only.md", lf("clean addition"));
            expect((await commit(world, "A", "A first")).stdout).toBe(
              expectedReport(2, [
                { path: "f.md", insertions: 1, deletions: 1 },
                { path: "g.md", insertions: 1, deletions: 1 },
                { path: "same.md", insertions: 1, deletions: 0 },
              ]),
            );

            const before = snapshot(world);
            const result = await commit(world, "B", "B second");
            // Identical changes (same.md) are not conflicts; only f.md and g.md are listed.
            expectCandidError(result, "CONTENT_CONFLICT · MERGE_CONFLICT", [
              "file: f.md · TEXT_CONFLICT · lines 2-6",
              "file: g.md · TEXT_CONFLICT · lines 2-6",
            ]);
            expect(snapshot(world)).toEqual(before);

            const fMarked = lf(
              "intro",
              "<<<<<<< local",
              "B2",
              "=======",
              "A2",
              ">>>>>>> remote",
              "l3",
              "l4",
              "l5",
            );
            const gMarked = crlf(
              "intro",
              "<<<<<<< local",
              "B2",
              "=======",
              "A2",
              ">>>>>>> remote",
              "l3",
              "l4",
              "l5",
            );
            expect(read(B, "f.md")).toBe(fMarked);
            expect(read(B, "g.md")).toBe(gMarked);
            // The same bytes git writes for these three versions.
            expect(gitMergeFile(fLocal, fBase, fRemote)).toEqual({
              text: fMarked,
              conflicted: true,
            });
            expect(gitMergeFile(gLocal, gBase, gRemote)).toEqual({
              text: gMarked,
              conflicted: true,
            });
            // The clean parts of the merge are in the copy too.
            expect(read(B, "same.md")).toBe(lf("x", "identical change"));
            expect(read(B, "b-only.md")).toBe(lf("clean addition"));
          },
        );

        await step(
          "a commit with the markers left in is refused with UNRESOLVED_MARKERS and publishes nothing",
          async () => {
            const before = snapshot(world);
            const result = await commit(world, "B", "markers still in");
            expectCandidError(result, "CONTENT_CONFLICT · UNRESOLVED_MARKERS", [
              "file: f.md · MARKER_BLOCK · lines 2-6",
              "file: g.md · MARKER_BLOCK · lines 2-6",
            ]);
            expect(snapshot(world)).toEqual(before);
          },
        );

        await step(
          "after resolving, the commit succeeds with counts relative to the accepted state, and A converges",
          async () => {
            // A setext heading underline (`=======`) and a lone marker line are ordinary text.
            const fResolved = lf(
              "Title",
              "=======",
              "intro",
              "A2 and B2",
              "<<<<<<< local",
              "l3",
              "l4",
              "l5",
            );
            const gResolved = crlf("intro", "B2", "l3", "l4", "l5");
            write(B, "f.md", fResolved);
            write(B, "g.md", gResolved);
            const result = await commit(world, "B", "resolved");
            expect(result.code, result.stderr).toBe(0);
            expect(result.stdout).toBe(
              expectedReport(3, [
                { path: "b-only.md", insertions: 1, deletions: 0 },
                { path: "f.md", ...gitNumstat(fRemote, fResolved) },
                { path: "g.md", insertions: 1, deletions: 1 },
              ]),
            );
            expect((await pull(world, "A")).code).toBe(0);
            expect(read(A, "f.md")).toBe(fResolved);
            expect(read(A, "g.md")).toBe(gResolved);
            expect(treeDigest(A)).toBe(treeDigest(B));
          },
        );
      } finally {
        world.cleanup();
      }
    },
    storyTimeout,
  );

  it(
    "delete/modify, modify/delete, add/add and a conflicting pull",
    async () => {
      const world = makeWorld();
      const A = world.copy("A");
      const B = world.copy("B");

      try {
        await step(
          "delete/modify, modify/delete and add/add are conflicts; nothing is published; resolving publishes",
          async () => {
            await pull(world, "A");
            write(A, "d.md", lf("kept by B"));
            write(A, "m.md", lf("modified by A"));
            expect((await commit(world, "A", "base")).code).toBe(0);
            expect((await pull(world, "B")).code).toBe(0);

            unlinkSync(world.copy("A/d.md")); // A deletes what B modifies
            write(A, "m.md", lf("modified by A", "A's line")); // A modifies what B deletes
            write(A, "n.md", lf("title", "A's body")); // both add n.md, differently
            write(B, "d.md", lf("kept by B", "B's line"));
            unlinkSync(world.copy("B/m.md"));
            write(B, "n.md", lf("title", "B's body"));
            expect((await commit(world, "A", "A first")).stdout).toBe(
              expectedReport(2, [
                { path: "d.md", insertions: 0, deletions: 1 },
                { path: "m.md", insertions: 1, deletions: 0 },
                { path: "n.md", insertions: 2, deletions: 0 },
              ]),
            );

            const before = snapshot(world);
            const result = await commit(world, "B", "B second");
            expectCandidError(result, "CONTENT_CONFLICT · MERGE_CONFLICT", [
              "file: d.md · DELETE_MODIFY",
              "file: m.md · DELETE_MODIFY",
              "file: n.md · ADD_ADD · lines 2-6",
            ]);
            expect(snapshot(world)).toEqual(before);
            // The modified side survives in both directions; add/add is a marker block (as git
            // merges two additions over an empty base).
            expect(read(B, "d.md")).toBe(lf("kept by B", "B's line"));
            expect(read(B, "m.md")).toBe(lf("modified by A", "A's line"));
            const nMarked = lf(
              "title",
              "<<<<<<< local",
              "B's body",
              "=======",
              "A's body",
              ">>>>>>> remote",
            );
            expect(read(B, "n.md")).toBe(nMarked);
            expect(gitMergeFile(lf("title", "B's body"), "", lf("title", "A's body"))).toEqual({
              text: nMarked,
              conflicted: true,
            });

            // Resolve: keep B's d.md (now an addition over the accepted state), accept A's m.md,
            // merge n.md by hand.
            write(B, "n.md", lf("title", "A's body", "B's body"));
            const resolved = await commit(world, "B", "resolved");
            expect(resolved.stdout).toBe(
              expectedReport(3, [
                { path: "d.md", insertions: 2, deletions: 0 },
                { path: "n.md", insertions: 1, deletions: 0 },
              ]),
            );
            expect((await pull(world, "A")).code).toBe(0);
            expect(treeDigest(A)).toBe(treeDigest(B));
            expect(existsSync(world.copy("A/d.md"))).toBe(true);
          },
        );

        await step(
          "a pull that meets overlapping unpublished edits writes the blocks, exits 1, publishes nothing",
          async () => {
            write(A, "n.md", lf("title", "A rewrites", "B's body"));
            expect(parseReport((await commit(world, "A", "A again")).stdout).generation).toBe(4);
            write(B, "n.md", lf("title", "B rewrites", "B's body"));

            const before = snapshot(world);
            const result = await pull(world, "B");
            expectCandidError(result, "CONTENT_CONFLICT · MERGE_CONFLICT", [
              "file: n.md · TEXT_CONFLICT · lines 2-6",
            ]);
            expect(read(B, "n.md")).toBe(
              lf(
                "title",
                "<<<<<<< local",
                "B rewrites",
                "=======",
                "A rewrites",
                ">>>>>>> remote",
                "B's body",
              ),
            );
            expect(snapshot(world)).toEqual(before);
          },
        );
      } finally {
        world.cleanup();
      }
    },
    storyTimeout,
  );
});
