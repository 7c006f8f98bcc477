/**
 * Merge attributes through the notebook use cases (memfs + in-memory store): pull and
 * commit both union-merge what `.quireattributes` names, and commit refuses a
 * malformed attributes file, naming its lines.
 */
import { Cause, Effect, Exit, Option } from "effect";
import { describe, expect, it } from "vitest";
import type { NotebookService, SyncReport } from "../../src/app/Notebook.js";
import type { DomainError } from "../../src/domain/errors.js";
import { memNotebook } from "./memNotebook.js";

const author = { name: "test", version: "1" };

const ok = (effect: Effect.Effect<SyncReport, DomainError>): Promise<SyncReport> =>
  Effect.runPromise(effect);
const fails = async (effect: Effect.Effect<SyncReport, DomainError>): Promise<DomainError> => {
  const exit = await Effect.runPromiseExit(effect);
  if (Exit.isSuccess(exit))
    throw new Error(`expected a failure, got ${JSON.stringify(exit.value)}`);
  const failure = Cause.failureOption(exit.cause);
  if (Option.isNone(failure))
    throw new Error(`expected a domain error, got ${Cause.pretty(exit.cause)}`);
  return failure.value;
};
const pull = (nb: NotebookService, path: string) => ok(nb.pull({ path }));
const commit = (nb: NotebookService, path: string) => ok(nb.commit({ path, message: "m", author }));

const journal = "# journal\n";

describe("merge attributes in pull and commit", () => {
  it("commit and pull union-merge concurrent appends to a file declared merge=union", async () => {
    const { notebook, read, write } = memNotebook();
    await pull(notebook, "/ws/a");
    write("/ws/a/.quireattributes", "# appended by many agents\njournal.md merge=union\n");
    write("/ws/a/journal.md", journal);
    await commit(notebook, "/ws/a");
    await pull(notebook, "/ws/b");

    write("/ws/a/journal.md", `${journal}- a1\n`);
    write("/ws/b/journal.md", `${journal}- b1\n`);
    await commit(notebook, "/ws/a");
    const byB = await commit(notebook, "/ws/b");
    expect(byB.files).toEqual([{ path: "journal.md", insertions: 1, deletions: 0 }]);
    expect(read("/ws/b/journal.md")).toBe(`${journal}- a1\n- b1\n`);

    // A pull merges an unpublished append the same way.
    write("/ws/a/journal.md", `${journal}- a1\n- a2\n`);
    write("/ws/b/journal.md", `${journal}- a1\n- b1\n- b2\n`);
    await commit(notebook, "/ws/b");
    const pulled = await pull(notebook, "/ws/a");
    expect(pulled.files).toEqual([{ path: "journal.md", insertions: 2, deletions: 0 }]);
    expect(read("/ws/a/journal.md")).toBe(`${journal}- a1\n- b1\n- b2\n- a2\n`);
    await commit(notebook, "/ws/a");
    await pull(notebook, "/ws/b");
    expect(read("/ws/b/journal.md")).toBe(`${journal}- a1\n- b1\n- b2\n- a2\n`);
  });

  it("without the attribute the same appends conflict as before", async () => {
    const { notebook, read, write } = memNotebook();
    await pull(notebook, "/ws/a");
    write("/ws/a/journal.md", journal);
    await commit(notebook, "/ws/a");
    await pull(notebook, "/ws/b");
    write("/ws/a/journal.md", `${journal}- a1\n`);
    write("/ws/b/journal.md", `${journal}- b1\n`);
    await commit(notebook, "/ws/a");
    const conflict = await fails(notebook.commit({ path: "/ws/b", message: "m", author }));
    expect(conflict.files).toEqual([
      { path: "journal.md", reason: "TEXT_CONFLICT", ranges: [{ start: 2, end: 6 }] },
    ]);
    expect(read("/ws/b/journal.md")).toBe(
      `${journal}<<<<<<< local\n- b1\n=======\n- a1\n>>>>>>> remote\n`,
    );
  });

  it("refuses a malformed .quireattributes at commit, naming the lines; publishes nothing", async () => {
    const { notebook, read, write, store } = memNotebook();
    await pull(notebook, "/ws/a");
    write("/ws/a/journal.md", journal);
    await commit(notebook, "/ws/a");
    const current = Option.getOrThrow(await Effect.runPromise(store.get("current"))).etag;
    const written =
      "journal.md merge=union\njournal.md merge=ours\n*.md merge=union # all of them\nlogs/ merge=union\n\ntodo.md merge=text\n";
    write("/ws/a/.quireattributes", written);
    write("/ws/a/journal.md", `${journal}- a1\n`);
    const refused = await fails(notebook.commit({ path: "/ws/a", message: "m", author }));
    expect(refused).toMatchObject({
      code: "INVALID_CONTENT",
      reason: "INVALID_FILES",
      action: "EDIT_FILES",
      retryable: false,
      files: [
        { path: ".quireattributes", reason: "INVALID_ATTRIBUTES", ranges: [{ start: 2, end: 4 }] },
      ],
    });
    expect(refused.message).toContain('line 2: unknown attribute "merge=ours"');
    expect(refused.message).toContain("line 3: one attribute per line");
    expect(refused.message).toContain('line 4: the pattern "logs/"');
    expect(Option.getOrThrow(await Effect.runPromise(store.get("current"))).etag).toBe(current);
    // The working copy is left as it was.
    expect(read("/ws/a/.quireattributes")).toBe(written);
    expect(read("/ws/a/journal.md")).toBe(`${journal}- a1\n`);

    write("/ws/a/.quireattributes", "journal.md merge=union\n");
    const fixed = await commit(notebook, "/ws/a");
    expect(fixed.files).toEqual([
      { path: ".quireattributes", insertions: 1, deletions: 0 },
      { path: "journal.md", insertions: 1, deletions: 0 },
    ]);
  });

  /** `n` rule lines for files no test writes, `prefix0.md` to `prefix<n-1>.md`. */
  const filler = (prefix: string, n: number): string =>
    Array.from({ length: n }, (_, k) => `${prefix}${k}.md merge=text\n`).join("");

  it("refuses at commit a .quireattributes over its limit of 1,000 rules, naming the lines past it", async () => {
    const { notebook, write, store } = memNotebook();
    await pull(notebook, "/ws/a");
    write("/ws/a/.quireattributes", `# many\n\n${filler("r", 1198)}`);
    const refused = await fails(notebook.commit({ path: "/ws/a", message: "m", author }));
    expect(refused).toMatchObject({
      code: "INVALID_CONTENT",
      reason: "INVALID_FILES",
      action: "EDIT_FILES",
      retryable: false,
      files: [
        {
          path: ".quireattributes",
          reason: "INVALID_ATTRIBUTES",
          ranges: [{ start: 1003, end: 1200 }],
        },
      ],
    });
    expect(refused.message).toContain("at most 1,000 rules and 64 KiB");
    expect(refused.message).toContain("passes the 1,000 rules at line 1,003");
    expect(refused.message).toContain("nothing was published");
    expect(Option.isNone(await Effect.runPromise(store.get("current")))).toBe(true);

    write("/ws/a/.quireattributes", `# many\n\n${filler("r", 1000)}`);
    expect((await commit(notebook, "/ws/a")).files).toEqual([
      { path: ".quireattributes", insertions: 1002, deletions: 0 },
    ]);
  });

  it("a merge made over the limit is read up to it: the rules past it do not apply", async () => {
    const { notebook, read, write } = memNotebook();
    await pull(notebook, "/ws/a");
    write("/ws/a/.quireattributes", filler("p", 400));
    write("/ws/a/journal.md", journal);
    await commit(notebook, "/ws/a");
    await pull(notebook, "/ws/b");
    // Two edits within the limit (800 and 801 rules) that merge cleanly into 1,201: the
    // notebook then holds a file over it, as one published by an older release would.
    write("/ws/a/.quireattributes", `${filler("q", 400)}${filler("p", 400)}`);
    await commit(notebook, "/ws/a");
    write(
      "/ws/b/.quireattributes",
      `${filler("p", 400)}${filler("s", 400)}journal.md merge=union\n`,
    );
    await commit(notebook, "/ws/b");
    await pull(notebook, "/ws/a");
    expect(read("/ws/a/.quireattributes").split("\n")).toHaveLength(1202);

    // journal.md merge=union is line 1,201: never read, so the appends conflict as text.
    write("/ws/a/journal.md", `${journal}- a1\n`);
    write("/ws/b/journal.md", `${journal}- b1\n`);
    await commit(notebook, "/ws/a");
    const conflict = await fails(notebook.commit({ path: "/ws/b", message: "m", author }));
    expect(conflict.files).toEqual([
      { path: "journal.md", reason: "TEXT_CONFLICT", ranges: [{ start: 2, end: 6 }] },
    ]);
  });

  it("reports far-apart malformed lines as separate ranges and spells out at most five", async () => {
    const { notebook, write } = memNotebook();
    await pull(notebook, "/ws/a");
    write(
      "/ws/a/.quireattributes",
      ["a", "ok merge=union", "b", "c", "d", "e", "f", "g"].join("\n"),
    );
    const refused = await fails(notebook.commit({ path: "/ws/a", message: "m", author }));
    expect(refused.files).toEqual([
      {
        path: ".quireattributes",
        reason: "INVALID_ATTRIBUTES",
        ranges: [
          { start: 1, end: 1 },
          { start: 3, end: 8 },
        ],
      },
    ]);
    expect(refused.message).toContain("line 6:");
    expect(refused.message).not.toContain("line 7:");
    expect(refused.message).toContain("and 2 more");
  });
});

describe("a merge that joins half a conflict block from each side", () => {
  const halfA = "<<<<<<< local\nfoo\n=======\n";
  const halfB = "bar\n>>>>>>> remote\n";

  it("is a conflict at that block, never published: union appends", async () => {
    const { notebook, read, write } = memNotebook();
    await pull(notebook, "/ws/a");
    write("/ws/a/.quireattributes", "journal.md merge=union\n");
    write("/ws/a/journal.md", journal);
    await commit(notebook, "/ws/a");
    await pull(notebook, "/ws/b");
    write("/ws/a/journal.md", `${journal}${halfA}`);
    const byA = await commit(notebook, "/ws/a");
    write("/ws/b/journal.md", `${journal}${halfB}`);
    // The union of the two appends holds a complete block, which a commit never accepts.
    const byB = await fails(notebook.commit({ path: "/ws/b", message: "m", author }));
    expect([byB.code, byB.reason]).toEqual(["CONTENT_CONFLICT", "MERGE_CONFLICT"]);
    expect(byB.files).toEqual([
      { path: "journal.md", reason: "TEXT_CONFLICT", ranges: [{ start: 2, end: 6 }] },
    ]);
    expect(read("/ws/b/journal.md")).toBe(`${journal}${halfA}${halfB}`);
    // Nothing was published: the notebook is still at A's generation.
    expect((await pull(notebook, "/ws/a")).generation).toBe(byA.generation);
    expect(read("/ws/a/journal.md")).toBe(`${journal}${halfA}`);
  });

  it("is a conflict at that block in a text merge too, and in a pull", async () => {
    const { notebook, read, write } = memNotebook();
    const base = "1\n2\n3\n4\n5\n";
    await pull(notebook, "/ws/a");
    write("/ws/a/notes.md", base);
    await commit(notebook, "/ws/a");
    await pull(notebook, "/ws/b");
    write("/ws/a/notes.md", `1\n<<<<<<< local\n=======\n2\n3\n4\n5\n`);
    await commit(notebook, "/ws/a");
    write("/ws/b/notes.md", `${base}>>>>>>> remote\n`);
    const pulled = await fails(notebook.pull({ path: "/ws/b" }));
    expect([pulled.code, pulled.reason]).toEqual(["CONTENT_CONFLICT", "MERGE_CONFLICT"]);
    expect(pulled.files).toEqual([
      { path: "notes.md", reason: "TEXT_CONFLICT", ranges: [{ start: 2, end: 8 }] },
    ]);
    expect(read("/ws/b/notes.md")).toBe(`1\n<<<<<<< local\n=======\n2\n3\n4\n5\n>>>>>>> remote\n`);
  });

  it("is listed beside the merge's own conflicts in the same file", async () => {
    const { notebook, read, write } = memNotebook();
    const rest = "2\n3\n4\n5\n";
    const tail = "6\n7\n8\n9\n";
    await pull(notebook, "/ws/a");
    write("/ws/a/notes.md", `1\n${rest}${tail}`);
    await commit(notebook, "/ws/a");
    await pull(notebook, "/ws/b");
    write("/ws/a/notes.md", `A1\n${rest}<<<<<<< local\n=======\n${tail}`);
    await commit(notebook, "/ws/a");
    write("/ws/b/notes.md", `B1\n${rest}${tail}>>>>>>> remote\n`);
    const byB = await fails(notebook.commit({ path: "/ws/b", message: "m", author }));
    expect([byB.code, byB.reason]).toEqual(["CONTENT_CONFLICT", "MERGE_CONFLICT"]);
    expect(byB.files).toEqual([
      {
        path: "notes.md",
        reason: "TEXT_CONFLICT",
        ranges: [
          { start: 1, end: 5 },
          { start: 10, end: 16 },
        ],
      },
    ]);
    expect(read("/ws/b/notes.md")).toBe(
      `<<<<<<< local\nB1\n=======\nA1\n>>>>>>> remote\n${rest}<<<<<<< local\n=======\n${tail}>>>>>>> remote\n`,
    );
  });
});
