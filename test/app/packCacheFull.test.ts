/**
 * A commit whose pack cannot be cached in the private state (a full private root) stops
 * before the swap: nothing is published, and the answer must not say "the published
 * pack" (a person would think the commit landed) and must say where the disk is full.
 */
import { Effect } from "effect";
import { describe, expect, it } from "vitest";
import * as memFs from "../../src/adapters/memFileSystem.js";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import { FsError } from "../../src/ports/FileSystem.js";
import { failure, openOn } from "./memNotebook.js";

const author = { name: "test", version: "1" };

describe("a commit whose pack cannot be cached", () => {
  it("says nothing was published, and that the private root is full", async () => {
    const store = memoryStore.make();
    const { service, vol } = memFs.make({ "/ws/a/x.md": "x\n" });
    let full = false;
    const fs = {
      ...service,
      writeFileAtomic: (
        ...args: Parameters<typeof service.writeFileAtomic>
      ): ReturnType<typeof service.writeFileAtomic> =>
        full && args[0].endsWith(".pack")
          ? Effect.fail(new FsError({ reason: "NoSpace", path: args[0], message: "ENOSPC" }))
          : service.writeFileAtomic(...args),
    };
    const notebook = openOn(store, fs);
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    vol.writeFileSync("/ws/a/y.md", "y\n");
    full = true;
    const error = await failure(notebook.commit({ path: "/ws/a", message: "y", author }));
    expect([error.code, error.reason, error.detail]).toEqual([
      "ENGINE_FAILED",
      "LOCAL_IO",
      "disk full",
    ]);
    expect(error.message).not.toMatch(/published pack/);
    expect(error.message).toMatch(/nothing was published/i);
    expect(error.message).toMatch(/private root \(--private-root\)/);
    full = false;
    // The failed commit took no generation: the next one is the first.
    const done = await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "y", author }));
    expect(done.generation).toBe(1);
  });
});
