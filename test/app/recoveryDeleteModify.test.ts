/**
 * A pull whose rewrite failed (a full disk) leaves the copy to be resynchronised by the
 * next call (docs/durability.md, "Crash recovery"), and that call's rewrite may fail too.
 * A note the person deleted meanwhile,
 * which the notebook changed, is a deletion of a note they never saw changed: the next
 * call reports it as DELETE_MODIFY and keeps the notebook's version, as a pull without
 * the failure does — never taken as a plain deletion that the next commit publishes over
 * someone's change.
 */
import { Effect } from "effect";
import { describe, expect, it } from "vitest";
import { FsError } from "../../src/ports/FileSystem.js";
import { failure, hookedNotebook } from "./memNotebook.js";

const author = { name: "test", version: "1" };

describe("a note deleted after a pull's rewrite failed, that the notebook changed", () => {
  it("is a DELETE_MODIFY conflict of the next pull, the notebook's version kept", async () => {
    let diskFull = false;
    const { notebook, write, read, vol } = hookedNotebook((tree) => ({
      replaceFile: (path, bytes, expected, mode) =>
        diskFull && path.endsWith("big.md")
          ? Effect.fail(new FsError({ reason: "NoSpace", path, message: "ENOSPC" }))
          : tree.replaceFile(path, bytes, expected, mode),
    }));
    const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect);
    await run(notebook.pull({ path: "/ws/a" }));
    write("/ws/a/m/x.md", "one\n");
    await run(notebook.commit({ path: "/ws/a", message: "seed", author }));
    await run(notebook.pull({ path: "/ws/b" }));
    write("/ws/b/m/x.md", "one\nlocal edit\n");
    write("/ws/a/m/x.md", "one\ntwo\n");
    write("/ws/a/m/big.md", "big\n");
    await run(notebook.commit({ path: "/ws/a", message: "two", author }));
    diskFull = true;
    const failed = await failure(notebook.pull({ path: "/ws/b" }));
    expect(failed.code).toBe("RECOVERY_FAILURE");
    // The recovery rolls the note forward in its merge but fails before writing it: the
    // note on disk still lacks the notebook's change.
    const again = await failure(notebook.pull({ path: "/ws/b" }));
    expect(again.code).toBe("RECOVERY_FAILURE");
    diskFull = false;
    vol.unlinkSync("/ws/b/m/x.md");
    const next = await failure(notebook.pull({ path: "/ws/b" }));
    expect([next.code, next.files?.map((f) => [f.path, f.reason])]).toEqual([
      "CONTENT_CONFLICT",
      [["m/x.md", "DELETE_MODIFY"]],
    ]);
    expect(read("/ws/b/m/x.md")).toBe("one\ntwo\n");
  });
});
