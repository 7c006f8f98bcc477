/**
 * A conflict that moves a file aside (a note where the other side has a folder of that
 * name, docs/merge.md) is reported as what it is: each entry says where the moved file
 * went and what stayed (`movedTo`, `side`, `keptAs`), and the message says so instead of
 * claiming that conflict blocks were written — through pull, commit and revert alike.
 */
import { Effect } from "effect";
import { describe, expect, it } from "vitest";
import { failure, memNotebook } from "./memNotebook.js";

const author = { name: "test", version: "1" };

describe("a file moved aside by a conflict is reported where it went", () => {
  it("pull: the person's note d moved to d~local because the notebook now has a folder d", async () => {
    const { notebook, read, write } = memNotebook();
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    write("/ws/a/d/x.md", "published\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "m", author }));
    write("/ws/b/d", "mine\n");

    const clash = await failure(notebook.pull({ path: "/ws/b" }));
    expect(clash.reason).toBe("MERGE_CONFLICT");
    expect(clash.files).toEqual([
      {
        path: "d",
        reason: "FILE_DIRECTORY",
        ranges: [],
        movedTo: "d~local",
        side: "local",
        keptAs: "d",
      },
    ]);
    expect(clash.message).toContain(
      "Your note d was moved to d~local because the notebook now has a folder d.",
    );
    // No blocks were written, so the message must not send anyone looking for them.
    expect(clash.message).not.toMatch(/block/i);
    expect(clash.message).toContain("notes_commit");
    expect(read("/ws/b/d~local")).toBe("mine\n");
    expect(read("/ws/b/d/x.md")).toBe("published\n");
  });

  it("commit: the notebook's note p.md written as p.md~remote because the copy has a folder p.md", async () => {
    const { notebook, read, write } = memNotebook();
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    write("/ws/a/p.md", "published\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "m", author }));
    write("/ws/b/p.md/draft.md", "mine\n");
    write("/ws/b/n.md", "1\n");

    const clash = await failure(notebook.commit({ path: "/ws/b", message: "m", author }));
    expect(clash.files).toEqual([
      {
        path: "p.md",
        reason: "FILE_DIRECTORY",
        ranges: [],
        movedTo: "p.md~remote",
        side: "remote",
        keptAs: "p.md",
      },
    ]);
    expect(clash.message).toContain("nothing was published");
    expect(clash.message).toContain(
      "The notebook's note p.md was written as p.md~remote because your copy has a folder p.md.",
    );
    expect(clash.message).not.toMatch(/block/i);
    expect(read("/ws/b/p.md~remote")).toBe("published\n");
    expect(read("/ws/b/p.md/draft.md")).toBe("mine\n");
  });

  it("case: the person's Readme.md moved aside because the notebook has README.md", async () => {
    const { notebook, write } = memNotebook();
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    write("/ws/a/README.md", "published\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "m", author }));
    write("/ws/b/Readme.md", "mine\n");

    const clash = await failure(notebook.pull({ path: "/ws/b" }));
    expect(clash.files).toEqual([
      {
        path: "Readme.md",
        reason: "CASE_CONFLICT",
        ranges: [],
        movedTo: "Readme.md~local",
        side: "local",
        keptAs: "README.md",
      },
    ]);
    expect(clash.message).toContain(
      "Your note Readme.md was moved to Readme.md~local because the notebook now has README.md, a name that differs only in case.",
    );
  });

  it("revert: bringing back a folder where the copy now has a note moves the note aside", async () => {
    const { notebook, read, write, vol } = memNotebook();
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    write("/ws/a/n.md", "1\n2\n3\n4\n");
    write("/ws/a/d/x.md", "in the folder\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "one", author }));
    // Generation 2 removes the folder and edits line 1 of n.md.
    vol.rmSync("/ws/a/d", { recursive: true });
    write("/ws/a/n.md", "ONE\n2\n3\n4\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "two", author }));
    // Later: a note named d, and line 4 of n.md edited again (so n.md merges, cleanly).
    write("/ws/a/d", "a note now\n");
    write("/ws/a/n.md", "ONE\n2\n3\nFOUR\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "three", author }));

    const clash = await failure(notebook.revert({ path: "/ws/a", generation: 2 }));
    expect(clash.reason, JSON.stringify(clash)).toBe("MERGE_CONFLICT");
    expect(clash.files).toEqual([
      {
        path: "d",
        reason: "FILE_DIRECTORY",
        ranges: [],
        movedTo: "d~local",
        side: "local",
        keptAs: "d",
      },
    ]);
    expect(clash.message).toContain(
      "Your note d was moved to d~local because undoing generation 2 brings back a folder d.",
    );
    expect(clash.message).not.toMatch(/block/i);
    expect(read("/ws/a/d~local")).toBe("a note now\n");
    expect(read("/ws/a/d/x.md")).toBe("in the folder\n");
    expect(read("/ws/a/n.md")).toBe("1\n2\n3\nFOUR\n");
  });
});
