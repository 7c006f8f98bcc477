/**
 * What ended `serve` sessions leave behind (docs/logging.md "Shutdown and signals",
 * app/sessions.ts): every way a host stops a server ends with its session directory
 * removed when everything in it is published, and a server that could not clean up
 * (SIGKILL) is cleaned up after by a later start — never a live one, and never
 * unpublished work. Real processes, real files; the 100-start version of this is
 * `npm run test:sessions`.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { hostname } from "node:os";
import * as path from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { assertBuilt, makeSandbox, runQuire, type Sandbox } from "./quireProcess.js";
import {
  privateLeftovers,
  type ServeSandbox,
  type SessionServe,
  servingIn,
  sessionDirectories,
  startSessionServe,
  stopStatuses,
  stopWays,
} from "../helpers/sessionServe.js";

let sandbox: Sandbox;
let serving: ServeSandbox;
let servers: Array<SessionServe> = [];
beforeAll(assertBuilt);
beforeEach(() => {
  sandbox = makeSandbox();
  serving = servingIn(sandbox);
});
afterEach(async () => {
  for (const server of servers) if (server.child.exitCode === null) server.child.kill("SIGKILL");
  await Promise.all(servers.map((server) => server.exited));
  servers = [];
  sandbox.cleanup();
});

/** A server with the reaper's records visible. */
const start = async () => {
  const server = await startSessionServe(serving, { LOG_LEVEL: "cli=debug,info" });
  servers.push(server);
  return server;
};

/** The reaper's record of this start (it runs in the background). */
const reaped = async (server: SessionServe): Promise<Record<string, number>> => {
  await server.waitForStderr('msg="reaped ended sessions"');
  const line = server
    .stderr()
    .split("\n")
    .find((l) => l.includes('msg="reaped ended sessions"'));
  const counts: Record<string, number> = {};
  for (const [, key, value] of (line ?? "").matchAll(/ (removed|kept|live|failed)=(\d+)/g))
    if (key !== undefined) counts[key] = Number(value);
  return counts;
};

const commitNote = async (server: SessionServe, name: string, text: string) => {
  writeFileSync(path.join(server.notebook(), name), text);
  expect(await server.call("notes_commit", { message: name })).toMatchObject({ code: "OK" });
};

const sessionOf = (server: SessionServe) => path.basename(path.dirname(server.notebook()));

describe("ended sessions leave nothing behind", () => {
  it("every way a host stops serve but SIGKILL removes the published session directory, its private state and record", async () => {
    for (const how of stopWays.filter((way) => way !== "SIGKILL")) {
      const server = await start();
      await commitNote(server, `${how}.md`, `stopped by ${how}\n`);
      const status = await server.stop(how);
      // Nothing is left undone whichever of them it is, as the checks below show.
      expect(stopStatuses(how), how).toContain(status);
      expect(sessionDirectories(serving.tmp), how).toEqual([]);
      expect(privateLeftovers(serving.privateRoot), how).toEqual({
        copies: [],
        owners: [],
        sessions: [],
      });
    }
  });

  it("after a SIGKILL, the next start reaps the session; a live, idle session is never reaped", async () => {
    const killed = await start();
    await commitNote(killed, "a.md", "published\n");
    expect(await killed.stop("SIGKILL")).toBe("SIGKILL");
    expect(sessionDirectories(serving.tmp)).toEqual([sessionOf(killed)]);

    const idle = await start();
    expect(await reaped(idle)).toMatchObject({ removed: 1, kept: 0, failed: 0 });
    expect(sessionDirectories(serving.tmp)).toEqual([sessionOf(idle)]);
    expect(privateLeftovers(serving.privateRoot).copies).toHaveLength(1); // idle's own copy

    // Another start while `idle` lives and does nothing: its session is left alone.
    const other = await start();
    expect(await reaped(other)).toMatchObject({ removed: 0, live: 1 });
    expect(sessionDirectories(serving.tmp)).toEqual([sessionOf(idle), sessionOf(other)].sort());
    await commitNote(idle, "b.md", "still served\n");

    for (const server of [idle, other]) expect(await server.stop("stdin")).toBe(0);
    expect(sessionDirectories(serving.tmp)).toEqual([]);
    expect(privateLeftovers(serving.privateRoot)).toEqual({ copies: [], owners: [], sessions: [] });
  });

  it("a session directory swapped for a symlink is kept, never emptied through the link, at the end and by a later start", async () => {
    for (const how of ["stdin", "SIGKILL"] as const) {
      // A person's directory elsewhere, holding what the session published.
      const outside = path.join(sandbox.root, `outside-${how}`);
      mkdirSync(path.join(outside, "notebook"), { recursive: true });
      writeFileSync(path.join(outside, "notebook", "p.md"), "published\n");
      const server = await start();
      await commitNote(server, "p.md", "published\n");
      const session = path.dirname(server.notebook());
      rmSync(session, { recursive: true });
      symlinkSync(outside, session);
      await server.stop(how);
      if (how === "SIGKILL") {
        const later = await start();
        expect(await reaped(later)).toMatchObject({ removed: 0, kept: 1 });
        expect(await later.stop("stdin")).toBe(0);
      }
      expect(readFileSync(path.join(outside, "notebook", "p.md"), "utf8"), how).toBe("published\n");
      unlinkSync(session);
    }
  });

  it("a live session whose directory is swapped for a symlink writes nothing through it", async () => {
    // A person's directory elsewhere, holding what the session published so far.
    const outside = path.join(sandbox.root, "outside-live");
    mkdirSync(path.join(outside, "notebook"), { recursive: true });
    writeFileSync(path.join(outside, "notebook", "p.md"), "published\n");
    const server = await start();
    await commitNote(server, "p.md", "published\n");
    // Another writer publishes a note the session's next pull would bring in.
    const other = path.join(sandbox.root, "other");
    mkdirSync(other);
    const env = { ...sandbox.env, QUIRE_STORE: `file:${sandbox.store}` };
    const quire = (args: ReadonlyArray<string>) =>
      runQuire([...args, "--private-root", path.join(sandbox.root, "other-private")], {
        cwd: other,
        env,
      });
    expect((await quire(["pull", other])).code).toBe(0);
    writeFileSync(path.join(other, "q.md"), "from another writer\n");
    expect((await quire(["commit", other, "-m", "q"])).code).toBe(0);
    const session = path.dirname(server.notebook());
    rmSync(session, { recursive: true });
    symlinkSync(outside, session);
    for (const tool of ["notes_pull", "notes_commit"])
      expect(
        await server.call(tool, tool === "notes_commit" ? { message: "m" } : {}),
      ).toMatchObject({ code: "ENGINE_FAILED", reason: "ROOT_CHANGED", retryable: false });
    expect(readdirSync(path.join(outside, "notebook"))).toEqual(["p.md"]);
    expect(readFileSync(path.join(outside, "notebook", "p.md"), "utf8")).toBe("published\n");
    await server.stop("stdin");
    expect(readdirSync(path.join(outside, "notebook"))).toEqual(["p.md"]);
    unlinkSync(session);
  });

  it("a killed session holding an unpublished note is kept across starts, and reaped once the note is published", async () => {
    const killed = await start();
    writeFileSync(path.join(killed.notebook(), "draft.md"), "not committed\n");
    await killed.stop("SIGKILL");

    const first = await start();
    expect(await reaped(first)).toMatchObject({ removed: 0, kept: 1 });
    expect(readFileSync(path.join(killed.notebook(), "draft.md"), "utf8")).toBe("not committed\n");
    expect(await first.stop("SIGTERM")).toBe(0);
    expect(sessionDirectories(serving.tmp)).toEqual([sessionOf(killed)]);
    // Its private state stays: the CLI can still commit from it.
    expect(privateLeftovers(serving.privateRoot).copies).toHaveLength(1);

    const committed = await runQuire(
      ["commit", killed.notebook(), "-m", "the draft", "--private-root", sandbox.privateRoot],
      {
        cwd: killed.notebook(),
        env: { ...sandbox.env, QUIRE_STORE: `file:${sandbox.store}` },
      },
    );
    expect(committed.code, committed.stderr).toBe(0);

    const second = await start();
    expect(await reaped(second)).toMatchObject({ removed: 1, kept: 0 });
    expect(await second.stop("stdin")).toBe(0);
    expect(sessionDirectories(serving.tmp)).toEqual([]);
    expect(privateLeftovers(serving.privateRoot)).toEqual({ copies: [], owners: [], sessions: [] });
  });

  it("a session killed in a commit after `current` accepted it is reaped by the next start on that store", async () => {
    // Every swap of `current` takes effect but its answer is lost, and every read of
    // `current` is slow: the commit learns its fate late, and is killed before that.
    const killed = await startSessionServe(serving, {
      QUIRE_FAULT_INJECTION: "put:current:fail-after:1;get:current:delay-3000:1",
    });
    servers.push(killed);
    writeFileSync(path.join(killed.notebook(), "n.md"), "published, then killed\n");
    const committing = killed.call("notes_commit", { message: "n" }).catch(() => undefined);
    // The file store's first version of `current` (adapters/fileStoreLayout.ts): renamed
    // into place by the swap.
    const current = path.join(sandbox.store, "objects", "current@", "1");
    while (!existsSync(current) && killed.child.exitCode === null)
      await new Promise((resolve) => setTimeout(resolve, 10));
    await killed.stop("SIGKILL");
    await committing;
    expect(sessionDirectories(serving.tmp)).toEqual([sessionOf(killed)]);

    const next = await start();
    expect(await reaped(next)).toMatchObject({ removed: 1, kept: 0, failed: 0 });
    expect(await next.stop("stdin")).toBe(0);
    expect(sessionDirectories(serving.tmp)).toEqual([]);
    expect(privateLeftovers(serving.privateRoot)).toEqual({ copies: [], owners: [], sessions: [] });
  });

  it.runIf(existsSync("/proc/self"))(
    "a start that cannot make its session directory leaves no record of it, and says what to do",
    async () => {
      // /proc exists, but nothing can be made in it: the session is claimed, then fails.
      const failed = await runQuire(
        ["serve", "--store", `file:${serving.store}`, "--private-root", serving.privateRoot],
        { cwd: sandbox.root, env: { ...serving.env, TMPDIR: "/proc" } },
      );
      expect(failed.code).toBe(1);
      expect(failed.stderr).toMatch(/^quire: cannot start: cannot create the session directory/);
      expect(failed.stderr).toContain("TMPDIR");
      expect(privateLeftovers(serving.privateRoot)).toEqual({
        copies: [],
        owners: [],
        sessions: [],
      });
    },
  );

  it("a session whose pid now belongs to a live process is not reaped; one whose directory vanished leaves no private state", async () => {
    const reused = await start();
    await commitNote(reused, "a.md", "a\n");
    await reused.stop("SIGKILL");
    // `reused`'s pid is taken by a live process (this test's own): its lock looks held.
    const lock = path.join(sandbox.privateRoot, "sessions", `${sessionOf(reused).slice(6)}.lock`);
    const owner = JSON.parse(readFileSync(lock, "utf8")) as Record<string, unknown>;
    writeFileSync(lock, JSON.stringify({ ...owner, pid: process.pid, host: hostname() }));

    const vanished = await start();
    expect(await reaped(vanished)).toMatchObject({ removed: 0, live: 1 });
    await commitNote(vanished, "b.md", "b\n");
    await vanished.stop("SIGKILL");
    // `vanished`'s directory is gone (a temp cleaner, a reboot), its private state is not.
    rmSync(path.dirname(vanished.notebook()), { recursive: true });

    const next = await start();
    expect(await reaped(next)).toMatchObject({ removed: 1, live: 1, failed: 0 });
    expect(sessionDirectories(serving.tmp)).toEqual([sessionOf(reused), sessionOf(next)].sort());
    expect(readFileSync(path.join(reused.notebook(), "a.md"), "utf8")).toBe("a\n");
    expect(await next.stop("stdin")).toBe(0);
    // Left: `reused`'s copy and record (its lock is "held"), nothing of `vanished`.
    expect(privateLeftovers(serving.privateRoot).copies).toHaveLength(1);
    expect(privateLeftovers(serving.privateRoot).sessions).toEqual([
      `${sessionOf(reused).slice(6)}.json`,
      `${sessionOf(reused).slice(6)}.lock`,
    ]);
  });
});
