/**
 * `restore` named many files (a script's list, a shell glob of a large directory): the
 * refusal of names that exist nowhere quotes a few of them and says how many more, as
 * the refusal of unpublished changes does, instead of a message holding every one.
 */
import { Effect } from "effect";
import { describe, expect, it } from "vitest";
import { failure, memNotebook } from "./memNotebook.js";

const author = { name: "test", version: "1" };

describe("restore of many files", () => {
  it("that exist nowhere: the message names 20 of them and how many more", async () => {
    const { notebook, write } = memNotebook();
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    write("/ws/a/x.md", "one\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "one", author }));
    const files = Array.from({ length: 5_000 }, (_, i) => `missing/f${i}.md`);
    const error = await failure(
      notebook.restore({ path: "/ws/a", generation: 1, files, force: false }),
    );
    expect([error.code, error.reason]).toEqual(["INVALID_REQUEST", "INVALID_ARGUMENT"]);
    expect(error.message).toContain("missing/f19.md, … (4,980 more)");
    expect(error.message).not.toContain("missing/f20.md");
  });

  it("a directory among them restores the files below it, and only those", async () => {
    const { notebook, write, read, vol } = memNotebook();
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    write("/ws/a/d/x.md", "one\n");
    write("/ws/a/dx.md", "one\n");
    // Named too, and unchanged since: each one a FILE that exists (one that does not is
    // refused), and nothing to restore.
    const others = Array.from({ length: 1_000 }, (_, i) => `other/f${i}.md`);
    for (const other of others) write(`/ws/a/${other}`, "same\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "one", author }));
    write("/ws/a/d/x.md", "two\n");
    write("/ws/a/dx.md", "two\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "two", author }));
    const files = [...others, "d"];
    const restored = await Effect.runPromise(
      notebook.restore({ path: "/ws/a", generation: 1, files, force: false }),
    );
    expect(restored.files).toEqual([{ path: "d/x.md", change: "modified" }]);
    expect(read("/ws/a/d/x.md")).toBe("one\n");
    expect(read("/ws/a/dx.md")).toBe("two\n");
    expect(vol.readdirSync("/ws/a/other").length).toBe(1_000);
  });
});
