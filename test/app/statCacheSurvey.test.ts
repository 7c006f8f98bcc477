/**
 * status and diff save the stat cache of their scan (workingCopy/settle.ts
 * `rememberSurvey`): a file a pull wrote is cached as not settled (its stamp was taken in
 * the clock tick of the write), so without the save every status or diff after a pull
 * read every file that pull wrote, until the next pull or commit. And the save keeps the
 * paths its scan did not find, so that a later commit still tells a save caught between
 * its delete and its write from a deletion.
 */
import { Effect } from "effect";
import { describe, expect, it } from "vitest";
import { failure, hookedNotebook } from "./memNotebook.js";

const author = { name: "t", version: "1" };
const names = ["one.md", "two.md", "three.md"];

/**
 * Copy b, pulled after a has published three notes; b's reads of notes counted. While
 * `midSave` is armed, the next scan of a copy catches a save of b's one.md between its
 * delete (as the scan walks) and its write (at the scan's next look at a file).
 */
const pulledCopy = async () => {
  let reads = 0;
  let deleteNow: (() => void) | undefined;
  let writeNow: (() => void) | undefined;
  const world = hookedNotebook((tree) => ({
    readFile: (path, maxBytes) =>
      Effect.suspend(() => {
        if (tree.root.startsWith("/ws/b")) reads += 1;
        return tree.readFile(path, maxBytes);
      }),
    walk: (skip) =>
      Effect.suspend(() => {
        if (deleteNow !== undefined) {
          deleteNow();
          deleteNow = undefined;
          writeNow = () => world.vol.writeFileSync("/ws/b/one.md", saved);
        }
        return tree.walk(skip);
      }),
    info: (path) =>
      Effect.suspend(() => {
        writeNow?.();
        writeNow = undefined;
        return tree.info(path);
      }),
  }));
  const { notebook, vol } = world;
  await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
  for (const name of names) vol.writeFileSync(`/ws/a/${name}`, `${name}\n`);
  await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "seed", author }));
  await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
  // Saved long ago as far as any later scan can tell: no stamp of theirs is racy.
  const past = new Date(Date.now() - 60_000);
  for (const name of names) vol.utimesSync(`/ws/b/${name}`, past, past);
  const readsDuring = async <A>(call: Effect.Effect<A, unknown>) => {
    reads = 0;
    const value = await Effect.runPromise(call);
    return { value, reads };
  };
  const midSave = () => {
    deleteNow = () => vol.unlinkSync("/ws/b/one.md");
  };
  return { ...world, readsDuring, midSave };
};

const saved = "one.md\nsaved again\n";

describe("the stat cache of a status or diff", () => {
  it("is saved: the files a pull wrote are read by the first status, not by the next calls", async () => {
    const { notebook, vol, readsDuring } = await pulledCopy();
    const first = await readsDuring(notebook.status({ path: "/ws/b" }));
    expect(first.reads).toBe(names.length);
    expect(first.value.changes).toEqual([]);
    expect((await readsDuring(notebook.status({ path: "/ws/b" }))).reads).toBe(0);
    expect((await readsDuring(notebook.diff({ path: "/ws/b", files: [] }))).reads).toBe(0);

    // An edit is read, shown, and published as ever.
    vol.writeFileSync("/ws/b/two.md", "two.md\nand more\n");
    const edited = await readsDuring(notebook.diff({ path: "/ws/b", files: [] }));
    expect(edited.reads).toBe(1);
    expect(edited.value.files.map((file) => file.path)).toEqual(["two.md"]);
    const published = await Effect.runPromise(
      notebook.commit({ path: "/ws/b", message: "more", author }),
    );
    expect(published.files.map((file) => file.path)).toEqual(["two.md"]);
  });

  it("keeps a path its scan did not find: a commit's scan caught mid-save publishes no deletion", async () => {
    const { notebook, vol, read, midSave } = await pulledCopy();
    // The person deletes one.md, and the status says so...
    vol.unlinkSync("/ws/b/one.md");
    const status = await Effect.runPromise(notebook.status({ path: "/ws/b" }));
    expect(status.changes).toEqual([{ path: "one.md", change: "deleted" }]);
    // ...puts it back, and saves it again as the commit's scan walks the copy.
    vol.writeFileSync("/ws/b/one.md", "one.md\n");
    midSave();
    const published = await Effect.runPromise(
      notebook.commit({ path: "/ws/b", message: "again", author }),
    );
    expect(read("/ws/b/one.md")).toBe(saved);
    expect(published.files).toMatchObject([{ path: "one.md", insertions: 1, deletions: 0 }]);
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    expect(read("/ws/a/one.md")).toBe(saved);
  });
  it("leaves out names a commit refuses: a case collision a status saw is still refused by the commit", async () => {
    const { notebook, vol } = await pulledCopy();
    vol.writeFileSync("/ws/b/Note.md", "upper\n");
    vol.writeFileSync("/ws/b/note.md", "lower\n");
    const past = new Date(Date.now() - 60_000);
    for (const name of ["Note.md", "note.md"]) vol.utimesSync(`/ws/b/${name}`, past, past);
    for (let round = 0; round < 2; round++) {
      const status = await Effect.runPromise(notebook.status({ path: "/ws/b" }));
      expect(status.invalid).toEqual([
        { path: "Note.md", reason: "CASE_COLLISION", ranges: [] },
        { path: "note.md", reason: "CASE_COLLISION", ranges: [] },
      ]);
    }
    const refused = await failure(notebook.commit({ path: "/ws/b", message: "both", author }));
    expect([refused.code, refused.files.map((file) => file.reason)]).toEqual([
      "INVALID_CONTENT",
      ["CASE_COLLISION", "CASE_COLLISION"],
    ]);
  });
});
