/**
 * `status`, `restore`, `revert`, `log` and `show` on a copy whose store went back (restored from an
 * older backup, or replaced by another notebook): `current` no longer continues the
 * history the copy has seen. Pull and commit refuse that (STORAGE_INTEGRITY/
 * MANIFEST_INVALID, docs/storage.md "Readers"); so do these, rather than answering
 * "up to date with the notebook", or undoing or restoring a publication of a history
 * the copy is not on ("undone already" for a revert that did nothing).
 */
import { Effect, Logger, LogLevel, Option } from "effect";
import { describe, expect, it } from "vitest";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import type { ObjectStoreService, StoredObject } from "../../src/ports/ObjectStore.js";
import { failure, memNotebook } from "./memNotebook.js";

const author = { name: "test", version: "1" };
const quiet = <A, E>(effect: Effect.Effect<A, E>) =>
  effect.pipe(Logger.withMinimumLogLevel(LogLevel.None));

/**
 * /ws/a at generation 3 (x.md one, two, three); then `current` answers as it was at
 * generation 1, or — `replaced` — as another notebook's generation 3.
 */
const rolledBack = async (replaced: boolean) => {
  const inner = memoryStore.make();
  let served: Option.Option<StoredObject> | undefined;
  const store: ObjectStoreService = {
    ...inner,
    get: (key) =>
      key === "current" && served !== undefined ? Effect.succeed(served) : inner.get(key),
  };
  const world = memNotebook(store);
  const { notebook, write } = world;
  const commit = (text: string) => {
    write("/ws/a/x.md", text);
    return Effect.runPromise(notebook.commit({ path: "/ws/a", message: text, author }));
  };
  await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
  await commit("one\n");
  const first = await Effect.runPromise(inner.get("current"));
  await commit("two\n");
  await commit("three\n");
  if (!replaced) served = first;
  else {
    // Another notebook, three publications of its own, served by the same store.
    const other = memNotebook();
    await Effect.runPromise(other.notebook.pull({ path: "/ws/a" }));
    for (const text of ["x\n", "y\n", "z\n"]) {
      other.write("/ws/a/y.md", text);
      await Effect.runPromise(other.notebook.commit({ path: "/ws/a", message: text, author }));
    }
    const theirs = await Effect.runPromise(other.store.get("current"));
    // Its packs too, so that only the history differs.
    for (const info of await Effect.runPromise(other.store.list("packs/"))) {
      const pack = await Effect.runPromise(other.store.get(info.key));
      if (Option.isSome(pack))
        await Effect.runPromise(inner.put(info.key, pack.value.body, { _tag: "IfNoneMatch" }));
    }
    served = theirs;
  }
  return world;
};

/**
 * /ws/a at generation 3 (x.md one, two, three); then the store is restored from a backup
 * taken at generation 1, and another copy publishes three times on it: `current` is at
 * generation 4, ahead of the copy, but its generations 2 and 3 are other publications.
 */
const restoredThenAhead = async () => {
  const inner = memoryStore.make();
  // Which store answers reads: the copy's own until the restore.
  const served: { store: ObjectStoreService } = { store: inner };
  const store: ObjectStoreService = { ...inner, get: (key) => served.store.get(key) };
  const world = memNotebook(store);
  const { notebook, write } = world;
  const commit = (text: string) => {
    write("/ws/a/x.md", text);
    return Effect.runPromise(notebook.commit({ path: "/ws/a", message: text, author }));
  };
  await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
  await commit("one\n");
  const backup = memoryStore.make();
  for (const info of await Effect.runPromise(inner.list(""))) {
    const object = await Effect.runPromise(inner.get(info.key));
    if (Option.isSome(object))
      await Effect.runPromise(backup.put(info.key, object.value.body, { _tag: "IfNoneMatch" }));
  }
  await commit("two\n");
  await commit("three\n");
  const other = memNotebook(backup);
  await Effect.runPromise(other.notebook.pull({ path: "/ws/b" }));
  for (const text of ["p\n", "q\n", "r\n"]) {
    other.write("/ws/b/y.md", text);
    await Effect.runPromise(other.notebook.commit({ path: "/ws/b", message: text, author }));
  }
  served.store = backup;
  return world;
};

describe("a store restored from a backup that others published on since", () => {
  it("pull and status answer MANIFEST_INVALID instead of applying the new generations onto the copy", async () => {
    const { notebook, read } = await restoredThenAhead();
    const pulled = await failure(quiet(notebook.pull({ path: "/ws/a" })));
    expect([pulled.code, pulled.reason]).toEqual(["STORAGE_INTEGRITY", "MANIFEST_INVALID"]);
    const status = await failure(quiet(notebook.status({ path: "/ws/a" })));
    expect([status.code, status.reason]).toEqual(["STORAGE_INTEGRITY", "MANIFEST_INVALID"]);
    expect(read("/ws/a/x.md")).toBe("three\n");
  });
});

describe("a store that went back behind the copy", () => {
  for (const replaced of [false, true]) {
    const what = replaced ? "replaced by another notebook" : "rolled back";
    it(`${what}: status, restore, revert, log and show answer MANIFEST_INVALID, as pull does`, async () => {
      const { notebook, read } = await rolledBack(replaced);
      const pulled = await failure(quiet(notebook.pull({ path: "/ws/a" })));
      expect([pulled.code, pulled.reason]).toEqual(["STORAGE_INTEGRITY", "MANIFEST_INVALID"]);
      const status = await failure(quiet(notebook.status({ path: "/ws/a" })));
      expect([status.code, status.reason]).toEqual(["STORAGE_INTEGRITY", "MANIFEST_INVALID"]);
      const reverted = await failure(quiet(notebook.revert({ path: "/ws/a", generation: 1 })));
      expect([reverted.code, reverted.reason]).toEqual(["STORAGE_INTEGRITY", "MANIFEST_INVALID"]);
      const restored = await failure(
        quiet(notebook.restore({ path: "/ws/a", generation: 1, files: ["x.md"], force: true })),
      );
      expect([restored.code, restored.reason]).toEqual(["STORAGE_INTEGRITY", "MANIFEST_INVALID"]);
      const logged = await failure(quiet(notebook.log({ path: "/ws/a", limit: 10 })));
      expect([logged.code, logged.reason]).toEqual(["STORAGE_INTEGRITY", "MANIFEST_INVALID"]);
      for (const generation of [1, 3]) {
        const shown = await failure(quiet(notebook.show({ path: "/ws/a", generation, files: [] })));
        expect([shown.code, shown.reason]).toEqual(["STORAGE_INTEGRITY", "MANIFEST_INVALID"]);
      }
      expect(read("/ws/a/x.md")).toBe("three\n");
    });
  }
});
