/**
 * Reaping an ended session (app/sessions.ts) against a swap timed between its checks: the
 * reaper confirms that the session's notebook directory still resolves to itself, then
 * opens it and removes what is published. A session directory swapped for a symlink in
 * between once made that removal reach through the link, into a person's directory
 * holding the same notes. The tree now refuses a root that no longer leads to itself.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Effect, Fiber, Logger, LogLevel } from "effect";
import * as ids from "../../src/adapters/idGenerator.js";
import * as memFs from "../../src/adapters/memFileSystem.js";
import * as nodeFs from "../../src/adapters/nodeFileSystem.js";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import { claimSession, reapSessions } from "../../src/app/sessions.js";
import type { FileSystemService } from "../../src/ports/FileSystem.js";
import type { ObjectStoreService } from "../../src/ports/ObjectStore.js";
import { baseOptions, openOn } from "./memNotebook.js";

const id = "0123456789abcdef";
const session = `/tmp/quire-${id}`;
const notebookDirectory = `${session}/notebook`;
const author = { name: "test", version: "1" };

/**
 * Session `id` on `store`, claimed, pulled and with p.md published, on a memory file
 * system holding `/tmp` and `extra`; its process is gone (nothing holds its lock).
 */
const publishedSession = async (
  store: ReturnType<typeof memoryStore.make>,
  extra: Record<string, string>,
) => {
  const { service: fs, vol } = memFs.make({ "/tmp/.keep": "", ...extra });
  vol.mkdirSync(notebookDirectory, { recursive: true });
  const options = { privateRoot: "/private", workspaceRoot: notebookDirectory, notebookDirectory };
  await Effect.runPromise(
    Effect.scoped(claimSession(fs, "/private", id, notebookDirectory, store.identity)),
  );
  const notebook = openOn(store, fs, options);
  await Effect.runPromise(notebook.pull({}));
  vol.writeFileSync(`${notebookDirectory}/p.md`, "published\n");
  await Effect.runPromise(notebook.commit({ message: "p", author }));
  return { fs, vol, options };
};

describe("reaping an ended session", () => {
  it("removes nothing through a session directory swapped for a symlink after its check", async () => {
    const store = memoryStore.make();
    // The session's life: claimed, pulled, a note published; then its process ends.
    const { fs, vol, options } = await publishedSession(store, { "/home/u/.keep": "" });
    // A person's directory elsewhere holding exactly what the session published.
    vol.mkdirSync("/home/u/victim/notebook", { recursive: true });
    vol.writeFileSync("/home/u/victim/notebook/p.md", "published\n");

    // The swap lands once the reaper has resolved both paths of its check.
    let swapped = false;
    const racing: FileSystemService = {
      ...fs,
      realPath: (path) =>
        fs.realPath(path).pipe(
          Effect.tap(() => {
            if (path !== "/tmp" || swapped) return;
            swapped = true;
            vol.renameSync(session, "/tmp/moved-away");
            vol.symlinkSync("/home/u/victim", session);
          }),
        ),
    };
    const report = await Effect.runPromise(
      reapSessions(
        { store, fs: racing, ids: ids.make(), options: { ...baseOptions, ...options } },
        undefined,
      ),
    );
    expect(swapped).toBe(true);
    expect(report.removed).toBe(0);
    expect(vol.readFileSync("/home/u/victim/notebook/p.md", "utf8")).toBe("published\n");
    // What the session left is where it was moved, untouched, and looked at again later.
    expect(vol.readFileSync("/tmp/moved-away/notebook/p.md", "utf8")).toBe("published\n");
    expect(vol.existsSync(`/private/sessions/${id}.json`)).toBe(true);
  });

  describe("whose commit was killed after `current` accepted it", () => {
    /** A session on `store` that published p, then was killed committing q after the swap. */
    const killedCommitting = async (store: ReturnType<typeof memoryStore.make>) => {
      const { fs, vol, options } = await publishedSession(store, {});
      vol.writeFileSync(`${notebookDirectory}/q.md`, "published by the killed commit\n");
      const killed = openOn(store, fs, {
        ...options,
        failpoint: (stage) => (stage === "after-cas" ? Effect.interrupt : Effect.void),
      });
      const exit = await Effect.runPromiseExit(killed.commit({ message: "q", author }));
      expect(exit._tag).toBe("Failure");
      const reaping = (reaperStore: ObjectStoreService) =>
        reapSessions(
          { store: reaperStore, fs, ids: ids.make(), options: { ...baseOptions, ...options } },
          undefined,
        );
      const reap = (reaperStore: ObjectStoreService) => Effect.runPromise(reaping(reaperStore));
      return { vol, reap, reaping };
    };

    it("is removed by a start on the same store: its notes are all published", async () => {
      const store = memoryStore.make();
      const { vol, reap } = await killedCommitting(store);
      expect(await reap(store)).toMatchObject({ removed: 1, kept: 0, failed: 0 });
      expect(vol.existsSync(session)).toBe(false);
      expect(vol.existsSync(`/private/sessions/${id}.json`)).toBe(false);
    });

    it("is left as it was when the reaper is stopped while the store does not answer", async () => {
      const store = memoryStore.make();
      const { vol, reaping } = await killedCommitting(store);
      // The store hangs from now on: a stopping serve must not wait for it.
      const hanging = { ...store, get: () => Effect.never, list: () => Effect.never };
      const fiber = Effect.runFork(reaping(hanging));
      await new Promise((resolve) => setTimeout(resolve, 200));
      await Effect.runPromise(Fiber.interrupt(fiber));
      expect(vol.readFileSync(`${notebookDirectory}/q.md`, "utf8")).toBe(
        "published by the killed commit\n",
      );
      expect(vol.existsSync(`/private/sessions/${id}.json`)).toBe(true);
    });

    it("is kept by a start on another store, which cannot confirm the publication", async () => {
      const { vol, reap } = await killedCommitting(memoryStore.make());
      expect(await reap(memoryStore.make())).toMatchObject({ removed: 0, kept: 1, failed: 0 });
      expect(vol.readFileSync(`${notebookDirectory}/q.md`, "utf8")).toBe(
        "published by the killed commit\n",
      );
      expect(vol.existsSync(`/private/sessions/${id}.json`)).toBe(true);
    });

    it("is kept by a start on another store quietly: no warning that the store could not be read", async () => {
      const { reaping } = await killedCommitting(memoryStore.make());
      const records: Array<{ level: string; message: string }> = [];
      const capture = Logger.make(({ logLevel, message }) => {
        records.push({ level: logLevel.label, message: JSON.stringify(message) });
      });
      // Twice: every start keeps it again, and says nothing louder about it.
      for (let start = 0; start < 2; start += 1) {
        const report = await Effect.runPromise(
          reaping(memoryStore.make()).pipe(
            Effect.provide(Logger.replace(Logger.defaultLogger, capture)),
            Logger.withMinimumLogLevel(LogLevel.All),
          ),
        );
        expect(report).toMatchObject({ removed: 0, kept: 1, failed: 0 });
      }
      expect(records.filter((record) => /could not learn/.test(record.message))).toEqual([]);
      const said = records.filter((record) => /another store/.test(record.message));
      expect(said).toHaveLength(2);
      for (const record of said) expect(record.level).toBe("DEBUG");
    });
  });

  it("lets the event loop run while it reaps many sessions with a file system that blocks", async () => {
    // A serve start reaps in the background while it answers its host; the node file
    // system's calls are synchronous, so a reaper that never paused held the event loop
    // (stdin's requests) until it was done with thousands of sessions.
    const store = memoryStore.make();
    const { service: fs, vol } = memFs.make({ "/tmp/.keep": "" });
    const count = 40;
    const sessionIds = Array.from({ length: count }, (_, n) => n.toString(16).padStart(16, "0"));
    for (const sessionId of sessionIds)
      await Effect.runPromise(
        Effect.scoped(
          claimSession(fs, "/private", sessionId, `/tmp/quire-${sessionId}/notebook`, "other"),
        ),
      );
    let locked = 0;
    const blocking: FileSystemService = {
      ...fs,
      lock: (path, timeoutMs) =>
        Effect.sync(() => {
          // 3 ms of synchronous work per session, as a slow disk's calls would take.
          const until = Date.now() + 3;
          while (Date.now() < until);
          locked += 1;
        }).pipe(Effect.zipRight(fs.lock(path, timeoutMs))),
    };
    let lockedWhenTimerRan = -1;
    setTimeout(() => (lockedWhenTimerRan = locked), 0);
    const report = await Effect.runPromise(
      reapSessions(
        {
          store,
          fs: blocking,
          ids: ids.make(),
          options: { ...baseOptions, privateRoot: "/private" },
        },
        undefined,
      ),
    );
    expect(report.removed).toBe(count);
    expect(vol.readdirSync("/private/sessions")).toEqual([]);
    expect(lockedWhenTimerRan).toBeGreaterThanOrEqual(0);
    expect(lockedWhenTimerRan).toBeLessThan(count / 2);
  });

  it("a session another start reaped between the listing and the lock is not a failure", async () => {
    // Several serve starts reap at once: one lists a dead session, another removes it
    // whole (directory, record, lock), then the first takes the free lock and finds no
    // record. That once counted as failed, with a warning that nothing could be reaped.
    const store = memoryStore.make();
    const { service: fs, vol } = memFs.make({ "/tmp/.keep": "" });
    vol.mkdirSync(notebookDirectory, { recursive: true });
    await Effect.runPromise(
      Effect.scoped(claimSession(fs, "/private", id, notebookDirectory, store.identity)),
    );
    const racing: FileSystemService = {
      ...fs,
      lock: (path, timeoutMs) =>
        Effect.suspend(() => {
          if (path === `/private/sessions/${id}.lock`) {
            vol.rmSync(session, { recursive: true, force: true });
            vol.rmSync(`/private/sessions/${id}.json`, { force: true });
          }
          return fs.lock(path, timeoutMs);
        }),
    };
    const options = {
      privateRoot: "/private",
      workspaceRoot: notebookDirectory,
      notebookDirectory,
    };
    const report = await Effect.runPromise(
      reapSessions(
        { store, fs: racing, ids: ids.make(), options: { ...baseOptions, ...options } },
        undefined,
      ),
    );
    expect(report).toMatchObject({ removed: 0, kept: 0, live: 0, failed: 0 });
    expect(vol.readdirSync("/private/sessions")).toEqual([]);
  });

  it("removes what killed processes left of their locks and records, never a live one's", async () => {
    // A start's reaper steals a dead session's lock by renaming it aside and deleting
    // it; killed in between, it left `<id>.lock.stale-<hex>` that nothing removed.
    // A process killed while writing its record, or during a first pull, left the
    // record's temporary file, or the first pulls' turn lock.
    const exited = spawn(process.execPath, ["-e", ""]);
    const deadPid = await new Promise<number>((resolve) =>
      exited.on("exit", () => resolve(exited.pid ?? 0)),
    );
    const living = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"]);
    const privateRoot = mkdtempSync(join(tmpdir(), "quire-reap-"));
    try {
      const sessions = join(privateRoot, "sessions");
      const turns = join(privateRoot, "turns");
      mkdirSync(sessions);
      mkdirSync(turns);
      const owner = (pid: number) =>
        JSON.stringify({ pid, host: hostname(), token: `t${pid}-${Math.random()}` });
      const turn = (n: string) => `${n.repeat(64)}.lock`;
      const dead = [
        join(sessions, "0123456789abcdef.lock.stale-0a0b0c0d0e0f"),
        join(sessions, "fedcba9876543210.lock.stale-111111111111.stale-222222222222"),
        join(turns, turn("a")),
        join(turns, `${turn("b")}.stale-555555555555`),
      ];
      for (const path of dead) writeFileSync(path, owner(deadPid));
      // A dead session that was killed while writing its record: the lock and a temp.
      const killedId = "1111222233334444";
      writeFileSync(join(sessions, `${killedId}.lock`), owner(deadPid));
      writeFileSync(join(sessions, `.${killedId}.json.quire-00000000000a1.tmp`), "{");
      // A live session writing its record right now: its temp is not the reaper's.
      const liveId = "5555666677778888";
      writeFileSync(join(sessions, `${liveId}.lock`), owner(living.pid ?? 0));
      const liveTemp = `.${liveId}.json.quire-00000000000b1.tmp`;
      writeFileSync(join(sessions, liveTemp), "{");
      // Locks set aside or held by a live process: kept.
      const liveAside = "00000000aaaaaaaa.lock.stale-333333333333";
      writeFileSync(join(sessions, liveAside), owner(living.pid ?? 0));
      writeFileSync(join(turns, turn("c")), owner(living.pid ?? 0));
      // Not a session's lock: not the reaper's to judge.
      const other = "notes.lock.stale-444444444444";
      writeFileSync(join(sessions, other), owner(deadPid));

      const report = await Effect.runPromise(
        reapSessions(
          {
            store: memoryStore.make(),
            fs: nodeFs.make(),
            ids: ids.make(),
            options: { ...baseOptions, privateRoot },
          },
          undefined,
        ),
      );
      expect(report).toEqual({ removed: 1, kept: 0, live: 1, failed: 0, deadLocks: 4 });
      expect(readdirSync(sessions).sort()).toEqual(
        [liveTemp, liveAside, `${liveId}.lock`, other].sort(),
      );
      expect(readdirSync(turns)).toEqual([turn("c")]);
    } finally {
      living.kill("SIGKILL");
      rmSync(privateRoot, { recursive: true, force: true });
    }
  });
});
