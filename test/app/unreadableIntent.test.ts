/**
 * A copy whose rewrite intent (workingCopy/rewriteIntent.ts) cannot be read: a read
 * failure says nothing of whether a rewrite or a commit was interrupted, so the calls that
 * recover from one fail (LOCAL_IO) and change nothing, instead of going on as if there
 * were none (a commit's landed publication then read as the copy's own edits, its staged
 * record left alive); the end of a session keeps the copy. Once it can be read, the next
 * call settles the copy as ever.
 */
import { Effect } from "effect";
import { describe, expect, it } from "vitest";
import type { FailpointStage } from "../../src/app/usecases/shared/failpoints.js";
import { FsError, type FileSystemService } from "../../src/ports/FileSystem.js";
import { openOn } from "./memNotebook.js";
import { author, commit, crashes, fails, ok, pull, world } from "../durability/harness.js";

const crashAt = (stage: FailpointStage) => ({
  failpoint: (reached: FailpointStage) => (reached === stage ? Effect.interrupt : Effect.void),
});

/** `base` whose reads of any `intent.json` fail with an I/O error. */
const intentUnreadable = (base: FileSystemService): FileSystemService => ({
  ...base,
  readFile: (path: string) =>
    path.endsWith("/intent.json")
      ? Effect.fail(new FsError({ reason: "Other", path, message: "EIO: i/o error, open" }))
      : base.readFile(path),
});

/** Copy B's commit of an edit to x.md is killed after its swap: its intent names it. */
const killedAfterSwap = async () => {
  const w = world();
  const a = w.open();
  await pull(a);
  w.write("/ws/a/x.md", "x\n");
  await commit(a);
  await pull(w.open(), "/ws/b");
  w.write("/ws/b/x.md", "x from b\n");
  await crashes(w.open(crashAt("after-cas")).commit({ path: "/ws/b", message: "b", author }));
  const unreadable = () => openOn(w.store, intentUnreadable(w.fs));
  return { w, unreadable };
};

describe("a copy whose rewrite intent cannot be read", () => {
  it("its pull fails (LOCAL_IO) and changes nothing; readable again, the pull settles it", async () => {
    const { w, unreadable } = await killedAfterSwap();
    const before = w.files("/ws/b");
    const error = await fails(unreadable().pull({ path: "/ws/b" }));
    expect(error.reason).toBe("LOCAL_IO");
    expect(w.files("/ws/b")).toEqual(before);
    await ok(w.open().pull({ path: "/ws/b" }));
    expect(w.files("/ws/b")).toEqual({ "x.md": "x from b\n" });
  });

  it("its commit fails (LOCAL_IO) and publishes nothing", async () => {
    const { w, unreadable } = await killedAfterSwap();
    w.write("/ws/b/y.md", "y\n");
    const error = await fails(unreadable().commit({ path: "/ws/b", message: "m", author }));
    expect(error.reason).toBe("LOCAL_IO");
    await pull(w.open(), "/ws/c");
    expect(w.files("/ws/c")).toEqual({ "x.md": "x from b\n" });
    // Readable again: the commit settles the copy first and publishes y.md alone.
    await ok(w.open().commit({ path: "/ws/b", message: "m", author }));
    await ok(w.open().pull({ path: "/ws/c" }));
    expect(w.files("/ws/c")).toEqual({ "x.md": "x from b\n", "y.md": "y\n" });
  });

  it("its status fails (LOCAL_IO)", async () => {
    const { unreadable } = await killedAfterSwap();
    const error = await fails(unreadable().status({ path: "/ws/b" }));
    expect(error.reason).toBe("LOCAL_IO");
  });

  it("is kept at the end of its session, with an undo nobody published", async () => {
    const { w, unreadable } = await killedAfterSwap();
    // The person undid the published edit: the copy now equals its old baseline, which
    // read without the intent looks like nothing of the person's.
    w.write("/ws/b/x.md", "x\n");
    expect(await Effect.runPromise(unreadable().discardIfPublished("/ws/b"))).toBe(false);
    expect(w.files("/ws/b")).toEqual({ "x.md": "x\n" });
  });
});
