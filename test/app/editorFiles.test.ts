/**
 * Editors' and desktops' working files in a working copy (domain/editorFiles.ts,
 * docs/working-copy.md): a vim swap file (U+0000), an emacs lock (a symlink), a backup,
 * `.DS_Store` (binary) beside a note the person has open are not notes. A commit
 * publishes the note and skips them, instead of refusing every commit while the person
 * keeps the note open (or publishing the backups); the other copies never see them.
 * A path the notebook already holds is a note whatever its name.
 */
import { Effect } from "effect";
import { describe, expect, it } from "vitest";
import * as memFs from "../../src/adapters/memFileSystem.js";
import { makeBlobSource } from "../../src/app/usecases/workingCopy/blobs.js";
import { scanWorkingCopy } from "../../src/app/usecases/workingCopy/workingCopy.js";
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
    write("/ws/a/d/n.md~", "zero\n");
    write("/ws/a/d/#n.md#", "one, auto-saved\n");
    write("/ws/a/.DS_Store", "Bud1\u0000\u0000");
    const committed = await Effect.runPromise(
      notebook.commit({ path: "/ws/a", message: "m", author }),
    );
    expect(committed.files.map((f) => f.path)).toEqual(["d/n.md"]);
    const status = await Effect.runPromise(notebook.status({ path: "/ws/a" }));
    expect([status.changes, status.invalid]).toEqual([[], []]);
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    expect(vol.readdirSync("/ws/b/d")).toEqual(["n.md"]);
    expect(read("/ws/b/d/n.md")).toBe("one\n");
    // Untouched: they are the editor's.
    expect(read("/ws/a/d/n.md~")).toBe("zero\n");
    expect(vol.readlinkSync("/ws/a/d/.#n.md")).toBe("person@host.123:1700000000");
  });

  it("at a path the notebook holds, the file is scanned as a note (never read as deleted)", async () => {
    const { service, vol } = memFs.make({ "/ws/c/notes~": "a note\n", "/ws/c/x.md~": "y\n" });
    const scan = await Effect.runPromise(
      Effect.scoped(
        Effect.flatMap(service.openTree("/ws/c"), (tree) =>
          scanWorkingCopy(
            tree,
            new Map(),
            0,
            makeBlobSource(service, "/private/c"),
            new Set(["notes~"]),
          ),
        ),
      ),
    );
    expect([...scan.keys()]).toEqual(["notes~"]);
    expect(vol.existsSync("/ws/c/x.md~")).toBe(true);
  });
});
