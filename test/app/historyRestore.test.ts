/**
 * What `restore` and `revert` answer at the edges docs/history.md names: an editor's
 * name (skipped by the scan) holding a link where they would write is refused as
 * INVALID_FILES, not answered "held" (which would read as a save during the call, and
 * running again would never help); the UNPUBLISHED_CHANGES refusal lists its files; a
 * restore run twice in a row answers the second time that there is nothing to change;
 * and a FILE that exists nowhere is refused, even beside one that does.
 */
import { Effect } from "effect";
import { describe, expect, it } from "vitest";
import { errorEnvelope } from "../../src/domain/envelope.js";
import { noPathSets } from "../../src/domain/pathSets.js";
import { failure, memNotebook } from "./memNotebook.js";

const author = { name: "test", version: "1" };

/** A notebook with the copy /ws/a pulled, and a commit of it. */
const pulled = async () => {
  const world = memNotebook();
  await Effect.runPromise(world.notebook.pull({ path: "/ws/a" }));
  const commit = (message: string) =>
    Effect.runPromise(world.notebook.commit({ path: "/ws/a", message, author }));
  return { ...world, commit };
};

describe("restore and revert over an editor's name that now holds a link", () => {
  it("are refused as INVALID_FILES naming it (SYMLINK), writing nothing, the link's target untouched", async () => {
    const { notebook, vol, write, read, commit } = await pulled();
    write("/outside/target", "ORIG\n");
    // `.#x.md` is an emacs lock's name, but a text file there is a note like any other.
    write("/ws/a/.#x.md", "text note\n");
    write("/ws/a/k.md", "k\n");
    await commit("g1");
    vol.unlinkSync("/ws/a/.#x.md");
    await commit("g2");
    vol.symlinkSync("/outside/target", "/ws/a/.#x.md");

    const restored = await failure(
      notebook.restore({ path: "/ws/a", generation: 1, files: [".#x.md"], force: false }),
    );
    const reverted = await failure(notebook.revert({ path: "/ws/a", generation: 2 }));
    for (const refused of [restored, reverted]) {
      expect([refused.code, refused.reason]).toEqual(["INVALID_CONTENT", "INVALID_FILES"]);
      expect(refused.files).toEqual([{ path: ".#x.md", reason: "SYMLINK", ranges: [] }]);
      expect(refused.message).toContain("nothing was written");
    }
    expect(vol.readlinkSync("/ws/a/.#x.md")).toBe("/outside/target");
    expect(read("/outside/target")).toBe("ORIG\n");
    expect(vol.readdirSync("/ws/a").sort()).toEqual([".#x.md", "k.md"]);
  });

  it("a restore of a directory holding an editor's binary file where a note goes is refused too", async () => {
    const { notebook, vol, write, read, commit } = await pulled();
    write("/ws/a/d/.DS_Store", "a note once\n");
    write("/ws/a/k.md", "k\n");
    await commit("g1");
    vol.unlinkSync("/ws/a/d/.DS_Store");
    await commit("g2");
    write("/ws/a/d/.DS_Store", "Bud1\u0000\u0000");
    const refused = await failure(
      notebook.restore({ path: "/ws/a", generation: 1, files: ["d"], force: true }),
    );
    expect([refused.code, refused.reason]).toEqual(["INVALID_CONTENT", "INVALID_FILES"]);
    expect(refused.files).toEqual([{ path: "d/.DS_Store", reason: "CONTAINS_NUL", ranges: [] }]);
    expect(read("/ws/a/d/.DS_Store")).toBe("Bud1\u0000\u0000");
  });

  it("a restore of a directory holding an editor's file where no note goes writes the notes", async () => {
    const { notebook, write, read, commit } = await pulled();
    write("/ws/a/d/x.md", "one\n");
    await commit("g1");
    write("/ws/a/d/x.md", "two\n");
    await commit("g2");
    // Finder's file in every folder it showed, and a vim swap file: never notes.
    write("/ws/a/d/.DS_Store", "Bud1\u0000\u0000");
    write("/ws/a/d/.x.md.swp", "b0VIM\u0000");
    const restored = await Effect.runPromise(
      notebook.restore({ path: "/ws/a", generation: 1, files: ["d"], force: false }),
    );
    expect(restored.files).toEqual([{ path: "d/x.md", change: "modified" }]);
    expect(read("/ws/a/d/x.md")).toBe("one\n");
    expect(read("/ws/a/d/.DS_Store")).toBe("Bud1\u0000\u0000");
  });

  it("an editor's file at a path neither call concerns does not stop them", async () => {
    const { notebook, vol, write, read, commit } = await pulled();
    write("/ws/a/n.md", "one\n");
    await commit("g1");
    write("/ws/a/n.md", "two\n");
    await commit("g2");
    vol.symlinkSync("person@host.1:1", "/ws/a/.#n.md");
    const restored = await Effect.runPromise(
      notebook.restore({ path: "/ws/a", generation: 1, files: ["n.md"], force: false }),
    );
    expect(restored.files).toEqual([{ path: "n.md", change: "modified" }]);
    expect(read("/ws/a/n.md")).toBe("one\n");
    expect(vol.readlinkSync("/ws/a/.#n.md")).toBe("person@host.1:1");
  });
});

describe("restore's UNPUBLISHED_CHANGES", () => {
  it("lists each file it would replace as UNPUBLISHED_CHANGE, in the object and the text", async () => {
    const { notebook, write, read, commit } = await pulled();
    write("/ws/a/x.md", "one\n");
    write("/ws/a/y.md", "one\n");
    await commit("g1");
    write("/ws/a/x.md", "edited\n");
    write("/ws/a/d/new.md", "added\n");
    const refused = await failure(
      notebook.restore({
        path: "/ws/a",
        generation: 1,
        files: ["x.md", "y.md", "d"],
        force: false,
      }),
    );
    expect([refused.code, refused.reason]).toEqual(["INVALID_REQUEST", "UNPUBLISHED_CHANGES"]);
    expect(refused.files).toEqual([
      { path: "d/new.md", reason: "UNPUBLISHED_CHANGE", ranges: [] },
      { path: "x.md", reason: "UNPUBLISHED_CHANGE", ranges: [] },
    ]);
    const { text } = errorEnvelope(refused, "0011223344556677", noPathSets);
    expect(text.split("\n")).toEqual(
      expect.arrayContaining([
        "file: d/new.md · UNPUBLISHED_CHANGE",
        "file: x.md · UNPUBLISHED_CHANGE",
      ]),
    );
    expect(read("/ws/a/x.md")).toBe("edited\n");
    expect(read("/ws/a/d/new.md")).toBe("added\n");
  });
});

describe("restore run twice in a row", () => {
  it("answers the second time that there is nothing to change, without --force", async () => {
    const { notebook, write, read, commit } = await pulled();
    write("/ws/a/d/x.md", "one\n");
    await commit("g1");
    write("/ws/a/d/x.md", "two\n");
    write("/ws/a/d/y.md", "two\n");
    await commit("g2");
    const restore = () =>
      Effect.runPromise(
        notebook.restore({ path: "/ws/a", generation: 1, files: ["d"], force: false }),
      );
    expect((await restore()).files).toEqual([
      { path: "d/x.md", change: "modified" },
      { path: "d/y.md", change: "deleted" },
    ]);
    const again = await restore();
    expect([again.files, again.held]).toEqual([[], []]);
    expect(read("/ws/a/d/x.md")).toBe("one\n");
    // An edit that already reads as the restored text replaces nothing either.
    write("/ws/a/d/x.md", "two\n");
    await commit("g3");
    write("/ws/a/d/x.md", "one\n");
    const edited = await Effect.runPromise(
      notebook.restore({ path: "/ws/a", generation: 1, files: ["d/x.md"], force: false }),
    );
    expect(edited.files).toEqual([]);
  });
});

describe("restore of a FILE that exists nowhere", () => {
  it("is refused as INVALID_ARGUMENT naming it, even beside a FILE that exists; nothing is written", async () => {
    const { notebook, write, read, commit } = await pulled();
    write("/ws/a/other.md", "one\n");
    await commit("g1");
    write("/ws/a/other.md", "two\n");
    await commit("g2");
    const refused = await failure(
      notebook.restore({
        path: "/ws/a",
        generation: 1,
        files: ["other.md", "typo.md"],
        force: false,
      }),
    );
    expect([refused.code, refused.reason]).toEqual(["INVALID_REQUEST", "INVALID_ARGUMENT"]);
    expect(refused.message).toContain("typo.md");
    expect(refused.message).not.toContain("other.md");
    expect(refused.message).toContain("Nothing was written");
    expect(read("/ws/a/other.md")).toBe("two\n");
  });
});

describe("restore of a FILE the copy deleted and has not published", () => {
  it("is known (it is in the notebook the copy last saw): a restore stopped part way, run again, finishes", async () => {
    const { notebook, vol, write, read, commit } = await pulled();
    write("/ws/a/c.md", "c1\n");
    await commit("g1");
    write("/ws/a/c.md", "c2\n");
    write("/ws/a/e.md", "e2\n");
    await commit("g2");
    // What the first run of `restore c.md e.md --from 1` had written when it stopped
    // (ENGINE_FAILED/LOCAL_IO on a later file, "run the same command again to finish"):
    // c.md back as at 1, e.md — which did not exist at 1 — removed.
    write("/ws/a/c.md", "c1\n");
    vol.unlinkSync("/ws/a/e.md");
    const again = await Effect.runPromise(
      notebook.restore({ path: "/ws/a", generation: 1, files: ["c.md", "e.md"], force: false }),
    );
    expect([again.files, again.held]).toEqual([[], []]);
    expect(read("/ws/a/c.md")).toBe("c1\n");
    expect(vol.existsSync("/ws/a/e.md")).toBe(false);
    // A name that is nowhere, not even among the copy's deletions, is still refused.
    const typo = await failure(
      notebook.restore({ path: "/ws/a", generation: 1, files: ["e.md", "f.md"], force: false }),
    );
    expect([typo.code, typo.reason]).toEqual(["INVALID_REQUEST", "INVALID_ARGUMENT"]);
    expect(typo.message).toContain("f.md");
    expect(typo.message).not.toContain("e.md");
  });
});
