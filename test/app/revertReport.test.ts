/**
 * What a conflicting `revert` answers (docs/history.md): it writes its clean changes into
 * the copy as well as the conflicted ones, so its error lists every file it changed
 * (`changed`) beside the conflicts (`files`), and the files someone saved during the
 * call (`held`) — a conflict in a held file, which holds no blocks, is not reported.
 * And a revert that would merge into a file still holding conflict marker blocks is
 * refused before anything is written, as a commit refuses them.
 */
import { Effect } from "effect";
import { describe, expect, it } from "vitest";
import { errorEnvelope } from "../../src/domain/envelope.js";
import { noPathSets } from "../../src/domain/pathSets.js";
import { failure, personAtWork } from "./memNotebook.js";

const author = { name: "test", version: "1" };

/** A notebook whose rewrites call `beforeWrite(path)` just before replacing a note. */
const setup = (beforeWrite: (path: string) => void = () => {}) => personAtWork(beforeWrite, true);

type Notebook = ReturnType<typeof setup>["notebook"];

/**
 * Generation 2 edits line 2 of a.md and line 1 of b.md; generation 3 edits line 2 of
 * a.md again: undoing generation 2 conflicts in a.md and is clean in b.md.
 */
const history = async (notebook: Notebook, write: (path: string, text: string) => void) => {
  const commit = (message: string) =>
    Effect.runPromise(notebook.commit({ path: "/ws/a", message, author }));
  await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
  write("/ws/a/a.md", "1\n2\n3\n");
  write("/ws/a/b.md", "x\ny\n");
  await commit("one");
  write("/ws/a/a.md", "1\nTWO\n3\n");
  write("/ws/a/b.md", "X\ny\n");
  await commit("two");
  write("/ws/a/a.md", "1\nTWO again\n3\n");
  await commit("three");
};

describe("a conflicting revert", () => {
  it("lists every file it changed, the clean ones too, beside the conflicts", async () => {
    const { notebook, write, read } = setup();
    await history(notebook, write);

    const clash = await failure(notebook.revert({ path: "/ws/a", generation: 2 }));
    expect([clash.code, clash.reason]).toEqual(["CONTENT_CONFLICT", "MERGE_CONFLICT"]);
    expect(clash.files.map((f) => [f.path, f.reason])).toEqual([["a.md", "TEXT_CONFLICT"]]);
    expect(clash.changed).toEqual([
      { path: "a.md", change: "modified" },
      { path: "b.md", change: "modified" },
    ]);
    expect(clash.held).toEqual([]);
    // b.md was reverted in the copy: the answer must say so.
    expect(read("/ws/a/b.md")).toBe("x\ny\n");
    expect(read("/ws/a/a.md")).toContain("<<<<<<< local");

    // Every surface: the structured object (the library's answer, --json) and the text.
    const { text, structured } = errorEnvelope(clash, "0011223344556677", noPathSets);
    expect(structured.changed).toEqual(clash.changed);
    expect(structured.held).toEqual([]);
    expect(text.split("\n")).toEqual(
      expect.arrayContaining([
        "file: a.md · TEXT_CONFLICT · lines 2-6",
        "changed: a.md · modified",
        "changed: b.md · modified",
      ]),
    );
  });

  it("leaves a conflicted file saved during the call as saved: held, not reported as blocks", async () => {
    let armed = false;
    const { notebook, write, read } = setup((path) => {
      // The person saves a.md again just as the revert writes its conflict into it.
      if (!armed || path !== "/ws/a/a.md") return;
      armed = false;
      write("/ws/a/a.md", "1\nsaved again\n3\n");
    });
    await history(notebook, write);
    armed = true;
    const reverted = await Effect.runPromise(notebook.revert({ path: "/ws/a", generation: 2 }));
    expect(reverted.held).toEqual(["a.md"]);
    expect(reverted.files).toEqual([{ path: "b.md", change: "modified" }]);
    expect(read("/ws/a/a.md")).toBe("1\nsaved again\n3\n");
    expect(read("/ws/a/b.md")).toBe("x\ny\n");
  });
});

describe("a revert into files that still hold conflict marker blocks", () => {
  it("is refused before writing anything, naming those files and their blocks", async () => {
    const { notebook, write, read } = setup();
    const commit = (copy: string, message: string) =>
      Effect.runPromise(notebook.commit({ path: copy, message, author }));
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    write("/ws/a/a.md", "1\n2\n3\n");
    write("/ws/a/b.md", "x\n");
    await commit("/ws/a", "one");
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    // Generation 2 edits line 2 of a.md and b.md; b's own edit of line 2 conflicts.
    write("/ws/a/a.md", "1\nfrom a\n3\n");
    write("/ws/a/b.md", "X\n");
    await commit("/ws/a", "two");
    write("/ws/b/a.md", "1\nfrom b\n3\n");
    const pulled = await failure(notebook.pull({ path: "/ws/b" }));
    expect(pulled.files.map((f) => [f.path, f.reason])).toEqual([["a.md", "TEXT_CONFLICT"]]);
    const marked = read("/ws/b/a.md");
    expect(marked).toContain("<<<<<<< local");

    // Undoing generation 2 would merge into a.md, blocks and all: refused, nothing written.
    const refused = await failure(notebook.revert({ path: "/ws/b", generation: 2 }));
    expect([refused.code, refused.reason]).toEqual(["CONTENT_CONFLICT", "UNRESOLVED_MARKERS"]);
    expect(refused.files).toEqual([
      { path: "a.md", reason: "MARKER_BLOCK", ranges: [{ start: 2, end: 6 }] },
    ]);
    expect(refused.message).toContain("nothing was written");
    expect(refused.message).toContain("Resolve the blocks");
    expect(read("/ws/b/a.md")).toBe(marked);
    expect(read("/ws/b/b.md")).toBe("X\n");

    // A publication that did not touch a.md is undone as usual; so is generation 2 once
    // the blocks are resolved.
    write("/ws/a/c.md", "c\n");
    await commit("/ws/a", "three");
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    const other = await Effect.runPromise(notebook.revert({ path: "/ws/b", generation: 3 }));
    expect(other.files).toEqual([{ path: "c.md", change: "deleted" }]);
    write("/ws/b/a.md", "1\nfrom a\n3\n");
    const undone = await Effect.runPromise(notebook.revert({ path: "/ws/b", generation: 2 }));
    expect(undone.files).toEqual([
      { path: "a.md", change: "modified" },
      { path: "b.md", change: "modified" },
    ]);
    expect(read("/ws/b/a.md")).toBe("1\n2\n3\n");
  });
});

describe("a revert in a file the attributes merge as a union", () => {
  /** `.quireattributes` makes journal.md a union file; generations 2 and 3 each append. */
  const journal = async (notebook: Notebook, write: (path: string, text: string) => void) => {
    const commit = (message: string) =>
      Effect.runPromise(notebook.commit({ path: "/ws/a", message, author }));
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    write("/ws/a/.quireattributes", "journal.md merge=union\n");
    write("/ws/a/journal.md", "# journal\n");
    await commit("one");
    write("/ws/a/journal.md", "# journal\n- b\n");
    await commit("two");
    write("/ws/a/journal.md", "# journal\n- b\n- c\n");
    await commit("three");
  };

  it("conflicts when lines were appended after the undone ones, never answers them undone", async () => {
    const { notebook, write, read } = setup();
    await journal(notebook, write);
    // A union "merge" of the undo kept `- b` and answered OK ("undone already").
    const clash = await failure(notebook.revert({ path: "/ws/a", generation: 2 }));
    expect([clash.code, clash.reason]).toEqual(["CONTENT_CONFLICT", "MERGE_CONFLICT"]);
    expect(clash.files.map((f) => [f.path, f.reason])).toEqual([["journal.md", "TEXT_CONFLICT"]]);
    expect(read("/ws/a/journal.md")).toContain("<<<<<<< local");
  });

  it("never answers a file undone that a save during the call left holding the lines", async () => {
    let armed = false;
    const { notebook, write, read } = setup((path) => {
      // The person appends to the journal just as the revert writes it.
      if (!armed || path !== "/ws/a/journal.md") return;
      armed = false;
      write("/ws/a/journal.md", "# journal\n- b\n- c\n- d\n");
    });
    await journal(notebook, write);
    armed = true;
    const exit = await Effect.runPromiseExit(notebook.revert({ path: "/ws/a", generation: 3 }));
    const text = read("/ws/a/journal.md");
    expect(text).toContain("- d");
    // Merged again as a union, the save kept `- c` and the revert answered it undone.
    if (exit._tag === "Success" && exit.value.files.some((f) => f.path === "journal.md"))
      expect(text).not.toContain("- c");
  });

  it("removes the lines of the last publication, which nothing followed", async () => {
    const { notebook, write, read } = setup();
    await journal(notebook, write);
    const undone = await Effect.runPromise(notebook.revert({ path: "/ws/a", generation: 3 }));
    expect(undone.files).toEqual([{ path: "journal.md", change: "modified" }]);
    expect(read("/ws/a/journal.md")).toBe("# journal\n- b\n");
  });
});
