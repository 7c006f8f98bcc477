import { describe, it } from "vitest";
import { runCompaction } from "./compaction.js";

describe("compaction over many commits (short run; the 2,000-commit run is in test/torture)", () => {
  it("120 commits with threshold 16: one checkpoint, a short tail, old packs gone, cold pull = checkpoint + tail", async () => {
    await runCompaction(120, 16);
  });
});
