/**
 * A local failure that no `detail` classifies is answered "a local file operation failed
 * while …" without the cause (it may name private paths); errors.md promises that the log
 * record with the call's diagnosticId holds it. The use case logs it as a warning.
 */
import { Effect, HashMap, Logger } from "effect";
import { describe, expect, it } from "vitest";
import * as ids from "../../src/adapters/idGenerator.js";
import * as memFs from "../../src/adapters/memFileSystem.js";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import { makeNotebook } from "../../src/app/usecases/notebookLayer.js";
import { FsError } from "../../src/ports/FileSystem.js";
import { baseOptions, failure } from "./memNotebook.js";

describe("an unclassified local failure", () => {
  it("is answered without its cause, and its cause is logged", async () => {
    const { service } = memFs.make({ "/ws/a/.keep": "" });
    // The workspace root cannot be opened, for a reason no detail names (EIO, say).
    const fs = {
      ...service,
      openTree: (root: string) =>
        Effect.fail(new FsError({ reason: "Other", path: root, message: "EIO: i/o error, open" })),
    };
    const notebook = Effect.runSync(
      makeNotebook({ store: memoryStore.make(), fs, ids: ids.make(), options: baseOptions }),
    );
    const records: Array<{ message: unknown; cause: unknown }> = [];
    const capture = Logger.make(({ message, annotations }) => {
      records.push({ message, cause: HashMap.get(annotations, "cause") });
    });
    const error = await failure(
      notebook
        .pull({ path: "/ws/a" })
        .pipe(Effect.provide(Logger.replace(Logger.defaultLogger, capture))),
    );
    expect([error.code, error.reason, error.detail]).toEqual([
      "ENGINE_FAILED",
      "LOCAL_IO",
      undefined,
    ]);
    expect(error.message).not.toContain("EIO");
    const logged = records.find((record) => JSON.stringify(record.message).includes("local file"));
    expect(JSON.stringify(logged?.cause)).toContain("EIO: i/o error, open");
  });
});
