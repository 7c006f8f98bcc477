/**
 * `restore --from GEN` where GEN is a checkpoint's generation: the generation a pull or
 * `status` reports after the commit that made the checkpoint. The notebook was in a
 * definite state there (the checkpoint holds it whole), so restoring from it brings
 * the files back as they were then, instead of refusing the generation the person just
 * saw as "not a publication". `show` and `revert` are about one publication and keep
 * refusing it.
 */
import { Effect } from "effect";
import { describe, expect, it } from "vitest";
import * as memFs from "../../src/adapters/memFileSystem.js";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import { failure, openOn } from "./memNotebook.js";

const author = { name: "test", version: "1" };

/** Copies /ws/a and /ws/b of one notebook that checkpoints after every 2 increments. */
const checkpointing = async (retainedCheckpoints: number) => {
  const { service: fs, vol } = memFs.make({ "/ws/a/.keep": "", "/ws/b/.keep": "" });
  vol.unlinkSync("/ws/a/.keep");
  vol.unlinkSync("/ws/b/.keep");
  const notebook = openOn(memoryStore.make(), fs, { checkpointPacks: 2, retainedCheckpoints });
  const commit = async (text: string) => {
    vol.writeFileSync("/ws/a/n.md", text);
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: text, author }));
  };
  await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
  /**
   * Commits until a pull of /ws/b lands on a checkpoint's generation (one no publication
   * has: the log's newest is older); that generation, and the text of n.md there.
   */
  const commitToCheckpoint = async () => {
    for (let k = 1; k <= 10; k++) {
      await commit(`text ${k}\n`);
      const { generation } = await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
      const log = await Effect.runPromise(notebook.log({ path: "/ws/b", limit: 1 }));
      if (log.publications[0]?.generation !== generation)
        return { checkpoint: generation, text: `text ${k}\n` };
    }
    throw new Error("no checkpoint after 10 commits");
  };
  return { notebook, vol, commit, commitToCheckpoint };
};

describe("restore from a checkpoint's generation", () => {
  it("writes the files as the notebook held them at that generation", async () => {
    const { notebook, vol, commit, commitToCheckpoint } = await checkpointing(1);
    const { checkpoint, text } = await commitToCheckpoint();
    await commit("four\n");
    await commit("five\n");
    await commit("six\n");
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));

    const restored = await Effect.runPromise(
      notebook.restore({ path: "/ws/b", generation: checkpoint, files: ["n.md"], force: false }),
    );
    expect(restored.files).toEqual([{ path: "n.md", change: "modified" }]);
    expect(vol.readFileSync("/ws/b/n.md", "utf8")).toBe(text);

    for (const refused of [
      await failure(notebook.show({ path: "/ws/b", generation: checkpoint, files: [] })),
      await failure(notebook.revert({ path: "/ws/b", generation: checkpoint })),
    ]) {
      expect([refused.code, refused.reason]).toEqual(["INVALID_REQUEST", "INVALID_ARGUMENT"]);
      expect(refused.message).toContain("checkpoint");
    }
  });

  it("answers GENERATION_PRUNED once that checkpoint's chain is no longer retained", async () => {
    const { notebook, commit, commitToCheckpoint } = await checkpointing(0);
    const { checkpoint } = await commitToCheckpoint();
    for (const text of ["four\n", "five\n", "six\n", "seven\n"]) await commit(text);
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    const refused = await failure(
      notebook.restore({ path: "/ws/b", generation: checkpoint, files: ["n.md"], force: false }),
    );
    expect([refused.code, refused.reason]).toEqual(["INVALID_REQUEST", "GENERATION_PRUNED"]);
  });
});

describe("a publication whose pack is the oldest chain's checkpoint", () => {
  it("show and revert say what is gone (what it changed) and that restore from it still works", async () => {
    const { notebook, commit } = await checkpointing(0);
    for (let k = 1; k <= 6; k++) await commit(`text ${k}\n`);
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    const log = await Effect.runPromise(notebook.log({ path: "/ws/b", limit: 100 }));
    const kept: number[] = [];
    for (const { generation } of log.publications) {
      const shown = await Effect.runPromiseExit(
        notebook.show({ path: "/ws/b", generation, files: [] }),
      );
      if (shown._tag === "Failure") {
        const refused = await failure(notebook.show({ path: "/ws/b", generation, files: [] }));
        expect(refused.reason).toBe("GENERATION_PRUNED");
        const restored = await Effect.runPromiseExit(
          notebook.restore({ path: "/ws/b", generation, files: ["n.md"], force: true }),
        );
        // Only where the notebook after it is still there may the message offer restore.
        expect(refused.message.includes(`quire restore --from ${generation}`)).toBe(
          restored._tag === "Success",
        );
        if (restored._tag === "Success") {
          kept.push(generation);
          const reverted = await failure(notebook.revert({ path: "/ws/b", generation }));
          expect(reverted.message).toBe(refused.message);
        }
      }
    }
    expect(kept.length).toBeGreaterThan(0);
  });
});
