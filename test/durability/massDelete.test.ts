import { describe, expect, it } from "vitest";
import { massDeletion } from "../../src/app/usecases/commit/massDelete.js";
import { commit, commitFails, etagOf, pull, world } from "./harness.js";

const tree = (n: number): Map<string, string> =>
  new Map(Array.from({ length: n }, (_, i) => [`f${i}.md`, `id${i}`]));
const without = (t: Map<string, string>, n: number): Map<string, string> =>
  new Map([...t].slice(n));

describe("massDeletion", () => {
  it("flags deleting every file of a non-empty notebook, whatever its size", () => {
    expect(massDeletion(tree(1), new Map())).toEqual({ deleted: 1, total: 1 });
    expect(massDeletion(tree(19), new Map())).toEqual({ deleted: 19, total: 19 });
    expect(massDeletion(new Map(), new Map())).toBeUndefined();
  });

  it("flags more than half only from 20 files on", () => {
    expect(massDeletion(tree(19), without(tree(19), 18))).toBeUndefined();
    expect(massDeletion(tree(20), without(tree(20), 10))).toBeUndefined();
    expect(massDeletion(tree(20), without(tree(20), 11))).toEqual({ deleted: 11, total: 20 });
    expect(massDeletion(tree(21), without(tree(21), 11))).toEqual({ deleted: 11, total: 21 });
  });

  it("counts a file moved to a new path (same content) as moved, each new path once", () => {
    // The only note renamed by case; a directory renamed whole.
    expect(massDeletion(tree(1), new Map([["F0.md", "id0"]]))).toBeUndefined();
    const renamed = new Map([...tree(30)].map(([path, id]) => [`archive/${path}`, id]));
    expect(massDeletion(tree(30), renamed)).toBeUndefined();
    // One new copy of a content shared by many deleted files accounts for one of them.
    const same = new Map(Array.from({ length: 20 }, (_, i) => [`t${i}.md`, "template"]));
    expect(massDeletion(same, new Map([["kept.md", "template"]]))).toEqual({
      deleted: 19,
      total: 20,
    });
    // An emptied copy with new, different files is still a mass deletion.
    expect(massDeletion(tree(3), new Map([["other.md", "x"]]))).toEqual({ deleted: 3, total: 3 });
  });

  it("counts only deletions, not additions or edits", () => {
    const after = new Map([...without(tree(20), 10), ["new.md", "x"]]);
    expect(massDeletion(tree(20), after)).toBeUndefined();
  });
});

describe("the destructive-commit guard", () => {
  const populated = async (count: number) => {
    const w = world();
    const nb = w.open();
    await pull(nb);
    for (let i = 0; i < count; i++) w.write(`/ws/a/d/f${i}.md`, `${i}\n`);
    await commit(nb);
    return { w, nb };
  };

  it("refuses rm -r of the whole working copy, naming the count, and touches nothing", async () => {
    const { w, nb } = await populated(3);
    const etag = await etagOf(w.store);
    w.remove("/ws/a/d");
    const error = await commitFails(nb);
    expect(error.code).toBe("INVALID_REQUEST");
    expect(error.reason).toBe("MASS_DELETE");
    expect(error.action).toBe("FIX_REQUEST");
    expect(error.message).toContain("every file of the notebook (3)");
    expect(await etagOf(w.store)).toBe(etag);
    expect(w.files("/ws/a")).toEqual({});
    expect(w.faults.count("put", "packs/")).toBe(1);
    // Another copy still sees all three files.
    await pull(nb, "/ws/b");
    expect(Object.keys(w.files("/ws/b"))).toHaveLength(3);
  });

  it("allows it with allowMassDelete, and the next pull elsewhere sees the empty notebook", async () => {
    const { w } = await populated(3);
    await pull(w.open(), "/ws/b");
    w.remove("/ws/a/d");
    const allowed = w.open({ allowMassDelete: true });
    const report = await commit(allowed);
    expect(report.generation).toBe(2);
    expect(report.files.map((f) => f.path)).toEqual(["d/f0.md", "d/f1.md", "d/f2.md"]);
    await pull(w.open(), "/ws/b");
    expect(w.files("/ws/b")).toEqual({});
  });

  it("refuses deleting more than half of 20 files, allows half", async () => {
    const { w, nb } = await populated(20);
    for (let i = 0; i < 11; i++) w.remove(`/ws/a/d/f${i}.md`);
    const error = await commitFails(nb);
    expect(error.reason).toBe("MASS_DELETE");
    expect(error.message).toContain("11 of the notebook's 20 files");
    expect(Object.keys(w.files("/ws/a"))).toHaveLength(9);
    w.write("/ws/a/d/f0.md", "0\n");
    const report = await commit(nb);
    expect(report.generation).toBe(2);
    expect(report.files).toHaveLength(10);
  });

  it("judges the publication, not the copy: deleting what others grew past half is allowed", async () => {
    const { w, nb } = await populated(2);
    const other = w.open();
    await pull(other, "/ws/b");
    for (let i = 0; i < 20; i++) w.write(`/ws/b/e/g${i}.md`, `${i}\n`);
    await commit(other, "/ws/b");
    w.remove("/ws/a/d");
    const report = await commit(nb);
    expect(report.generation).toBe(3);
    expect(Object.keys(w.files("/ws/a"))).toHaveLength(20);
  });
});
