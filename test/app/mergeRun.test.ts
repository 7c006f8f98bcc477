/**
 * runMerge with merge attributes: which attributes are in force, what the union merge
 * does to each kind of conflict, and that the attributes cost no read unless a file
 * needs a text merge.
 */
import { Effect } from "effect";
import { describe, expect, it } from "vitest";
import type { BlobSource } from "../../src/app/usecases/workingCopy/blobs.js";
import { runMerge } from "../../src/app/usecases/pull/mergeRun.js";
import { contentId, encodeText } from "../../src/domain/content.js";
import type { Tree } from "../../src/domain/tree.js";

/** An in-memory content source that counts the loads of each id. */
const memoryBlobs = () => {
  const bytes = new Map<string, Uint8Array>();
  const loads = new Map<string, number>();
  const put = (text: string): string => {
    const encoded = encodeText(text);
    const id = contentId(encoded);
    bytes.set(id, encoded);
    return id;
  };
  const source: BlobSource = {
    addBytes: (id, added) => void bytes.set(id, added),
    addRef: () => undefined,
    addTree: () => undefined,
    addPack: () => undefined,
    addScan: () => undefined,
    inMemory: (id) => bytes.get(id),
    load: (id) => {
      loads.set(id, (loads.get(id) ?? 0) + 1);
      const found = bytes.get(id);
      return found === undefined ? Effect.die(`no blob ${id}`) : Effect.succeed(found);
    },
  };
  const tree = (files: Record<string, string>): Tree =>
    new Map(Object.entries(files).map(([path, text]) => [path, put(text)]));
  const textAt = (merged: Tree, path: string): string | undefined => {
    const id = merged.get(path);
    const found = id === undefined ? undefined : bytes.get(id);
    return found === undefined ? undefined : new TextDecoder().decode(found);
  };
  return { source, tree, textAt, loadsOf: (text: string) => loads.get(put(text)) ?? 0 };
};

const union = "journal.md merge=union\n";
const journal = "# journal\n- seed\n";

const merge = (
  blobs: ReturnType<typeof memoryBlobs>,
  base: Record<string, string>,
  local: Record<string, string>,
  remote: Record<string, string>,
) =>
  Effect.runPromise(
    runMerge(blobs.tree(base), blobs.tree(local), blobs.tree(remote), blobs.source),
  );

describe("runMerge with merge attributes", () => {
  it("union-merges a file the attributes name: remote's lines, then local's, no conflict", async () => {
    const blobs = memoryBlobs();
    const attrs = { ".quireattributes": union };
    const outcome = await merge(
      blobs,
      { ...attrs, "journal.md": journal },
      { ...attrs, "journal.md": `${journal}- from local\n` },
      { ...attrs, "journal.md": `${journal}- from remote\n` },
    );
    expect(outcome.conflicts).toEqual([]);
    expect(blobs.textAt(outcome.merged, "journal.md")).toBe(
      `${journal}- from remote\n- from local\n`,
    );
    expect(blobs.loadsOf(union)).toBe(1);
  });

  it("conflicts exactly as the text merge without the attribute, or with merge=text", async () => {
    for (const attributes of [undefined, "*.md merge=union\njournal.md merge=text\n"]) {
      const blobs = memoryBlobs();
      const attrs: Record<string, string> =
        attributes === undefined ? {} : { ".quireattributes": attributes };
      const outcome = await merge(
        blobs,
        { ...attrs, "journal.md": journal },
        { ...attrs, "journal.md": `${journal}- from local\n` },
        { ...attrs, "journal.md": `${journal}- from remote\n` },
      );
      expect(outcome.conflicts).toEqual([
        { path: "journal.md", reason: "TEXT_CONFLICT", ranges: [{ start: 3, end: 7 }] },
      ]);
      expect(blobs.textAt(outcome.merged, "journal.md")).toBe(
        `${journal}<<<<<<< local\n- from local\n=======\n- from remote\n>>>>>>> remote\n`,
      );
    }
  });

  it("reads no attributes when no file needs a text merge", async () => {
    const blobs = memoryBlobs();
    const attrs = { ".quireattributes": union };
    const outcome = await merge(
      blobs,
      { ...attrs, "journal.md": journal, "b.md": "b\n" },
      { ...attrs, "journal.md": `${journal}- local\n`, "b.md": "b\n" },
      { ...attrs, "journal.md": journal, "b.md": "b remote\n" },
    );
    expect(outcome.conflicts).toEqual([]);
    expect(blobs.loadsOf(union)).toBe(0);
    // Nor for an add/add, which the union merge leaves to the text merge.
    const added = await merge(
      blobs,
      attrs,
      { ...attrs, "journal.md": "- local\n" },
      { ...attrs, "journal.md": "- remote\n" },
    );
    expect(added.conflicts).toEqual([
      { path: "journal.md", reason: "ADD_ADD", ranges: [{ start: 1, end: 5 }] },
    ]);
    expect(blobs.loadsOf(union)).toBe(0);
  });

  it("keeps delete/modify a conflict in a union file", async () => {
    const blobs = memoryBlobs();
    const attrs = { ".quireattributes": union };
    const outcome = await merge(blobs, { ...attrs, "journal.md": journal }, attrs, {
      ...attrs,
      "journal.md": `${journal}- remote\n`,
    });
    expect(outcome.conflicts).toEqual([
      { path: "journal.md", reason: "DELETE_MODIFY", ranges: [] },
    ]);
  });

  it("keeps file/directory a conflict in a union file", async () => {
    const blobs = memoryBlobs();
    const attrs = { ".quireattributes": "journal.md merge=union\njournal.md/** merge=union\n" };
    const outcome = await merge(
      blobs,
      attrs,
      { ...attrs, "journal.md": "- local\n" },
      { ...attrs, "journal.md/x.md": "- remote\n" },
    );
    expect(outcome.conflicts).toEqual([
      {
        path: "journal.md",
        reason: "FILE_DIRECTORY",
        ranges: [],
        movedTo: "journal.md~local",
        side: "local",
        keptAs: "journal.md",
      },
    ]);
  });

  it("applies attributes either side added in this very merge (the merged file decides)", async () => {
    for (const side of ["local", "remote"] as const) {
      const blobs = memoryBlobs();
      const attrs = { ".quireattributes": union };
      const outcome = await merge(
        blobs,
        { "journal.md": journal },
        { ...(side === "local" ? attrs : {}), "journal.md": `${journal}- local\n` },
        { ...(side === "remote" ? attrs : {}), "journal.md": `${journal}- remote\n` },
      );
      expect(outcome.conflicts, side).toEqual([]);
      expect(blobs.textAt(outcome.merged, "journal.md")).toBe(`${journal}- remote\n- local\n`);
    }
  });

  it("merges the attributes file itself first, as text, and uses the result", async () => {
    const blobs = memoryBlobs();
    const base = "# policies\n\n\n\nnotes/** merge=text\n";
    const outcome = await merge(
      blobs,
      { ".quireattributes": base, "journal.md": journal, "notes/todo.md": "- a\n" },
      {
        ".quireattributes": `journal.md merge=union\n${base}`,
        "journal.md": `${journal}- local\n`,
        "notes/todo.md": "- a\n- local\n",
      },
      {
        ".quireattributes": `${base}notes/todo.md merge=union\n`,
        "journal.md": `${journal}- remote\n`,
        "notes/todo.md": "- a\n- remote\n",
      },
    );
    expect(outcome.conflicts).toEqual([]);
    expect(blobs.textAt(outcome.merged, ".quireattributes")).toBe(
      `journal.md merge=union\n${base}notes/todo.md merge=union\n`,
    );
    expect(blobs.textAt(outcome.merged, "notes/todo.md")).toBe("- a\n- remote\n- local\n");
  });

  it("uses the local version while the attributes file itself conflicts", async () => {
    const blobs = memoryBlobs();
    const outcome = await merge(
      blobs,
      { ".quireattributes": "other.md merge=union\n", "journal.md": journal },
      { ".quireattributes": union, "journal.md": `${journal}- local\n` },
      { ".quireattributes": "journal.md merge=text\n", "journal.md": `${journal}- remote\n` },
    );
    expect(outcome.conflicts.map((c) => [c.path, c.reason])).toEqual([
      [".quireattributes", "TEXT_CONFLICT"],
    ]);
    expect(blobs.textAt(outcome.merged, "journal.md")).toBe(`${journal}- remote\n- local\n`);
    // Local deleted it, remote changed it: local has none, so the text merge applies.
    const deleted = await merge(
      blobs,
      { ".quireattributes": union, "journal.md": journal },
      { "journal.md": `${journal}- local\n` },
      { ".quireattributes": `${union}x merge=text\n`, "journal.md": `${journal}- remote\n` },
    );
    expect(deleted.conflicts.map((c) => [c.path, c.reason])).toEqual([
      [".quireattributes", "DELETE_MODIFY"],
      ["journal.md", "TEXT_CONFLICT"],
    ]);
  });

  it("ignores malformed lines of a merged attributes file", async () => {
    const blobs = memoryBlobs();
    const attrs = { ".quireattributes": `journal.md merge=bogus\n${union}` };
    const outcome = await merge(
      blobs,
      { ...attrs, "journal.md": journal },
      { ...attrs, "journal.md": `${journal}- local\n` },
      { ...attrs, "journal.md": `${journal}- remote\n` },
    );
    expect(outcome.conflicts).toEqual([]);
  });
});
