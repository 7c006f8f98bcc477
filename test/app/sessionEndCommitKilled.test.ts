/**
 * The end of a session copy whose process was killed during a commit, after `current`
 * accepted the publication and before the copy recorded it (workingCopy/sessionEnd.ts):
 * its notes are all published, but its private state still names the commit as
 * unsettled. Judged without the store, such a copy once stayed in the temporary
 * directory forever; with the store it was published to, its fate is learnt as the
 * copy's next commit would learn it, and the copy goes when that loses nothing.
 */
import { Effect, Either } from "effect";
import { describe, expect, it } from "vitest";
import type { FailpointStage } from "../../src/app/usecases/shared/failpoints.js";
import { FsError } from "../../src/ports/FileSystem.js";
import { copyDirectory } from "../../src/app/usecases/workingCopy/privateState.js";
import { commit, crashes, pull, world } from "../durability/harness.js";

const crashAt = (stage: FailpointStage) => ({
  failpoint: (reached: FailpointStage) => (reached === stage ? Effect.interrupt : Effect.void),
});

/**
 * A publishes x and y; B pulls them, edits x, adds n (and runs `alsoInB`), and its
 * commit is killed at `stage`.
 */
const killedCommit = async (
  stage: FailpointStage,
  alsoInB: (
    w: ReturnType<typeof world>,
    a: ReturnType<ReturnType<typeof world>["open"]>,
  ) => Promise<void> = async () => {},
) => {
  const w = world();
  const a = w.open();
  await pull(a);
  w.write("/ws/a/x.md", "x\n");
  w.write("/ws/a/y.md", "y\n");
  await commit(a);
  await pull(w.open(), "/ws/b");
  w.write("/ws/b/x.md", "x, B's\n");
  w.write("/ws/b/n.md", "new\n");
  await alsoInB(w, a);
  await crashes(
    w
      .open(crashAt(stage))
      .commit({ path: "/ws/b", message: "b", author: { name: "b", version: "1" } }),
  );
  return { w, a, copyDir: copyDirectory("/private", "/ws/b", w.store.identity) };
};

describe("a session copy whose commit was killed after `current` accepted it", () => {
  it("is removed: every note in it is published", async () => {
    const { w, a, copyDir } = await killedCommit("after-cas");
    expect(await Effect.runPromise(w.open().discardIfPublished("/ws/b"))).toBe(true);
    expect(w.exists("/ws/b")).toBe(false);
    expect(w.exists(copyDir)).toBe(false);
    // Nothing was lost: the notebook has B's notes.
    await pull(a);
    expect(w.files("/ws/a")).toEqual({ "x.md": "x, B's\n", "y.md": "y\n", "n.md": "new\n" });
  });

  it("is removed when others published after it, the copy not having their notes yet", async () => {
    const { w, a } = await killedCommit("after-cas");
    await pull(a);
    w.write("/ws/a/z.md", "z\n");
    await commit(a);
    expect(await Effect.runPromise(w.open().discardIfPublished("/ws/b"))).toBe(true);
    expect(w.exists("/ws/b")).toBe(false);
  });

  it("is kept when a note was edited, added or deleted there after the kill", async () => {
    for (const change of [
      (w: ReturnType<typeof world>) => w.write("/ws/b/x.md", "x, edited later\n"),
      (w: ReturnType<typeof world>) => w.write("/ws/b/later.md", "later\n"),
      (w: ReturnType<typeof world>) => w.remove("/ws/b/y.md"),
      // A note the commit published, deleted since: a deletion nobody published.
      (w: ReturnType<typeof world>) => w.remove("/ws/b/n.md"),
      // Set back to the text it had before the commit: an undo nobody published.
      (w: ReturnType<typeof world>) => w.write("/ws/b/x.md", "x\n"),
    ]) {
      const { w, copyDir } = await killedCommit("after-cas");
      change(w);
      expect(await Effect.runPromise(w.open().discardIfPublished("/ws/b"))).toBe(false);
      expect(w.exists(copyDir)).toBe(true);
    }
  });

  it("is kept when a note the commit deleted was put back since", async () => {
    const { w, copyDir } = await killedCommit("after-cas", async (w) => w.remove("/ws/b/y.md"));
    w.write("/ws/b/y.md", "y\n");
    expect(await Effect.runPromise(w.open().discardIfPublished("/ws/b"))).toBe(false);
    expect(w.exists(copyDir)).toBe(true);
  });

  it("is removed when its commit merged in notes of others it had not written yet", async () => {
    const { w, a } = await killedCommit("after-cas", async (w, a) => {
      w.write("/ws/a/z.md", "z\n");
      w.write("/ws/a/y.md", "y, A's\n");
      await commit(a);
    });
    expect(w.files("/ws/b")).toEqual({ "x.md": "x, B's\n", "y.md": "y\n", "n.md": "new\n" });
    expect(await Effect.runPromise(w.open().discardIfPublished("/ws/b"))).toBe(true);
    expect(w.exists("/ws/b")).toBe(false);
    await pull(a);
    expect(w.files("/ws/a")).toEqual({
      "x.md": "x, B's\n",
      "y.md": "y, A's\n",
      "z.md": "z\n",
      "n.md": "new\n",
    });
  });

  it("is removed by a later judgement when its removal was stopped part way", async () => {
    const { w, copyDir } = await killedCommit("after-cas");
    // The removal stops at x.md (B's commit's text, not the baseline's): n.md went.
    const stopping = w.openHooked((tree) => ({
      removeFile: (path, expected) =>
        path !== "x.md"
          ? tree.removeFile(path, expected)
          : Effect.fail(new FsError({ reason: "Other", path, message: "EACCES" })),
    }));
    const stopped = await Effect.runPromise(Effect.either(stopping.discardIfPublished("/ws/b")));
    expect(Either.isLeft(stopped)).toBe(true);
    expect(w.files("/ws/b")).toEqual({ "x.md": "x, B's\n", "y.md": "y\n" });
    expect(await Effect.runPromise(w.open().discardIfPublished("/ws/b"))).toBe(true);
    expect(w.exists("/ws/b")).toBe(false);
    expect(w.exists(copyDir)).toBe(false);
  });

  it("is kept, untouched, when the store cannot say whether the commit landed", async () => {
    const { w, copyDir } = await killedCommit("after-cas");
    w.faults.inject({ fault: { _tag: "FailBefore" }, ops: ["get"], times: Infinity });
    expect(await Effect.runPromise(w.open().discardIfPublished("/ws/b"))).toBe(false);
    expect(w.files("/ws/b")).toEqual({ "x.md": "x, B's\n", "y.md": "y\n", "n.md": "new\n" });
    expect(w.exists(copyDir)).toBe(true);
  });
});

describe("a session copy whose commit was killed before `current` accepted it", () => {
  it("is kept, and its next commit publishes its notes", async () => {
    const { w, a, copyDir } = await killedCommit("after-pack-upload");
    expect(await Effect.runPromise(w.open().discardIfPublished("/ws/b"))).toBe(false);
    expect(w.exists(copyDir)).toBe(true);
    await commit(w.open(), "/ws/b");
    await pull(a);
    expect(w.files("/ws/a")).toEqual({ "x.md": "x, B's\n", "y.md": "y\n", "n.md": "new\n" });
  });
});
