/**
 * The merge base a held file keeps (docs/working-copy.md): a file a person keeps saving
 * while the call rewrites it is left as saved, and the next call merges it. When the
 * call published that file's scanned content (a commit, merged with someone else's
 * change to the same file), the person's file descends from what was published, so the
 * next merge must take the scanned content as its base — not the older baseline, which
 * made the next call see the published lines as the person's own edits, added a second
 * time, and answer a TEXT_CONFLICT over lines nobody changed. When nothing was published
 * (a pull) the base stays the one the call merged against.
 */
import { Effect, Exit } from "effect";
import { describe, expect, it } from "vitest";
import { appendingNote } from "./memNotebook.js";

const author = { name: "test", version: "1" };

describe("a file kept changing while a call rewrites it", () => {
  it("after a commit published it, the next commit merges the later lines cleanly", async () => {
    const { notebook, vol, write, arm, appended } = appendingNote();
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    write("/ws/a/note.md", "one\ntwo\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "seed", author }));
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    write("/ws/a/note.md", "ONE\ntwo\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "a's line 1", author }));

    // b appends a line and commits; its rewrite (merging a's line 1) keeps being overtaken.
    vol.appendFileSync("/ws/b/note.md", "b's line\n");
    arm(true);
    const first = await Effect.runPromiseExit(
      notebook.commit({ path: "/ws/b", message: "b's line", author }),
    );
    arm(false);
    expect(Exit.isSuccess(first)).toBe(true);
    expect(appended()).toBeGreaterThan(1);
    const status = await Effect.runPromise(notebook.status({ path: "/ws/b" }));
    expect(status.held).toEqual(["note.md"]);
    // What b published is not listed as unpublished again: only the appended lines are.
    const diff = await Effect.runPromise(notebook.diff({ path: "/ws/b", files: [] }));
    const text = diff.files.map((file) => file.diff).join("");
    expect(text).not.toContain("+b's line");
    expect(text).toContain("+appended 1");

    const next = await Effect.runPromiseExit(
      notebook.commit({ path: "/ws/b", message: "the rest", author }),
    );
    expect(Exit.isSuccess(next), JSON.stringify(next)).toBe(true);
    const lines = ["ONE", "two", "b's line"];
    for (let n = 1; n <= appended(); n++) lines.push(`appended ${n}`);
    expect(vol.readFileSync("/ws/b/note.md", "utf8")).toBe(`${lines.join("\n")}\n`);
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    expect(vol.readFileSync("/ws/a/note.md", "utf8")).toBe(`${lines.join("\n")}\n`);
  });

  it("after a pull (nothing published), the next pull merges the person's lines with the remote change", async () => {
    const { notebook, vol, write, arm, appended } = appendingNote();
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    write("/ws/a/note.md", "one\ntwo\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "seed", author }));
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    write("/ws/a/note.md", "ONE\ntwo\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "a's line 1", author }));

    vol.appendFileSync("/ws/b/note.md", "b's line\n");
    arm(true);
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    arm(false);
    const status = await Effect.runPromise(notebook.status({ path: "/ws/b" }));
    expect(status.held).toEqual(["note.md"]);

    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    const lines = ["ONE", "two", "b's line"];
    for (let n = 1; n <= appended(); n++) lines.push(`appended ${n}`);
    expect(vol.readFileSync("/ws/b/note.md", "utf8")).toBe(`${lines.join("\n")}\n`);
  });
});
