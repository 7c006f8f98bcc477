import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openNotebook } from "../../src/index.js";

const root = mkdtempSync(join(tmpdir(), "quire-library-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("the Promise facade", () => {
  it("pulls and commits on a file store, returning the MCP result and error objects", async () => {
    const workspace = join(root, "ws");
    mkdirSync(workspace);
    const options = {
      store: `file:${join(root, "store")}`,
      workspaceRoot: workspace,
      privateRoot: join(root, "private"),
      author: { name: "library-test", version: "1" },
    };
    const first = await openNotebook(options);
    const second = await openNotebook(options);
    const a = join(workspace, "a");
    const b = join(workspace, "b");
    expect(await first.pull(a)).toMatchObject({
      code: "OK",
      generation: 0,
      files: [],
      readOnly: [],
      writable: [],
    });
    writeFileSync(join(a, "n.md"), "one\n");
    expect(await first.commit("add n", a)).toMatchObject({
      code: "OK",
      generation: 1,
      filesChanged: 1,
      insertions: 1,
      deletions: 0,
      files: [{ path: "n.md", insertions: 1, deletions: 0 }],
    });
    expect(await second.pull(b)).toMatchObject({ code: "OK", generation: 1 });
    expect(readFileSync(join(b, "n.md"), "utf8")).toBe("one\n");
    const refused = await second.commit("   ", b);
    expect(refused).toMatchObject({
      code: "INVALID_REQUEST",
      reason: "MESSAGE_BLANK",
      action: "FIX_REQUEST",
    });
    expect("diagnosticId" in refused && /^[0-9a-f]{16}$/.test(String(refused.diagnosticId))).toBe(
      true,
    );
  });

  it("takes a root through a symlink as written, and refuses it once the link leads elsewhere", async () => {
    // A temporary directory reached through a link, as on macOS (/var → /private/var).
    const real = join(root, "linked-real");
    const victim = join(root, "linked-victim");
    mkdirSync(join(real, "ws"), { recursive: true });
    mkdirSync(join(victim, "ws", "a"), { recursive: true });
    symlinkSync(real, join(root, "link"));
    const workspace = join(root, "link", "ws");
    const notebook = await openNotebook({
      store: `file:${join(root, "linked-store")}`,
      workspaceRoot: workspace,
      privateRoot: join(root, "linked-private"),
    });
    expect(await notebook.pull(join(workspace, "a"))).toMatchObject({ code: "OK" });
    writeFileSync(join(workspace, "a", "n.md"), "one\n");
    expect(await notebook.commit("n", join(workspace, "a"))).toMatchObject({ code: "OK" });
    // The link now leads to another directory of the same shape: nothing goes there.
    unlinkSync(join(root, "link"));
    symlinkSync(victim, join(root, "link"));
    expect(await notebook.pull(join(workspace, "a"))).toMatchObject({
      code: "ENGINE_FAILED",
      reason: "ROOT_CHANGED",
      retryable: false,
      message: expect.stringContaining("no longer leads to the directory"),
    });
    expect(readdirSync(join(victim, "ws", "a"))).toEqual([]);
    // Back where it was, the copy works again.
    renameSync(join(root, "link"), join(root, "link-victim"));
    symlinkSync(real, join(root, "link"));
    expect(await notebook.commit("none", join(workspace, "a"))).toMatchObject({ code: "OK" });
    await notebook.close();
  });

  it("says the workspace root is gone when it was deleted, and works once it is back", async () => {
    const workspace = join(root, "gone-ws");
    mkdirSync(join(workspace, "a"), { recursive: true });
    const notebook = await openNotebook({
      store: `file:${join(root, "gone-store")}`,
      workspaceRoot: workspace,
      privateRoot: join(root, "gone-private"),
    });
    expect(await notebook.pull(join(workspace, "a"))).toMatchObject({ code: "OK" });
    rmSync(workspace, { recursive: true });
    // It said only "a local file operation failed while opening the workspace root".
    expect(await notebook.pull(join(workspace, "a"))).toMatchObject({
      code: "ENGINE_FAILED",
      reason: "ROOT_CHANGED",
      retryable: false,
      message: expect.stringContaining("no longer exists as a directory"),
    });
    mkdirSync(join(workspace, "a"), { recursive: true });
    expect(await notebook.pull(join(workspace, "a"))).toMatchObject({ code: "OK" });
    await notebook.close();
  });

  it("works in memory and rejects an unknown store spelling", async () => {
    const workspace = join(root, "mem");
    mkdirSync(workspace);
    const notebook = await openNotebook({
      store: "memory:",
      workspaceRoot: workspace,
      privateRoot: join(root, "p2"),
    });
    expect(await notebook.pull()).toMatchObject({ code: "OK", path: workspace });
    await expect(
      openNotebook({ store: "ftp://x", workspaceRoot: workspace, privateRoot: join(root, "p3") }),
    ).rejects.toThrow(/unsupported store/);
  });

  it("close waits for the housekeeping calls run after answering", async () => {
    const workspace = join(root, "close");
    const copy = join(workspace, "c");
    mkdirSync(copy, { recursive: true });
    const privateRoot = join(root, "p-close");
    const notebook = await openNotebook({
      store: `file:${join(root, "store-close")}`,
      workspaceRoot: workspace,
      privateRoot,
      probe: false,
    });
    expect(await notebook.pull(copy)).toMatchObject({ code: "OK" });
    for (const text of ["one\n", "one\ntwo\n"]) {
      writeFileSync(join(copy, "x.md"), text);
      expect(await notebook.commit("m", copy)).toMatchObject({ code: "OK" });
    }
    await notebook.close();
    const copies = readdirSync(join(privateRoot, "copies"));
    expect(copies).toHaveLength(1);
    const names = readdirSync(join(privateRoot, "copies", String(copies[0]))).sort();
    expect(names).not.toContain("lock");
    expect(names).toContain("stats.json");
    expect(names.filter((name) => name.startsWith("baseline-"))).toHaveLength(1);
    // Still usable after close.
    writeFileSync(join(copy, "x.md"), "one\ntwo\nthree\n");
    expect(await notebook.commit("m", copy)).toMatchObject({ code: "OK", generation: 3 });
    await notebook.close();
  });
});
