/**
 * A working copy's lock lives in its private state, under the private root, not in the
 * copy: a failure to take it (a read-only or full private root) must say so, or a person
 * looks for the cause in a working copy that is perfectly writable.
 */
import { Effect } from "effect";
import { describe, expect, it } from "vitest";
import * as ids from "../../src/adapters/idGenerator.js";
import * as memFs from "../../src/adapters/memFileSystem.js";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import { makeNotebook } from "../../src/app/usecases/notebookLayer.js";
import { FsError } from "../../src/ports/FileSystem.js";
import { baseOptions, failure } from "./memNotebook.js";

describe("a working copy's lock that cannot be taken", () => {
  it("is said to be in the private root", async () => {
    const { service } = memFs.make({ "/ws/a/.keep": "" });
    const fs = {
      ...service,
      lock: (path: string) =>
        Effect.fail(new FsError({ reason: "ReadOnly", path, message: "EROFS: read-only" })),
    };
    const notebook = Effect.runSync(
      makeNotebook({ store: memoryStore.make(), fs, ids: ids.make(), options: baseOptions }),
    );
    const error = await failure(notebook.pull({ path: "/ws/a" }));
    expect([error.code, error.reason, error.detail, error.retryable]).toEqual([
      "ENGINE_FAILED",
      "LOCAL_ACCESS",
      "read-only file system",
      false,
    ]);
    expect(error.message).toMatch(/private root \(--private-root\)/);
  });
});
