/**
 * `quire restore` of several files on a disk that fills part way: some files are
 * written, the others not. The answer must say which ones it already wrote (`changed`,
 * and the message), not only that a local operation failed — LOCAL_IO alone reads as
 * "before the working copy was changed". Running the same restore again once there is
 * room finishes it.
 */
import { Effect } from "effect";
import { describe, expect, it } from "vitest";
import { FsError } from "../../src/ports/FileSystem.js";
import { failure, hookedNotebook } from "./memNotebook.js";

const author = { name: "test", version: "1" };
const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect);

describe("a restore of several files stopped by a full disk", () => {
  it("lists the files it already wrote, and the same restore run again finishes it", async () => {
    let room = Number.POSITIVE_INFINITY;
    const { notebook, write, read, vol } = hookedNotebook((tree) => ({
      replaceFile: (path, bytes, expected, mode) =>
        room <= 0
          ? Effect.fail(
              new FsError({ reason: "NoSpace", path: `${tree.root}/${path}`, message: "ENOSPC" }),
            )
          : tree
              .replaceFile(path, bytes, expected, mode)
              .pipe(Effect.tap(() => Effect.sync(() => room--))),
    }));
    await run(notebook.pull({ path: "/ws/a" }));
    const names = Array.from({ length: 6 }, (_, i) => `n${i}.md`);
    for (const name of names) write(`/ws/a/${name}`, `first ${name}\n`);
    await run(notebook.commit({ path: "/ws/a", message: "one", author }));
    for (const name of names) write(`/ws/a/${name}`, `second ${name}\n`);
    await run(notebook.commit({ path: "/ws/a", message: "two", author }));

    room = 2;
    const failed = await failure(
      notebook.restore({ path: "/ws/a", generation: 1, files: names, force: false }),
    );
    const restored = names.filter((name) => read(`/ws/a/${name}`) === `first ${name}\n`);
    expect(restored.length).toBe(2);
    expect(failed.code).toBe("ENGINE_FAILED");
    expect(failed.detail).toBe("disk full");
    expect(failed.changed).toEqual(restored.map((path) => ({ path, change: "modified" })));
    for (const name of restored) expect(failed.message).toContain(name);

    room = Number.POSITIVE_INFINITY;
    await run(notebook.restore({ path: "/ws/a", generation: 1, files: names, force: false }));
    for (const name of names) expect(read(`/ws/a/${name}`)).toBe(`first ${name}\n`);
    expect(vol.readdirSync("/ws/a").length).toBe(names.length);
  });
});
