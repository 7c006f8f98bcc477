/**
 * A rewrite of the working copy stopped part way by a cause the person can fix (a full
 * disk, a directory without write permission): the answer says that the copy was
 * changed, what stopped it, where, and that a pull after the fix completes it — never
 * LOCAL_IO (whose meaning is "before the working copy was changed") and never
 * CONTACT_OPERATOR for a `chmod u+w`. And the pull after the fix completes the copy
 * exactly, also when the notebook changed meanwhile: the notes an interrupted first pull
 * wrote are the notebook's, not additions of the copy's own to conflict with.
 */
import { Effect } from "effect";
import { describe, expect, it } from "vitest";
import { FsError } from "../../src/ports/FileSystem.js";
import { failure, hookedNotebook } from "./memNotebook.js";

const author = { name: "test", version: "1" };
const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect);

/**
 * A notebook on memory whose disk under `/ws/b` is full once `disk.room` more notes are
 * written there (unbounded until a test sets it).
 */
const fillingDisk = () => {
  const disk = { room: Number.POSITIVE_INFINITY };
  const hooked = hookedNotebook((tree) => ({
    replaceFile: (path, bytes, expected, mode) =>
      !tree.root.startsWith("/ws/b")
        ? tree.replaceFile(path, bytes, expected, mode)
        : disk.room <= 0
          ? Effect.fail(
              new FsError({ reason: "NoSpace", path: `${tree.root}/${path}`, message: "ENOSPC" }),
            )
          : tree
              .replaceFile(path, bytes, expected, mode)
              .pipe(Effect.tap(() => Effect.sync(() => disk.room--))),
  }));
  return { ...hooked, disk };
};

describe("a rewrite stopped part way by a cause the person can fix", () => {
  it("a directory without write permission: retry after the fix, named, and the next pull completes it", async () => {
    let denied = false;
    const { notebook, write, read } = hookedNotebook((tree) => ({
      replaceFile: (path, bytes, expected, mode) =>
        denied && tree.root.startsWith("/ws/b") && `${tree.root}/${path}`.includes("/sub/")
          ? Effect.fail(
              new FsError({
                reason: "PermissionDenied",
                path: `${tree.root}/${path}`,
                message: "EACCES",
              }),
            )
          : tree.replaceFile(path, bytes, expected, mode),
    }));
    await run(notebook.pull({ path: "/ws/a" }));
    write("/ws/a/sub/x.md", "x\n");
    write("/ws/a/y.md", "y\n");
    await run(notebook.commit({ path: "/ws/a", message: "seed", author }));
    await run(notebook.pull({ path: "/ws/b" }));
    write("/ws/a/sub/x.md", "x\nmore\n");
    write("/ws/a/y.md", "y\nmore\n");
    await run(notebook.commit({ path: "/ws/a", message: "two", author }));
    denied = true;
    const failed = await failure(notebook.pull({ path: "/ws/b" }));
    expect([failed.code, failed.reason, failed.action, failed.retryable]).toEqual([
      "RECOVERY_FAILURE",
      "UNEXPECTED_FAILURE",
      "PULL_AGAIN",
      true,
    ]);
    expect(failed.message).toContain("/ws/b/sub/x.md");
    expect(failed.message).toMatch(/permission/);
    expect(failed.recovery).toEqual({
      stage: "rewrite-working-copy",
      remoteAccepted: "no",
      resynchronized: false,
    });
    denied = false;
    await run(notebook.pull({ path: "/ws/b" }));
    expect(read("/ws/b/sub/x.md")).toBe("x\nmore\n");
    expect(read("/ws/b/y.md")).toBe("y\nmore\n");
  });

  it("a full disk after some conflict blocks were written: the answer names the notes holding them", async () => {
    const { notebook, write, read, vol, disk } = fillingDisk();
    await run(notebook.pull({ path: "/ws/a" }));
    for (let i = 0; i < 6; i++) write(`/ws/a/n${i}.md`, `note ${i}\n`);
    await run(notebook.commit({ path: "/ws/a", message: "seed", author }));
    await run(notebook.pull({ path: "/ws/b" }));
    for (let i = 0; i < 6; i++) {
      write(`/ws/a/n${i}.md`, `note ${i}, A's\n`);
      write(`/ws/b/n${i}.md`, `note ${i}, B's\n`);
    }
    await run(notebook.commit({ path: "/ws/a", message: "A", author }));
    disk.room = 2;
    const failed = await failure(notebook.pull({ path: "/ws/b" }));
    expect([failed.code, failed.reason, failed.action]).toEqual([
      "RECOVERY_FAILURE",
      "UNEXPECTED_FAILURE",
      "PULL_AGAIN",
    ]);
    const blocked = vol
      .readdirSync("/ws/b")
      .map(String)
      .filter((name) => read(`/ws/b/${name}`).includes("<<<<<<<"))
      .sort();
    expect(blocked).toHaveLength(2);
    expect(failed.files.map((file) => [file.path, file.reason])).toEqual(
      blocked.map((name) => [name, "TEXT_CONFLICT"]),
    );
    for (const name of blocked) expect(failed.message).toContain(name);
    expect(failed.message).toMatch(/conflict/i);
  });

  it("many conflicts written before a full disk: all listed in files, a few named in a short message", async () => {
    const { notebook, write, vol, read, disk } = fillingDisk();
    await run(notebook.pull({ path: "/ws/a" }));
    const long = "x".repeat(200);
    for (let i = 0; i < 40; i++) write(`/ws/a/${long}${i}.md`, `note ${i}\n`);
    await run(notebook.commit({ path: "/ws/a", message: "seed", author }));
    await run(notebook.pull({ path: "/ws/b" }));
    for (let i = 0; i < 40; i++) {
      write(`/ws/a/${long}${i}.md`, `note ${i}, A's\n`);
      write(`/ws/b/${long}${i}.md`, `note ${i}, B's\n`);
    }
    await run(notebook.commit({ path: "/ws/a", message: "A", author }));
    disk.room = 30;
    const failed = await failure(notebook.pull({ path: "/ws/b" }));
    const blocked = vol
      .readdirSync("/ws/b")
      .map(String)
      .filter((name) => read(`/ws/b/${name}`).includes("<<<<<<<"));
    expect(blocked).toHaveLength(30);
    expect(failed.files).toHaveLength(30);
    expect(failed.message.length).toBeLessThan(2000);
    expect(failed.message).toContain("and 27 more");
  });

  it("a full disk during a first pull: not LOCAL_IO, and the next pulls complete it without conflicts", async () => {
    const { notebook, write, read, vol, disk } = fillingDisk();
    await run(notebook.pull({ path: "/ws/a" }));
    for (let i = 0; i < 10; i++) write(`/ws/a/n${i}.md`, `note ${i}\n`);
    await run(notebook.commit({ path: "/ws/a", message: "seed", author }));
    disk.room = 4;
    const failed = await failure(notebook.pull({ path: "/ws/b" }));
    expect(failed.code).not.toBe("ENGINE_FAILED");
    expect([failed.code, failed.reason, failed.action, failed.retryable]).toEqual([
      "RECOVERY_FAILURE",
      "UNEXPECTED_FAILURE",
      "PULL_AGAIN",
      true,
    ]);
    expect(failed.message).toMatch(/disk full/);
    const written = vol.readdirSync("/ws/b").map(String);
    expect(written.length).toBe(4);
    // The notebook changes notes the failed pull wrote, twice, with a pull in between
    // that is stopped by the full disk again.
    for (const name of written) write(`/ws/a/${name}`, `${read(`/ws/a/${name}`)}changed\n`);
    await run(notebook.commit({ path: "/ws/a", message: "change", author }));
    disk.room = 3;
    const again = await failure(notebook.pull({ path: "/ws/b" }));
    expect(again.code).toBe("RECOVERY_FAILURE");
    for (const name of written) write(`/ws/a/${name}`, `${read(`/ws/a/${name}`)}again\n`);
    await run(notebook.commit({ path: "/ws/a", message: "again", author }));
    disk.room = Number.POSITIVE_INFINITY;
    const done = await run(notebook.pull({ path: "/ws/b" }));
    expect(done.generation).toBe(3);
    const names = vol.readdirSync("/ws/a").map(String).sort();
    expect(vol.readdirSync("/ws/b").map(String).sort()).toEqual(names);
    for (const name of names) expect(read(`/ws/b/${name}`)).toBe(read(`/ws/a/${name}`));
    // And the copy is an ordinary one: nothing to publish.
    const status = await run(notebook.commit({ path: "/ws/b", message: "nothing", author }));
    expect(status.files).toEqual([]);
  });

  it("a full disk before a first pull wrote any note: LOCAL_IO, which is then true", async () => {
    let full = false;
    const { notebook, write, vol } = hookedNotebook((tree) => ({
      replaceFile: (path, bytes, expected, mode) =>
        full && tree.root.startsWith("/ws/b")
          ? Effect.fail(
              new FsError({ reason: "NoSpace", path: `${tree.root}/${path}`, message: "ENOSPC" }),
            )
          : tree.replaceFile(path, bytes, expected, mode),
    }));
    await run(notebook.pull({ path: "/ws/a" }));
    write("/ws/a/n.md", "n\n");
    await run(notebook.commit({ path: "/ws/a", message: "seed", author }));
    full = true;
    const failed = await failure(notebook.pull({ path: "/ws/b" }));
    expect([failed.code, failed.reason, failed.detail]).toEqual([
      "ENGINE_FAILED",
      "LOCAL_IO",
      "disk full",
    ]);
    expect(vol.existsSync("/ws/b") ? vol.readdirSync("/ws/b") : []).toEqual([]);
  });

  it("a full disk during a first pull into a directory holding a note of the person's own: no false conflict after", async () => {
    const { notebook, write, read, vol, disk } = fillingDisk();
    await run(notebook.pull({ path: "/ws/a" }));
    for (let i = 0; i < 10; i++) write(`/ws/a/n${i}.md`, `note ${i}\n`);
    await run(notebook.commit({ path: "/ws/a", message: "seed", author }));
    write("/ws/b/mine.md", "my own\n");
    disk.room = 4;
    const failed = await failure(notebook.pull({ path: "/ws/b" }));
    expect([failed.code, failed.reason]).toEqual(["RECOVERY_FAILURE", "UNEXPECTED_FAILURE"]);
    const written = vol
      .readdirSync("/ws/b")
      .map(String)
      .filter((name) => name !== "mine.md");
    expect(written.length).toBe(4);
    for (const name of written) write(`/ws/a/${name}`, `${read(`/ws/a/${name}`)}changed\n`);
    await run(notebook.commit({ path: "/ws/a", message: "change", author }));
    disk.room = Number.POSITIVE_INFINITY;
    await run(notebook.pull({ path: "/ws/b" }));
    for (const name of vol.readdirSync("/ws/a").map(String))
      expect(read(`/ws/b/${name}`)).toBe(read(`/ws/a/${name}`));
    expect(read("/ws/b/mine.md")).toBe("my own\n");
    const published = await run(notebook.commit({ path: "/ws/b", message: "mine", author }));
    expect(published.files.map((file) => file.path)).toEqual(["mine.md"]);
  });
});
