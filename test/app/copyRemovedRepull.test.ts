/**
 * A working copy whose directory was moved away or deleted, then pulled again at the
 * same path: the private state kept for that path describes a directory that is gone.
 * `status` and `commit` answer NOT_PULLED ("call pull first"); the pull that follows
 * must give the directory the notebook, not read the missing files as the person's
 * deletions (it answered OK with 0 files changed and left the directory empty, every
 * note pending as deleted, and the next commit one step from deleting the notebook).
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openNotebook } from "../../src/index.js";

const root = mkdtempSync(join(tmpdir(), "quire-copy-removed-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("pulling again at the path of a copy moved away", () => {
  it("writes the notebook into the new directory and leaves nothing pending", async () => {
    const ws = join(root, "ws");
    const copy = join(ws, "a");
    mkdirSync(copy, { recursive: true });
    const notebook = await openNotebook({
      store: `file:${join(root, "store")}`,
      workspaceRoot: ws,
      privateRoot: join(root, "private"),
      probe: false,
    });
    expect((await notebook.pull(copy)).code).toBe("OK");
    writeFileSync(join(copy, "n1.md"), "one\n");
    writeFileSync(join(copy, "n2.md"), "two\n");
    expect((await notebook.commit("notes", copy)).code).toBe("OK");
    writeFileSync(join(copy, "n1.md"), "one\nlocal\n");
    renameSync(copy, join(ws, "moved"));

    const before = await notebook.status(copy);
    expect(before.code).toBe("INVALID_REQUEST");
    const pulled = await notebook.pull(copy);
    expect(pulled.code).toBe("OK");
    expect(readFileSync(join(copy, "n1.md"), "utf8")).toBe("one\n");
    expect(readFileSync(join(copy, "n2.md"), "utf8")).toBe("two\n");
    const after = await notebook.status(copy);
    expect(after.code).toBe("OK");
    expect("changes" in after ? after.changes : undefined).toEqual([]);
    // The moved directory is untouched: its edit is still there for the person.
    expect(readFileSync(join(ws, "moved", "n1.md"), "utf8")).toBe("one\nlocal\n");

    // A copy emptied but still there is the person's deletions, as before.
    rmSync(join(copy, "n2.md"));
    expect((await notebook.pull(copy)).code).toBe("OK");
    expect(existsSync(join(copy, "n2.md"))).toBe(false);
    await notebook.close();
  });
});
