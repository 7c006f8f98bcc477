import { Effect } from "effect";
import { describe, expect, it } from "vitest";
import * as ids from "../../src/adapters/idGenerator.js";
import { makeNotebook } from "../../src/app/usecases/notebookLayer.js";
import { author, baseOptions, commit, manifestOf, pull, world } from "./harness.js";

/**
 * A Notebook standing for another process on the same store: under another store
 * identity, what it writes is not what this process wrote (nor in its recent packs).
 */
const anotherProcess = (w: ReturnType<typeof world>) =>
  Effect.runSync(
    makeNotebook({
      store: { ...w.store, identity: `${w.store.identity}#another-process` },
      fs: w.fs,
      ids: ids.make(),
      options: baseOptions,
    }),
  );

describe("a commit starts from what this process last wrote to current", () => {
  it("a writer alone does not read current back before its next commit", async () => {
    const w = world();
    const nb = w.open();
    await pull(nb);
    w.write("/ws/a/x.md", "1\n");
    await commit(nb);
    w.faults.resetRequests();
    w.write("/ws/a/x.md", "2\n");
    const second = await commit(nb);
    expect(second.generation).toBe(2);
    expect(w.faults.count("get", "current")).toBe(0);
    expect(w.faults.count("put", "current")).toBe(1);
  });

  it("another process's publication meanwhile costs one swap: merged, published, and current is read first for a while", async () => {
    const w = world();
    const nb = w.open();
    await pull(nb);
    w.write("/ws/a/x.md", "1\n");
    await commit(nb);
    const elsewhere = anotherProcess(w);
    await pull(elsewhere, "/ws/b");
    w.write("/ws/b/y.md", "y\n");
    expect((await commit(elsewhere, "/ws/b")).generation).toBe(2);

    w.faults.resetRequests();
    w.write("/ws/a/x.md", "2\n");
    const merged = await commit(nb);
    expect(merged.generation).toBe(3);
    expect(merged.files).toEqual([{ path: "x.md", insertions: 1, deletions: 1 }]);
    expect(w.read("/ws/a/y.md")).toBe("y\n");
    expect(w.faults.count("put", "current")).toBe(2); // the swap from gen 1 lost at once
    expect(w.faults.count("get", "current")).toBe(1);
    expect((await manifestOf(w.store))?.generation).toBe(3);

    // Someone else publishes on this store: the next commit reads current first.
    w.faults.resetRequests();
    w.write("/ws/a/x.md", "3\n");
    await commit(nb);
    expect(w.faults.count("get", "current")).toBe(1);
    expect(w.faults.count("put", "current")).toBe(1);
  });

  it("a commit takes the packs the process's other copies just published from memory; a pull downloads them", async () => {
    const w = world();
    const a = w.open();
    const b = w.open();
    await pull(a);
    await pull(b, "/ws/b");
    w.write("/ws/a/x.md", "from a\n");
    await commit(a);
    w.faults.resetRequests();
    w.write("/ws/b/y.md", "from b\n");
    expect((await commit(b, "/ws/b")).generation).toBe(2);
    expect(w.faults.count("get", "packs/")).toBe(0);
    expect(w.read("/ws/b/x.md")).toBe("from a\n");
    // A pull reads every pack it lacks from the store, so damage there is still seen.
    w.faults.resetRequests();
    await pull(a);
    expect(w.faults.count("get", "packs/")).toBe(1);
    expect(w.read("/ws/a/y.md")).toBe("from b\n");
  });

  it("a conflict or a no-op is concluded from current itself, never from what the process last wrote", async () => {
    const w = world();
    const a = w.open();
    const b = w.open();
    await pull(a);
    w.write("/ws/a/x.md", "base\n");
    await commit(a);
    await pull(b, "/ws/b");
    w.write("/ws/a/x.md", "from a\n");
    await commit(a); // this process last wrote generation 2
    const elsewhere = anotherProcess(w);
    await pull(elsewhere, "/ws/e");
    w.write("/ws/e/x.md", "from elsewhere\n");
    expect((await commit(elsewhere, "/ws/e")).generation).toBe(3);

    // b's edit conflicts with generation 2 and with generation 3: the markers show 3.
    w.write("/ws/b/x.md", "from b\n");
    const conflict = await Effect.runPromise(
      Effect.flip(b.commit({ path: "/ws/b", message: "m", author })),
    );
    expect(conflict.code).toBe("CONTENT_CONFLICT");
    expect(w.read("/ws/b/x.md")).toContain("=======\nfrom elsewhere\n>>>>>>> remote\n");

    // A no-op commit reports the generation current has, not the one last written here.
    expect((await commit(a)).generation).toBe(3);
    expect(w.read("/ws/a/x.md")).toBe("from elsewhere\n");
  });
});
