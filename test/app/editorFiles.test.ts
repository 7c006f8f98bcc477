/**
 * Editors' and desktops' working files in a working copy (domain/editorFiles.ts,
 * docs/working-copy.md): a vim swap file (U+0000), an emacs lock (a symlink) and
 * `.DS_Store` (binary) beside a note the person has open are not notes. A commit
 * publishes the note and skips them, instead of refusing every commit while the person
 * keeps the note open; the other copies never see them. A text file is scanned whatever
 * its name, and a path the notebook already holds is a note whatever its name.
 */
import { Effect } from "effect";
import { describe, expect, it } from "vitest";
import * as memFs from "../../src/adapters/memFileSystem.js";
import { renderStatus } from "../../src/domain/copyStatus.js";
import { makeBlobSource } from "../../src/app/usecases/workingCopy/blobs.js";
import { surveyWorkingCopy } from "../../src/app/usecases/workingCopy/workingCopy.js";
import { memNotebook } from "./memNotebook.js";

const author = { name: "test", version: "1" };

describe("editor working files beside an open note", () => {
  it("are skipped by commit, pull and status; the note itself is published", async () => {
    const { notebook, vol, read, write } = memNotebook();
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    write("/ws/a/d/n.md", "one\n");
    write("/ws/a/d/.n.md.swp", "b0VIM 9.0\u0000\u0000\u0000");
    vol.symlinkSync("person@host.123:1700000000", "/ws/a/d/.#n.md");
    write("/ws/a/.DS_Store", "Bud1\u0000\u0000");
    // A text file is never skipped, whatever its name: nothing a commit could publish
    // goes unseen (a note may be called `ideas~`).
    write("/ws/a/d/ideas~", "a note\n");
    const committed = await Effect.runPromise(
      notebook.commit({ path: "/ws/a", message: "m", author }),
    );
    expect(committed.files.map((f) => f.path)).toEqual(["d/ideas~", "d/n.md"]);
    const status = await Effect.runPromise(notebook.status({ path: "/ws/a" }));
    expect([status.changes, status.invalid]).toEqual([[], []]);
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    expect(vol.readdirSync("/ws/b/d").sort()).toEqual(["ideas~", "n.md"]);
    expect(read("/ws/b/d/n.md")).toBe("one\n");
    // Untouched: they are the editor's.
    expect(read("/ws/a/d/.n.md.swp")).toBe("b0VIM 9.0\u0000\u0000\u0000");
    expect(vol.readlinkSync("/ws/a/d/.#n.md")).toBe("person@host.123:1700000000");
  });

  it("at a path the notebook holds, the file is scanned as a note (never read as deleted), and refused if it is no text", async () => {
    const { service } = memFs.make({
      "/ws/c/.notes.swp": "a note\n",
      "/ws/c/.x.md.swp": "\u0000",
    });
    const survey = await Effect.runPromise(
      Effect.scoped(
        Effect.flatMap(service.openTree("/ws/c"), (tree) =>
          surveyWorkingCopy(
            tree,
            new Map(),
            0,
            makeBlobSource(service, "/private/c"),
            new Set([".notes.swp", ".x.md.swp"]),
          ),
        ),
      ),
    );
    expect([...survey.files.keys()]).toEqual([".notes.swp"]);
    expect(survey.issues).toEqual([{ path: ".x.md.swp", reason: "CONTAINS_NUL", ranges: [] }]);
  });
});

describe("a note the notebook gains where an editor's binary file stands", () => {
  it("is held, and a commit does not report it as merged into the working copy", async () => {
    const { notebook, read, write } = memNotebook();
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    write("/ws/a/Thumbs.db/n.md", "a note\n");
    write("/ws/a/x.md", "x\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "m", author }));
    write("/ws/b/Thumbs.db", "\u0000binary");
    // Nothing to publish: the commit only settles the copy on the notebook.
    const idle = await Effect.runPromise(notebook.commit({ path: "/ws/b", message: "m", author }));
    expect(read("/ws/b/Thumbs.db")).toBe("\u0000binary");
    expect(idle.incoming?.map((c) => c.path)).toEqual(["x.md"]);
    // A commit that publishes: the held note is still not in the copy, nor reported so.
    write("/ws/b/y.md", "y\n");
    const published = await Effect.runPromise(
      notebook.commit({ path: "/ws/b", message: "m", author }),
    );
    expect(published.files.map((f) => f.path)).toEqual(["y.md"]);
    expect(published.incoming ?? []).toEqual([]);
    expect(read("/ws/b/Thumbs.db")).toBe("\u0000binary");
    // Status says what keeps the note out and what to do, not that a pull brings it in.
    const status = await Effect.runPromise(notebook.status({ path: "/ws/b" }));
    expect(status.keptOut).toEqual([{ path: "Thumbs.db/n.md", by: "Thumbs.db" }]);
    const text = renderStatus(status, { color: false });
    expect(text).not.toContain("quire pull brings");
    expect(text).not.toContain("the next pull or commit merges them");
    expect(text).toContain("kept out by a file that is not a note");
    expect(text).toContain("  Thumbs.db/n.md  (Thumbs.db)");
  });
});
