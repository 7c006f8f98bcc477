import { Effect, Exit, Cause, Option } from "effect";
import { describe, expect, it } from "vitest";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import type { NotebookService, SyncReport } from "../../src/app/Notebook.js";
import type { DomainError } from "../../src/domain/errors.js";
import { memNotebook } from "./memNotebook.js";

const author = { name: "test", version: "1" };

const setup = memNotebook;

const ok = (effect: Effect.Effect<SyncReport, DomainError>): Promise<SyncReport> =>
  Effect.runPromise(effect);
const fails = async <A>(effect: Effect.Effect<A, DomainError>): Promise<DomainError> => {
  const exit = await Effect.runPromiseExit(effect);
  if (Exit.isSuccess(exit))
    throw new Error(`expected a failure, got ${JSON.stringify(exit.value)}`);
  const failure = Cause.failureOption(exit.cause);
  if (Option.isNone(failure))
    throw new Error(`expected a domain error, got ${Cause.pretty(exit.cause)}`);
  return failure.value;
};

const pull = (nb: NotebookService, path?: string) =>
  ok(nb.pull(path === undefined ? {} : { path }));
const commit = (nb: NotebookService, path: string, message = "m") =>
  ok(nb.commit({ path, message, author }));

describe("notebook use cases (memfs + in-memory store)", () => {
  it("publishes from one copy and pulls into another", async () => {
    const { notebook, read, write } = setup();
    const first = await pull(notebook);
    expect(first).toEqual({ path: "/ws/a", generation: 0, files: [] });
    write("/ws/a/notes/x.md", "one\ntwo\n");
    const committed = await commit(notebook, "/ws/a");
    expect(committed.generation).toBe(1);
    expect(committed.files).toEqual([{ path: "notes/x.md", insertions: 2, deletions: 0 }]);
    const other = await pull(notebook, "/ws/b");
    expect(other.generation).toBe(1);
    expect(other.files).toEqual([{ path: "notes/x.md", insertions: 2, deletions: 0 }]);
    expect(read("/ws/b/notes/x.md")).toBe("one\ntwo\n");
  });

  it("does not write remotely for a no-change commit", async () => {
    const { notebook, write, store } = setup();
    await pull(notebook);
    write("/ws/a/x.md", "x\n");
    await commit(notebook, "/ws/a");
    const before = await Effect.runPromise(store.get("current"));
    const again = await commit(notebook, "/ws/a");
    expect(again).toEqual({ path: "/ws/a", generation: 1, files: [] });
    const after = await Effect.runPromise(store.get("current"));
    expect(Option.getOrThrow(after).etag).toBe(Option.getOrThrow(before).etag);
  });

  it("merges concurrent edits of different lines and converges", async () => {
    const { notebook, read, write } = setup();
    await pull(notebook, "/ws/a");
    write("/ws/a/f.md", "1\n2\n3\n4\n5\n");
    await commit(notebook, "/ws/a");
    await pull(notebook, "/ws/b");
    write("/ws/a/f.md", "1 local\n2\n3\n4\n5\n");
    write("/ws/b/f.md", "1\n2\n3\n4\n5 remote\n");
    write("/ws/b/g.md", "new\n");
    await commit(notebook, "/ws/b");
    const merged = await commit(notebook, "/ws/a");
    expect(merged.generation).toBe(3);
    expect(merged.files).toEqual([{ path: "f.md", insertions: 1, deletions: 1 }]);
    expect(read("/ws/a/f.md")).toBe("1 local\n2\n3\n4\n5 remote\n");
    expect(read("/ws/a/g.md")).toBe("new\n");
    await pull(notebook, "/ws/b");
    expect(read("/ws/b/f.md")).toBe("1 local\n2\n3\n4\n5 remote\n");
  });

  it("reports overlapping edits as a conflict, refuses markers, then publishes the resolution", async () => {
    const { notebook, read, write, store } = setup();
    await pull(notebook, "/ws/a");
    write("/ws/a/f.md", "a\nb\nc\n");
    await commit(notebook, "/ws/a");
    await pull(notebook, "/ws/b");
    write("/ws/a/f.md", "a\nLOCAL\nc\n");
    write("/ws/b/f.md", "a\nREMOTE\nc\n");
    await commit(notebook, "/ws/b");
    const conflict = await fails(notebook.commit({ path: "/ws/a", message: "m", author }));
    expect(conflict.code).toBe("CONTENT_CONFLICT");
    expect(conflict.reason).toBe("MERGE_CONFLICT");
    expect(conflict.files).toEqual([
      { path: "f.md", reason: "TEXT_CONFLICT", ranges: [{ start: 2, end: 6 }] },
    ]);
    expect(read("/ws/a/f.md")).toBe(
      "a\n<<<<<<< local\nLOCAL\n=======\nREMOTE\n>>>>>>> remote\nc\n",
    );
    const current = Option.getOrThrow(await Effect.runPromise(store.get("current"))).etag;
    const refused = await fails(notebook.commit({ path: "/ws/a", message: "m", author }));
    expect(refused.reason).toBe("UNRESOLVED_MARKERS");
    expect(refused.files).toEqual([
      { path: "f.md", reason: "MARKER_BLOCK", ranges: [{ start: 2, end: 6 }] },
    ]);
    expect(Option.getOrThrow(await Effect.runPromise(store.get("current"))).etag).toBe(current);
    write("/ws/a/f.md", "a\nBOTH\nc\n");
    const resolved = await commit(notebook, "/ws/a");
    expect(resolved.generation).toBe(3);
    expect(resolved.files).toEqual([{ path: "f.md", insertions: 1, deletions: 1 }]);
  });

  it("refuses a commit before any pull and bad messages", async () => {
    const { notebook, vol, write } = setup();
    write("/ws/c/x.md", "x\n");
    expect((await fails(notebook.commit({ path: "/ws/c", message: "m", author }))).reason).toBe(
      "NOT_PULLED",
    );
    expect(
      (await fails(notebook.commit({ path: "/ws/c", message: " \n\u3000", author }))).reason,
    ).toBe("MESSAGE_BLANK");
    expect(
      (await fails(notebook.commit({ path: "/ws/c", message: "é".repeat(8193), author }))).reason,
    ).toBe("MESSAGE_TOO_LONG");
    expect((await fails(notebook.pull({ path: "relative" }))).reason).toBe("PATH_NOT_ABSOLUTE");
    expect((await fails(notebook.pull({ path: "/elsewhere" }))).reason).toBe("PATH_OUTSIDE_ROOT");
    expect((await fails(notebook.status({ path: "/ws/c" }))).reason).toBe("NOT_PULLED");
    expect((await fails(notebook.diff({ path: "/ws/c", files: [] }))).reason).toBe("NOT_PULLED");
    expect((await fails(notebook.log({ path: "/ws/c", limit: 5 }))).reason).toBe("NOT_PULLED");
    // Nothing was made for a copy never pulled: no private directory left behind.
    const copies = vol.existsSync("/private/copies") ? vol.readdirSync("/private/copies") : [];
    expect(copies).toEqual([]);
  });

  it("refuses invalid content, naming each file, and publishes nothing", async () => {
    const { notebook, vol, write, store } = setup();
    await pull(notebook);
    write("/ws/a/ok.md", "fine\n");
    vol.writeFileSync("/ws/a/bin.dat", Buffer.from([0xff, 0xfe, 0x00]));
    vol.writeFileSync("/ws/a/zero.md", "a\u0000b");
    vol.symlinkSync("/ws/a/ok.md", "/ws/a/link.md");
    const error = await fails(notebook.commit({ path: "/ws/a", message: "m", author }));
    expect(error.code).toBe("INVALID_CONTENT");
    expect(error.files.map((f) => [f.path, f.reason])).toEqual([
      ["bin.dat", "CONTAINS_NUL"],
      ["link.md", "SYMLINK"],
      ["zero.md", "CONTAINS_NUL"],
    ]);
    expect(Option.isNone(await Effect.runPromise(store.get("current")))).toBe(true);
  });

  it("catches a new name that case-collides with one the stat cache already vouches for", async () => {
    const { notebook, write, store } = setup();
    await pull(notebook);
    write("/ws/a/notes/a.md", "lower\n");
    await commit(notebook, "/ws/a");
    await pull(notebook); // the stat cache now records notes/a.md
    write("/ws/a/NOTES/A.md", "upper\n");
    write("/ws/a/notes/b:c.md", "bad name\n");
    const before = await Effect.runPromise(store.get("current"));
    const error = await fails(notebook.commit({ path: "/ws/a", message: "m", author }));
    expect(error.code).toBe("INVALID_CONTENT");
    expect(error.files.map((f) => [f.path, f.reason])).toEqual([
      ["NOTES/A.md", "CASE_COLLISION"],
      ["notes/a.md", "CASE_COLLISION"],
      ["notes/b:c.md", "INVALID_NAME"],
    ]);
    expect(await Effect.runPromise(store.get("current"))).toEqual(before);
  });

  it("deletes propagate and emptied directories disappear", async () => {
    const { notebook, vol, write } = setup();
    await pull(notebook, "/ws/a");
    write("/ws/a/d/e/x.md", "x\ny\n");
    write("/ws/a/keep.md", "k\n");
    await commit(notebook, "/ws/a");
    await pull(notebook, "/ws/b");
    vol.unlinkSync("/ws/a/d/e/x.md");
    const published = await commit(notebook, "/ws/a");
    expect(published.files).toEqual([{ path: "d/e/x.md", insertions: 0, deletions: 2 }]);
    const pulled = await pull(notebook, "/ws/b");
    expect(pulled.files).toEqual([{ path: "d/e/x.md", insertions: 0, deletions: 2 }]);
    expect(vol.existsSync("/ws/b/d")).toBe(false);
  });
  it("refuses a working copy nested in, or containing, another copy of the same notebook", async () => {
    const { notebook, write } = setup();
    await pull(notebook, "/ws/outer");
    write("/ws/outer/inner/x.md", "x\n");
    expect((await fails(notebook.pull({ path: "/ws/outer/inner" }))).reason).toBe(
      "NESTED_WORKING_COPY",
    );
    await pull(notebook, "/ws/p/q");
    expect((await fails(notebook.pull({ path: "/ws/p" }))).reason).toBe("NESTED_WORKING_COPY");
    expect((await pull(notebook, "/ws/outer")).generation).toBe(0);
  });
  it("refuses a working copy that overlaps the private root", async () => {
    const { notebook, vol } = setup(memoryStore.make(), "/ws/state");
    expect((await fails(notebook.pull({ path: "/ws" }))).reason).toBe("PATH_OVERLAPS_STATE");
    expect((await fails(notebook.pull({ path: "/ws/state/x" }))).reason).toBe(
      "PATH_OVERLAPS_STATE",
    );
    // Refused before anything was created.
    expect(vol.existsSync("/ws/state/x")).toBe(false);
    expect((await pull(notebook, "/ws/notes")).generation).toBe(0);
  });
  it("tidies away temp files a killed rewrite left behind, and never publishes them", async () => {
    const { notebook, vol, write } = setup();
    await pull(notebook, "/ws/a");
    write("/ws/a/n.md", "n\n");
    write("/ws/a/.n.md.quire-0123456789ab.tmp", "half");
    const committed = await commit(notebook, "/ws/a");
    expect(committed.files).toEqual([{ path: "n.md", insertions: 1, deletions: 0 }]);
    expect(vol.existsSync("/ws/a/.n.md.quire-0123456789ab.tmp")).toBe(false);
  });
});
