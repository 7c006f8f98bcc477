/**
 * What stands where a pull must write a note (SPEC §4.1, docs/working-copy.md): an empty
 * directory (or a tree of them) is replaced by the note, as git checks a file out over
 * one; a directory that holds anything — here a file saved into it while the call ran —
 * is left whole and the note held, and `status` then says the copy is not up to date
 * instead of "up to date with the notebook"; the next pull reports the clash as a
 * FILE_DIRECTORY conflict, losing neither the person's file nor the published note.
 * And a file in conflict that the person saves again just as the call writes the blocks
 * is left as saved (held): no blocks are reported that were never written.
 */
import { Cause, Effect, Exit, Option } from "effect";
import { describe, expect, it } from "vitest";
import { failure, personAtWork as setup } from "./memNotebook.js";

const author = { name: "test", version: "1" };

describe("what stands where a note must be written", () => {
  it("an empty directory tree is replaced by the note; status is up to date", async () => {
    const { notebook, vol, write } = setup();
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    write("/ws/a/p.md", "published\n");
    write("/ws/a/d/n.md", "below\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "m", author }));
    vol.mkdirSync("/ws/b/p.md/x/y", { recursive: true });
    vol.mkdirSync("/ws/b/d/n.md/z", { recursive: true });

    const pulled = await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    expect(pulled.files.map((f) => f.path)).toEqual(["d/n.md", "p.md"]);
    expect(vol.readFileSync("/ws/b/p.md", "utf8")).toBe("published\n");
    expect(vol.readFileSync("/ws/b/d/n.md", "utf8")).toBe("below\n");
    const status = await Effect.runPromise(notebook.status({ path: "/ws/b" }));
    expect(status.held).toBeUndefined();
    expect(status.changes).toEqual([]);
  });

  it("a directory that gets a file during the call is kept: held, said by status, then a conflict", async () => {
    const { notebook, vol, write } = setup((path) => {
      // A person saves a draft into a new directory of the note's name just then.
      if (path === "/ws/b/p.md") write("/ws/b/p.md/draft.md", "mine\n");
    });
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    write("/ws/a/p.md", "published\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "m", author }));

    const pulled = await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    // The note is not in the copy, so it is not reported as brought in.
    expect(pulled.files).toEqual([]);
    expect(vol.readFileSync("/ws/b/p.md/draft.md", "utf8")).toBe("mine\n");
    const status = await Effect.runPromise(notebook.status({ path: "/ws/b" }));
    expect(status.held).toEqual(["p.md"]);
    expect(status.ahead).toBe(0);

    // The next pull sees the person's file and reports the clash; both are kept.
    const clash = await failure(notebook.pull({ path: "/ws/b" }));
    expect(clash.code).toBe("CONTENT_CONFLICT");
    expect(clash.files?.map((f) => [f.path, f.reason])).toContainEqual(["p.md", "FILE_DIRECTORY"]);
    expect(vol.readFileSync("/ws/b/p.md/draft.md", "utf8")).toBe("mine\n");
    expect(vol.readFileSync("/ws/b/p.md~remote", "utf8")).toBe("published\n");
  });
});

describe("a conflicted file saved again while the call writes its blocks", () => {
  const conflicted = async (tool: "pull" | "commit") => {
    let armed = false;
    const saveAgain = (path: string) => {
      // The person saves the file again just as the call writes the conflict into it.
      if (!armed || path !== "/ws/b/shared.md") return;
      armed = false;
      write("/ws/b/shared.md", "one\nsaved again\nthree\n");
    };
    const { notebook, vol, write } = setup(saveAgain, true);
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    write("/ws/a/shared.md", "one\ntwo\nthree\n");
    write("/ws/a/k.md", "keep\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "m", author }));
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    write("/ws/a/shared.md", "one\ntheirs\nthree\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "m", author }));
    write("/ws/b/shared.md", "one\nmine\nthree\n");
    armed = true;
    const exit = await Effect.runPromiseExit(
      tool === "pull"
        ? notebook.pull({ path: "/ws/b" })
        : notebook.commit({ path: "/ws/b", message: "m", author }),
    );
    armed = false;
    const error = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none();
    return { notebook, vol, exit, error };
  };

  it("a pull answers OK, the file as saved and held, and the next pull reports the conflict", async () => {
    const { notebook, vol, exit } = await conflicted("pull");
    // Nothing conflicting was written, so nothing to resolve is reported.
    expect(Exit.isSuccess(exit)).toBe(true);
    expect(vol.readFileSync("/ws/b/shared.md", "utf8")).toBe("one\nsaved again\nthree\n");
    const status = await Effect.runPromise(notebook.status({ path: "/ws/b" }));
    expect(status.held).toEqual(["shared.md"]);
    const next = await failure(notebook.pull({ path: "/ws/b" }));
    expect(next.code).toBe("CONTENT_CONFLICT");
    expect(String(vol.readFileSync("/ws/b/shared.md", "utf8"))).toContain("<<<<<<<");
    expect(String(vol.readFileSync("/ws/b/shared.md", "utf8"))).toContain("saved again");
  });

  it("a commit publishes nothing and says the file changed, not 'resolve the blocks'", async () => {
    const { vol, error } = await conflicted("commit");
    const refused = Option.getOrThrow(error);
    expect([refused.code, refused.reason]).toEqual(["ENGINE_FAILED", "LOCAL_IO"]);
    expect(refused.files).toEqual([]);
    expect(vol.readFileSync("/ws/b/shared.md", "utf8")).toBe("one\nsaved again\nthree\n");
  });
});
