/**
 * What `show`, `restore` and `revert` read of a publication's packs (docs/history.md,
 * SPEC §7 "Readers"): a pack that `current` still names but the store no longer has is
 * damage, STORAGE_INTEGRITY/PACK_MISSING, never GENERATION_PRUNED (which tells the
 * user the content aged out by retention and hides the loss); a pack that a cleanup
 * removed after the call read `current` is taken from the manifest read again.
 */
import { Effect, Logger, LogLevel, Option } from "effect";
import { describe, expect, it } from "vitest";
import * as memFs from "../../src/adapters/memFileSystem.js";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import type { ObjectStoreService } from "../../src/ports/ObjectStore.js";
import { failure, memNotebook, openOn } from "./memNotebook.js";

const author = { name: "test", version: "1" };
const quiet = <A, E>(effect: Effect.Effect<A, E>) =>
  effect.pipe(Logger.withMinimumLogLevel(LogLevel.None));

/**
 * Generation 1 (`x.md` one) and 2 (`x.md` two) published from /ws/a; /ws/b pulled at
 * generation 1 only, so the increment of generation 2 is not in its cache.
 */
const twoGenerations = async (store: ObjectStoreService = memoryStore.make()) => {
  const world = memNotebook(store);
  const { notebook, write } = world;
  const commit = (message: string) =>
    Effect.runPromise(notebook.commit({ path: "/ws/a", message, author }));
  await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
  write("/ws/a/x.md", "one\n");
  await commit("one");
  await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
  write("/ws/a/x.md", "two\n");
  await commit("two");
  const increments = await Effect.runPromise(store.list("packs/increments/"));
  const second = increments.find((info) => info.key.startsWith("packs/increments/2-"));
  if (second === undefined) throw new Error("no increment of generation 2");
  return { ...world, store, second: second.key };
};

describe("a publication's pack missing while `current` names it", () => {
  it("show answers STORAGE_INTEGRITY/PACK_MISSING, not GENERATION_PRUNED", async () => {
    const { notebook, store, second } = await twoGenerations();
    await Effect.runPromise(store.delete(second));
    const error = await failure(quiet(notebook.show({ path: "/ws/b", generation: 2, files: [] })));
    expect([error.code, error.reason]).toEqual(["STORAGE_INTEGRITY", "PACK_MISSING"]);
  });

  it("restore answers the same, and writes nothing", async () => {
    const { notebook, store, second, read } = await twoGenerations();
    await Effect.runPromise(store.delete(second));
    const error = await failure(
      quiet(notebook.restore({ path: "/ws/b", generation: 2, files: ["x.md"], force: true })),
    );
    expect([error.code, error.reason]).toEqual(["STORAGE_INTEGRITY", "PACK_MISSING"]);
    expect(read("/ws/b/x.md")).toBe("one\n");
  });

  it("a pack a cleanup removed after the call read `current`: read again, the generation is pruned by now", async () => {
    // A checkpoint after every second increment, no older chain retained: commits made
    // while b's show fetches generation 2's pack absorb that pack, and cleanup deletes it.
    const inner = memoryStore.make();
    let meanwhile: (() => Promise<void>) | undefined;
    const store: ObjectStoreService = {
      ...inner,
      get: (key) => {
        const run = key.startsWith("packs/increments/2-") ? meanwhile : undefined;
        if (run === undefined) return inner.get(key);
        meanwhile = undefined;
        return Effect.promise(run).pipe(Effect.zipRight(inner.get(key)));
      },
    };
    const { service: fs, vol } = memFs.make({ "/ws/a/.keep": "" });
    vol.unlinkSync("/ws/a/.keep");
    const notebook = openOn(store, fs, { checkpointPacks: 1, retainedCheckpoints: 0 });
    const commit = (text: string) => {
      vol.writeFileSync("/ws/a/x.md", text);
      return Effect.runPromise(notebook.commit({ path: "/ws/a", message: text, author }));
    };
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    await commit("one\n");
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    await commit("two\n");
    const second = (await Effect.runPromise(inner.list("packs/increments/"))).find((info) =>
      info.key.startsWith("packs/increments/2-"),
    );
    if (second === undefined) throw new Error("no increment of generation 2");
    meanwhile = async () => {
      for (let i = 0; i < 50; i++) {
        if (Option.isNone(await Effect.runPromise(inner.get(second.key)))) return;
        await commit(`edit ${i}\n`);
      }
      throw new Error("generation 2's pack was never removed");
    };
    const error = await failure(quiet(notebook.show({ path: "/ws/b", generation: 2, files: [] })));
    expect(meanwhile).toBeUndefined();
    expect([error.code, error.reason]).toEqual(["INVALID_REQUEST", "GENERATION_PRUNED"]);
  });
});
