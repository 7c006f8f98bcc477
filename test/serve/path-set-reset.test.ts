/**
 * Path-set resets at commit (SPEC §5), edge cases through the use cases on memfs: the
 * offending files go back to the baseline, emptied directories go away, entries match
 * under case folding, and a local file standing where a read-only file's directory was
 * is reset with it (otherwise the restore could never succeed and the copy would be
 * stuck). Each time the next commit publishes the permitted changes.
 */
import { describe, expect, it } from "vitest";
import type { PathSets } from "../../src/domain/pathSets.js";
import { commit, commitFails, pull, world } from "../durability/harness.js";

/** A notebook seeded by an unrestricted copy, and copy /ws/a pulled under `sets`. */
const seeded = async (files: Record<string, string>, sets: PathSets) => {
  const w = world();
  const admin = w.open();
  await pull(admin, "/ws/admin");
  for (const [file, text] of Object.entries(files)) w.write(`/ws/admin/${file}`, text);
  await commit(admin, "/ws/admin");
  const nb = w.open({ pathSets: sets });
  await pull(nb);
  return { w, nb };
};

describe("path-set resets", () => {
  it("removes added files and the directories they emptied, matching entries under case folding", async () => {
    const { w, nb } = await seeded(
      { "docs/a.md": "a\n", "notes.md": "n\n" },
      { readOnly: ["archive", "docs"], writable: [] },
    );
    w.write("/ws/a/docs/new/deep/x.md", "x\n");
    w.write("/ws/a/ARCHIVE/y.md", "y\n");
    w.write("/ws/a/notes.md", "n\nmore\n");
    const error = await commitFails(nb);
    expect(error.code).toBe("READ_ONLY_PATH");
    expect(error.files.map((f) => [f.path, f.reason])).toEqual([
      ["ARCHIVE/y.md", "READ_ONLY"],
      ["docs/new/deep/x.md", "READ_ONLY"],
    ]);
    expect(w.files("/ws/a")).toEqual({ "docs/a.md": "a\n", "notes.md": "n\nmore\n" });
    expect(w.exists("/ws/a/docs/new")).toBe(false);
    expect(w.exists("/ws/a/ARCHIVE")).toBe(false);
    expect((await commit(nb)).files).toEqual([{ path: "notes.md", insertions: 1, deletions: 0 }]);
  });

  it("a permitted file replacing the directory of a read-only file is reset with it", async () => {
    const { w, nb } = await seeded(
      { "docs/fixed/a.md": "a\n", "docs/other.md": "o\n" },
      { readOnly: ["docs/fixed/a.md"], writable: ["docs"] },
    );
    w.remove("/ws/a/docs/fixed");
    w.write("/ws/a/docs/fixed", "now a file\n");
    w.write("/ws/a/docs/other.md", "o\nmore\n");
    const error = await commitFails(nb);
    expect(error.code).toBe("READ_ONLY_PATH");
    expect(error.files.map((f) => [f.path, f.reason])).toEqual([
      ["docs/fixed", "READ_ONLY"],
      ["docs/fixed/a.md", "READ_ONLY"],
    ]);
    expect(w.files("/ws/a")).toEqual({ "docs/fixed/a.md": "a\n", "docs/other.md": "o\nmore\n" });
    expect((await commit(nb)).files).toEqual([
      { path: "docs/other.md", insertions: 1, deletions: 0 },
    ]);
  });
});
