/**
 * A pull into a file whose conflict blocks are still unresolved, when the notebook
 * changed that file again (SPEC §6.3, pull/unresolvedBlocks.ts): the file is left as it
 * is and its blocks reported again, never merged into nested blocks that the marker
 * scanner does not count and a commit would publish with OK (found by an adversarial
 * pass). Once the person resolves the blocks, the commit merges the newer change.
 */
import { Effect, Exit } from "effect";
import { describe, expect, it } from "vitest";
import { renderStatus } from "../../src/domain/copyStatus.js";
import { failure, memNotebook } from "./memNotebook.js";

const author = { name: "test", version: "1" };

/** a and b share n.md; a's unpublished line 2 conflicts with b's published one. */
const conflicted = async () => {
  const world = memNotebook();
  const { notebook, write } = world;
  const commit = (path: string, message: string) =>
    Effect.runPromise(notebook.commit({ path, message, author }));
  await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
  write("/ws/a/n.md", "one\ntwo\nthree\nfour\n");
  write("/ws/a/other.md", "other\n");
  await commit("/ws/a", "seed");
  await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
  write("/ws/a/n.md", "one\nTWO-by-A\nthree\nfour\n");
  write("/ws/b/n.md", "one\nTWO-by-B\nthree\nfour\n");
  await commit("/ws/b", "b's line 2");
  const first = await failure(notebook.pull({ path: "/ws/a" }));
  expect(first.files).toEqual([
    { path: "n.md", reason: "TEXT_CONFLICT", ranges: [{ start: 2, end: 6 }] },
  ]);
  return { ...world, commit };
};

describe("a file with unresolved blocks that the notebook changes again", () => {
  it("is left as it is by the pull, its blocks reported again; other files still come in", async () => {
    const { notebook, read, write, commit } = await conflicted();
    const blocks = read("/ws/a/n.md");
    write("/ws/b/n.md", "one\nTWO-by-B\nthree-by-B\nfour\n");
    write("/ws/b/other.md", "other, changed\n");
    await commit("/ws/b", "b's line 3");

    const again = await failure(notebook.pull({ path: "/ws/a" }));
    expect([again.code, again.reason]).toEqual(["CONTENT_CONFLICT", "MERGE_CONFLICT"]);
    expect(again.message).toContain("left as it is");
    expect(again.files).toEqual([
      { path: "n.md", reason: "MARKER_BLOCK", ranges: [{ start: 2, end: 6 }] },
    ]);
    // Not merged again: no block inside a block.
    expect(read("/ws/a/n.md")).toBe(blocks);
    expect(read("/ws/a/other.md")).toBe("other, changed\n");
    // The commit still refuses the blocks; a third pull says the same.
    const refused = await failure(notebook.commit({ path: "/ws/a", message: "m", author }));
    expect(refused.reason).toBe("UNRESOLVED_MARKERS");
    expect((await failure(notebook.pull({ path: "/ws/a" }))).files).toEqual(again.files);
    const status = await Effect.runPromise(notebook.status({ path: "/ws/a" }));
    expect(status.markers.map((m) => m.path)).toEqual(["n.md"]);
    // Its first line says the blocks come first: a pull alone does not bring the change in.
    expect(renderStatus(status, { color: false }).split("\n")[0]).toMatch(
      /1 file still to be merged from the notebook once its conflict blocks are resolved$/,
    );

    // Resolved: the commit merges b's later line 3, which touches the resolved line, so
    // as git would it asks again — with one plain block, nothing nested.
    write("/ws/a/n.md", "one\nTWO-by-both\nthree\nfour\n");
    const next = await failure(notebook.commit({ path: "/ws/a", message: "m", author }));
    expect(next.files?.map((f) => [f.path, f.reason])).toEqual([["n.md", "TEXT_CONFLICT"]]);
    const text = read("/ws/a/n.md");
    expect(text.match(/^<<<<<<< local$/gm)).toHaveLength(1);
    expect(text).toContain("three-by-B");
    write("/ws/a/n.md", "one\nTWO-by-both\nthree-by-B\nfour\n");
    const resolved = await commit("/ws/a", "resolved");
    expect(resolved.files).toEqual([{ path: "n.md", insertions: 1, deletions: 1 }]);
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    expect(read("/ws/b/n.md")).toBe("one\nTWO-by-both\nthree-by-B\nfour\n");
  });

  it("the same pull repeated while nothing changes reports the blocks as before (a plain conflict)", async () => {
    const { notebook, read } = await conflicted();
    const blocks = read("/ws/a/n.md");
    const again = await Effect.runPromiseExit(notebook.pull({ path: "/ws/a" }));
    // Nothing new to merge: the pull is OK, the blocks stay, status lists them.
    expect(Exit.isSuccess(again)).toBe(true);
    expect(read("/ws/a/n.md")).toBe(blocks);
    const status = await Effect.runPromise(notebook.status({ path: "/ws/a" }));
    expect(status.markers.map((m) => m.path)).toEqual(["n.md"]);
  });
});
