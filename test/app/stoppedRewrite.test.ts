/**
 * A rewrite of the working copy stopped part way by a cause the person can fix (a full
 * disk, a directory without write permission): the answer says that the copy was
 * changed, what stopped it, where, and that a pull after the fix completes it — never
 * LOCAL_IO (whose meaning is "before the working copy was changed") and never
 * CONTACT_OPERATOR for a `chmod u+w`. And the pull after the fix completes the copy
 * exactly, also when the notebook changed meanwhile: the notes an interrupted first pull
 * wrote are the notebook's, not additions of the copy's own to conflict with.
 */
import { Effect } from "effect";
import { describe, expect, it } from "vitest";
import { FsError } from "../../src/ports/FileSystem.js";
import { failure, hookedNotebook } from "./memNotebook.js";

const author = { name: "test", version: "1" };
const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect);

describe("a rewrite stopped part way by a cause the person can fix", () => {
  it("a directory without write permission: retry after the fix, named, and the next pull completes it", async () => {
    let denied = false;
    const { notebook, write, read } = hookedNotebook((tree) => ({
      replaceFile: (path, bytes, expected, mode) =>
        denied && tree.root.startsWith("/ws/b") && `${tree.root}/${path}`.includes("/sub/")
          ? Effect.fail(
              new FsError({
                reason: "PermissionDenied",
                path: `${tree.root}/${path}`,
                message: "EACCES",
              }),
            )
          : tree.replaceFile(path, bytes, expected, mode),
    }));
    await run(notebook.pull({ path: "/ws/a" }));
    write("/ws/a/sub/x.md", "x\n");
    write("/ws/a/y.md", "y\n");
    await run(notebook.commit({ path: "/ws/a", message: "seed", author }));
    await run(notebook.pull({ path: "/ws/b" }));
    write("/ws/a/sub/x.md", "x\nmore\n");
    write("/ws/a/y.md", "y\nmore\n");
    await run(notebook.commit({ path: "/ws/a", message: "two", author }));
    denied = true;
    const failed = await failure(notebook.pull({ path: "/ws/b" }));
    expect([failed.code, failed.reason, failed.action, failed.retryable]).toEqual([
      "RECOVERY_FAILURE",
      "UNEXPECTED_FAILURE",
      "PULL_AGAIN",
      true,
    ]);
    expect(failed.message).toContain("/ws/b/sub/x.md");
    expect(failed.message).toMatch(/permission/);
    expect(failed.recovery).toEqual({
      stage: "rewrite-working-copy",
      remoteAccepted: "no",
      resynchronized: false,
    });
    denied = false;
    await run(notebook.pull({ path: "/ws/b" }));
    expect(read("/ws/b/sub/x.md")).toBe("x\nmore\n");
    expect(read("/ws/b/y.md")).toBe("y\nmore\n");
  });
});
