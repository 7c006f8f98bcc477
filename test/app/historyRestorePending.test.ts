/**
 * restore and revert on a copy that still has a merge to make (history/restore.ts
 * `refusePendingMerge`): a file an earlier pull held (saved during it), or a stopped pull
 * whose recovery rolls its rewrite forward. That merge would undo what they write — the
 * next commit or pull brings the notebook's change back — so they refuse, write nothing,
 * and say to pull first; after the pull they do what they say.
 */
import { Effect, Exit } from "effect";
import { describe, expect, it } from "vitest";
import * as memFs from "../../src/adapters/memFileSystem.js";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import { appendingNote, failure, openOn } from "./memNotebook.js";

const author = { name: "test", version: "1" };

/** b's note held by a pull of generation 2 (`BAD` on its first line) while a person appends. */
const heldNote = async () => {
  const { notebook, write, read, arm } = appendingNote();
  await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
  write("/ws/a/note.md", "one\ntwo\nthree\n");
  write("/ws/a/other.md", "x\n");
  await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "seed", author }));
  await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
  write("/ws/a/note.md", "BAD\ntwo\nthree\n");
  write("/ws/a/other.md", "y\n");
  await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "bad change", author }));
  arm(true);
  await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
  arm(false);
  const status = await Effect.runPromise(notebook.status({ path: "/ws/b" }));
  expect(status.held).toEqual(["note.md"]);
  return { notebook, read, saved: read("/ws/b/note.md") };
};

/**
 * Copies of one memory store on one memory file system: `notebook`, and `stopping`, the
 * same but interrupted at failpoint `stage`.
 */
const copies = (stage?: string) => {
  const store = memoryStore.make();
  const { service: fs, vol } = memFs.make({ "/ws/.keep": "" });
  const stopping = openOn(store, fs, {
    failpoint: (at) => (at === stage ? Effect.interrupt : Effect.void),
  });
  const read = (path: string) => String(vol.readFileSync(path, "utf8"));
  const write = (path: string, text: string) => {
    vol.mkdirSync(path.slice(0, path.lastIndexOf("/")), { recursive: true });
    vol.writeFileSync(path, text);
  };
  return { notebook: openOn(store, fs), stopping, read, write };
};

describe("restore and revert with a merge still to make", () => {
  it("revert of the change a held file has not taken in yet is refused until a pull merges it", async () => {
    const { notebook, read, saved } = await heldNote();
    const refused = await failure(notebook.revert({ path: "/ws/b", generation: 2 }));
    expect([refused.code, refused.reason, refused.action]).toEqual([
      "INVALID_REQUEST",
      "PULL_NEEDED",
      "PULL_FIRST",
    ]);
    expect(refused.message).toContain("note.md");
    expect(refused.message).toContain("quire pull first");
    expect(read("/ws/b/note.md")).toBe(saved);

    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    expect(read("/ws/b/note.md")).toContain("BAD");
    const reverted = await Effect.runPromise(notebook.revert({ path: "/ws/b", generation: 2 }));
    expect(reverted.files).toEqual([
      { path: "note.md", change: "modified" },
      { path: "other.md", change: "modified" },
    ]);
    await Effect.runPromise(notebook.commit({ path: "/ws/b", message: "undo", author }));
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    const published = read("/ws/a/note.md");
    expect(published).not.toContain("BAD");
    expect(published).toContain("appended 1");
  });

  it("restore of a held file is refused, even with force, until a pull merges it", async () => {
    const { notebook, read, saved } = await heldNote();
    for (const force of [false, true]) {
      const refused = await failure(
        notebook.restore({ path: "/ws/b", generation: 1, files: ["note.md"], force }),
      );
      expect([refused.code, refused.reason]).toEqual(["INVALID_REQUEST", "PULL_NEEDED"]);
      expect(read("/ws/b/note.md")).toBe(saved);
    }
    // A restore of a file that is not held goes ahead.
    const other = await Effect.runPromise(
      notebook.restore({ path: "/ws/b", generation: 1, files: ["other.md"], force: false }),
    );
    expect(other.files).toEqual([{ path: "other.md", change: "modified" }]);
    expect(read("/ws/b/other.md")).toBe("x\n");
    expect(read("/ws/b/note.md")).toBe(saved);

    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    await Effect.runPromise(
      notebook.restore({ path: "/ws/b", generation: 1, files: ["note.md"], force: true }),
    );
    await Effect.runPromise(notebook.commit({ path: "/ws/b", message: "back to 1", author }));
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    expect(read("/ws/a/note.md")).toBe("one\ntwo\nthree\n");
  });

  it("restore on a copy whose pull stopped part way is refused until a pull recovers it", async () => {
    const { notebook, stopping, read, write } = copies("mid-materialisation");
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    write("/ws/a/note.md", "one\ntwo\nthree\n");
    write("/ws/a/z.md", "z\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "seed", author }));
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    write("/ws/a/note.md", "BAD\ntwo\nthree\n");
    write("/ws/a/z.md", "z2\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "bad", author }));
    const stopped = await Effect.runPromiseExit(stopping.pull({ path: "/ws/b" }));
    expect(Exit.isFailure(stopped)).toBe(true);
    const before = read("/ws/b/note.md");

    const refused = await failure(
      notebook.restore({ path: "/ws/b", generation: 1, files: ["note.md"], force: true }),
    );
    expect([refused.code, refused.reason]).toEqual(["INVALID_REQUEST", "PULL_NEEDED"]);
    expect(refused.message).toContain("stopped part way");
    expect(read("/ws/b/note.md")).toBe(before);

    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    await Effect.runPromise(
      notebook.restore({ path: "/ws/b", generation: 1, files: ["note.md"], force: true }),
    );
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    expect(read("/ws/b/note.md")).toBe("one\ntwo\nthree\n");
  });

  it("restore after a commit that stopped past its swap is refused until a pull settles it", async () => {
    const { notebook, stopping, read, write } = copies("after-cas");
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    write("/ws/a/note.md", "one\ntwo\nthree\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "g1", author }));
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    write("/ws/a/note.md", "one\ntwo\nthree\nALICE\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "g2", author }));
    write("/ws/b/note.md", "ONE\ntwo\nthree\n");
    const stopped = await Effect.runPromiseExit(
      stopping.commit({ path: "/ws/b", message: "g3", author }),
    );
    expect(Exit.isFailure(stopped)).toBe(true);
    const status = await Effect.runPromise(notebook.status({ path: "/ws/b" }));
    expect(status.recoveryPending).toBe(true);

    const refused = await failure(
      notebook.restore({ path: "/ws/b", generation: 1, files: ["note.md"], force: true }),
    );
    expect([refused.code, refused.reason]).toEqual(["INVALID_REQUEST", "PULL_NEEDED"]);
    expect(read("/ws/b/note.md")).toBe("ONE\ntwo\nthree\n");

    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    await Effect.runPromise(
      notebook.restore({ path: "/ws/b", generation: 1, files: ["note.md"], force: true }),
    );
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    expect(read("/ws/b/note.md")).toBe("one\ntwo\nthree\n");
  });

  it("a file held for conflict blocks the notebook changed again: restored to the notebook's version, not an older one", async () => {
    const { notebook, read, write } = copies();
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    write("/ws/a/note.md", "one\ntwo\nthree\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "g1", author }));
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    write("/ws/a/note.md", "A1\ntwo\nthree\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "g2", author }));
    write("/ws/b/note.md", "B1\ntwo\nthree\n");
    expect((await failure(notebook.pull({ path: "/ws/b" }))).reason).toBe("MERGE_CONFLICT");
    write("/ws/a/note.md", "A2\ntwo\nthree\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "g3", author }));
    expect((await failure(notebook.pull({ path: "/ws/b" }))).reason).toBe("MERGE_CONFLICT");
    expect((await Effect.runPromise(notebook.status({ path: "/ws/b" }))).held).toEqual(["note.md"]);
    const blocks = read("/ws/b/note.md");

    const older = await failure(
      notebook.restore({ path: "/ws/b", generation: 1, files: ["note.md"], force: true }),
    );
    expect([older.code, older.reason]).toEqual(["INVALID_REQUEST", "PULL_NEEDED"]);
    expect(older.message).toContain("notebook's current version");
    // The revert names the blocks, as it does for any file holding them.
    expect((await failure(notebook.revert({ path: "/ws/b", generation: 3 }))).reason).toBe(
      "UNRESOLVED_MARKERS",
    );
    expect(read("/ws/b/note.md")).toBe(blocks);

    await Effect.runPromise(
      notebook.restore({ path: "/ws/b", generation: 3, files: ["note.md"], force: true }),
    );
    await Effect.runPromise(notebook.commit({ path: "/ws/b", message: "theirs", author }));
    expect(read("/ws/b/note.md")).toBe("A2\ntwo\nthree\n");
  });
});
