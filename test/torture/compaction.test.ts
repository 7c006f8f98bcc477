/**
 * Issue 5, done-when 3: with the threshold lowered to 16, 2,000 commits leave one
 * checkpoint, at most 16 increments and the retained chain, no old packs, and a cold
 * pull that downloads one checkpoint plus the tail (counted by the instrumented store).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { Effect } from "effect";
import { afterAll, describe, it } from "vitest";
import * as fileStore from "../../src/adapters/fileObjectStore.js";
import { runCompaction } from "../durability/compaction.js";

const scratch = mkdtempSync(path.join(tmpdir(), "quire-compaction-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("compaction, 2,000 commits, threshold 16", () => {
  it("in-memory store", async () => {
    await runCompaction(2000, 16);
  });

  // The same on the real file store (LIST and DELETE on disk); fewer commits because
  // every publication fsyncs.
  it("file store, 500 commits", async () => {
    const store = await Effect.runPromise(fileStore.make({ root: path.join(scratch, "store") }));
    await runCompaction(500, 16, store);
  });
});
