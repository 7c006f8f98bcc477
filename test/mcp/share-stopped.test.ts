// A sharing `serve` process stopped (SIGSTOP) in the middle of other processes' calls
// (src/app/share): each caller answers while it is still stopped — its own result when
// it could take the call over, else an answer that claims nothing — and once it resumes,
// nothing is lost and nothing is published twice.
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Sandbox, assertBuilt, makeSandbox } from "../cli/quireProcess.js";
import { type Served, serve } from "../serve/serve.js";

type Structured = Record<string, unknown>;

let sandbox: Sandbox;
const servers: Array<Server> = [];

interface Server {
  readonly name: string;
  readonly served: Served;
  readonly privateRoot: string;
  /** The working copy (the server's session directory), known after the first pull. */
  dir: string;
}

const start = async (
  name: string,
  extra: ReadonlyArray<string> = [],
  store = sandbox.store,
): Promise<Server> => {
  const privateRoot = path.join(sandbox.root, `private-${name}`);
  const served = await serve(
    ["--store", `file:${store}`, "--private-root", privateRoot, ...extra],
    { env: { ...sandbox.env, LOG_LEVEL: "share=debug,mcp=info,warn" }, cwd: sandbox.workspace },
  );
  const server: Server = { name, served, privateRoot, dir: "" };
  servers.push(server);
  return server;
};

const call = async (server: Server, tool: string, args: Record<string, unknown> = {}) => {
  const result = await server.served.client.callTool({ name: tool, arguments: args });
  return result.structuredContent as Structured;
};

const pull = async (server: Server) => {
  const result = await call(server, "notes_pull");
  expect(result["code"], JSON.stringify(result)).toBe("OK");
  server.dir = String(result["path"]);
  return result;
};

/** The diagnosticIds of the tool calls a server's log says it started, in order. */
const startedIds = (server: Server): ReadonlyArray<string> =>
  [...server.served.stderr().matchAll(/msg="tool call started".*diagnosticId=([0-9a-f]{16})/g)].map(
    (match) => match[1] ?? "",
  );

/** Resolves once `sharer` logs that it runs the call `id` for another process. */
const runningFor = (sharer: Server, id: string) =>
  sharer.served.waitForLine(
    (line) => line.includes('msg="running a call for another process"') && line.includes(id),
  );

/** Resolves with the diagnosticId of `server`'s call number `index` once it has started. */
const callId = async (server: Server, index: number): Promise<string> => {
  await server.served.waitForLine(() => startedIds(server).length > index);
  return startedIds(server)[index] ?? "";
};

/** The state letter of a process (`T`: stopped), from /proc. */
const processState = (pid: number): string => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
};

const bootId = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();

/**
 * Takes `server`'s working-copy lock on behalf of this (live) test process, as another
 * process working on the copy would; returns its release.
 */
const holdCopyLock = (server: Server): (() => void) => {
  const copies = path.join(server.privateRoot, "copies");
  const [copy, ...others] = readdirSync(copies);
  if (copy === undefined || others.length > 0) throw new Error(`not one copy in ${copies}`);
  const lock = path.join(copies, copy, "lock");
  writeFileSync(
    lock,
    JSON.stringify({ pid: process.pid, host: hostname(), boot: bootId, token: "held-by-test" }),
    { flag: "wx" },
  );
  return () => rmSync(lock, { force: true });
};

/**
 * Resolves once `server`'s working copy is free: a call answered for it by a sharing
 * process holds the copy's lock until its tidy-up after the answer is done, and nothing
 * takes it again until `server`'s next call.
 */
const copyFree = async (server: Server): Promise<void> => {
  const copies = path.join(server.privateRoot, "copies");
  const [copy] = readdirSync(copies);
  if (copy === undefined) throw new Error(`no copy in ${copies}`);
  while (existsSync(path.join(copies, copy, "lock"))) await new Promise((r) => setTimeout(r, 5));
};

beforeAll(() => {
  assertBuilt();
  sandbox = makeSandbox();
});
afterAll(async () => {
  await Promise.all(servers.map((server) => server.served.client.close().catch(() => undefined)));
  sandbox.cleanup();
});

describe("a sharing serve process stopped mid-call", () => {
  it("its callers answer while it is still stopped; nothing is lost or published twice", async () => {
    const a = await start("a");
    const b = await start("b");
    const c = await start("c");
    const d = await start("d");
    const e = await start("e2");
    const solo = await start("solo", ["--no-share"]);
    for (const server of [a, b, c, d, e, solo]) await pull(server);
    expect(a.served.stderr()).toContain("running the calls of other serve processes of this store");
    const before = Number((await pull(solo))["generation"]);

    // Each call reaches a (which acknowledges it) and waits there for a copy lock held
    // elsewhere; then a stops.
    const releases = new Map([b, c, d, e].map((server) => [server, holdCopyLock(server)]));
    writeFileSync(path.join(c.dir, "c.md"), "from c\n");
    writeFileSync(path.join(d.dir, "d.md"), "from d\n");
    const pulled = call(b, "notes_pull");
    const committedC = call(c, "notes_commit", { message: "c" });
    const committedD = call(d, "notes_commit", { message: "d" });
    const pulledE = call(e, "notes_pull");
    // Awaited below; a failure of one must not leave the others' rejections unobserved.
    for (const pending of [pulled, committedC, committedD, pulledE]) pending.catch(() => undefined);
    await runningFor(a, await callId(b, 1));
    await runningFor(a, await callId(c, 1));
    await runningFor(a, await callId(d, 1));
    await runningFor(a, await callId(e, 1));

    process.kill(a.served.pid, "SIGSTOP");
    try {
      while (processState(a.served.pid) !== "T") await new Promise((r) => setTimeout(r, 5));
      // b's and d's copies come free (a, stopped, cannot take them); c's and e's stay
      // held, as if by the stopped process in the middle of c's commit and e's pull.
      releases.get(b)?.();
      releases.get(d)?.();

      // Without a bound, each of these would wait as long as a stays stopped.
      const b1 = await pulled;
      expect(processState(a.served.pid)).toBe("T");
      expect(b1["code"], JSON.stringify(b1)).toBe("OK");

      const d1 = await committedD;
      expect(processState(a.served.pid)).toBe("T");
      expect(d1["code"], JSON.stringify(d1)).toBe("OK");
      expect(d1["files"]).toEqual([{ path: "d.md", insertions: 1, deletions: 0 }]);
      expect(d1["generation"]).toBe(before + 1);

      const c1 = await committedC;
      expect(processState(a.served.pid)).toBe("T");
      expect([c1["code"], c1["reason"], c1["action"], c1["retryable"]], JSON.stringify(c1)).toEqual(
        ["STORAGE_FAILURE", "PUBLICATION_UNKNOWN", "PULL_TO_VERIFY", false],
      );
      const e1 = await pulledE;
      expect([e1["code"], e1["reason"], e1["retryable"]], JSON.stringify(e1)).toEqual([
        "ENGINE_FAILED",
        "BUSY",
        true,
      ]);
      // The lock file names its holder (this test process, not the stopped one): the
      // answers say who it is, and never that the stopped process holds the copy.
      for (const answer of [c1, e1]) {
        expect(String(answer["message"])).toContain(`pid ${process.pid} on ${hostname()}`);
        expect(String(answer["message"])).not.toContain("still holds");
      }

      // The callers took their calls over; each logs why.
      for (const server of [b, c, d, e])
        expect(server.served.stderr()).toContain(
          "the sharing process went silent during the call; taking the call over",
        );
    } finally {
      for (const release of releases.values()) release();
      process.kill(a.served.pid, "SIGCONT");
    }

    // a resumed: c does what its answer says — pull, then commit again.
    await pull(c);
    const c2 = await call(c, "notes_commit", { message: "c again" });
    expect(c2["code"], JSON.stringify(c2)).toBe("OK");

    // Both edits are published, each exactly once: two generations, whatever a did
    // with the calls it was running when it stopped.
    const final = await pull(solo);
    expect(readFileSync(path.join(solo.dir, "c.md"), "utf8")).toBe("from c\n");
    expect(readFileSync(path.join(solo.dir, "d.md"), "utf8")).toBe("from d\n");
    expect(final["generation"]).toBe(before + 2);
    // And a still works.
    await pull(a);
  }, 120_000);

  it("stopped before reading a call: the caller runs it, and the resumed process never does", async () => {
    // Another store, so another sharing process, and callers that have not been told to
    // leave a silent one alone.
    const store = path.join(sandbox.root, "store-unread");
    const s = await start("s", [], store);
    const u = await start("u", [], store);
    const v = await start("v", [], store);
    const check = await start("unread-check", ["--no-share"], store);
    for (const server of [s, u, v, check]) await pull(server);
    const before = Number((await pull(check))["generation"]);
    // Stopped before reading u's call, not while it still holds u's copy from the pull
    // it answered (that case answers ENGINE_FAILED/BUSY: test/app/share.test.ts).
    await copyFree(u);

    process.kill(s.served.pid, "SIGSTOP");
    let draft = "";
    try {
      while (processState(s.served.pid) !== "T") await new Promise((r) => setTimeout(r, 5));
      // s cannot read u's commit: u gives up on it and publishes it itself.
      writeFileSync(path.join(u.dir, "u.md"), "from u\n");
      const committed = await call(u, "notes_commit", { message: "u" });
      expect(committed["code"], JSON.stringify(committed)).toBe("OK");
      expect(u.served.stderr()).toMatch(
        /msg="the sharing process did not answer; running the call here".*reason=Unresponsive/,
      );
      // The copy moves on: an edit nobody asked to publish.
      draft = path.join(u.dir, "draft.md");
      writeFileSync(draft, "not to be published\n");
    } finally {
      process.kill(s.served.pid, "SIGCONT");
    }
    // s resumes with u's request still unread in its connection, then runs v's call
    // (sent after it), so it has read u's by then.
    const commitId = await callId(u, 1);
    const vPulled = pull(v);
    await runningFor(s, await callId(v, 1));
    await vPulled;
    await pull(s);

    // u's commit ran once, in u: s never started it.
    expect(s.served.stderr()).not.toContain(commitId);
    const final = await pull(check);
    expect(final["generation"]).toBe(before + 1);
    expect(readFileSync(path.join(check.dir, "u.md"), "utf8")).toBe("from u\n");
    expect(existsSync(path.join(check.dir, "draft.md"))).toBe(false);
    expect(readFileSync(draft, "utf8")).toBe("not to be published\n");
  }, 120_000);

  it("killed mid-call (SIGKILL): its callers run their calls themselves, once", async () => {
    // Another store, so another sharing process, and callers that have not been told to
    // leave a silent one alone.
    const store = path.join(sandbox.root, "store-killed");
    const k = await start("k", [], store);
    const e = await start("e", [], store);
    const check = await start("check", ["--no-share"], store);
    for (const server of [k, e, check]) await pull(server);
    const before = Number((await pull(check))["generation"]);
    const release = holdCopyLock(e);
    writeFileSync(path.join(e.dir, "e.md"), "from e\n");
    const committed = call(e, "notes_commit", { message: "e" });
    committed.catch(() => undefined);
    await runningFor(k, await callId(e, 1));
    process.kill(k.served.pid, "SIGKILL");
    // e noticed at once and runs the commit itself: it waits for the copy's lock (held
    // here, as by the killed process's call), then publishes.
    await e.served.waitForLine((line) =>
      /msg="the sharing process did not answer; running the call here".*reason=Broken/.test(line),
    );
    release();
    const e1 = await committed;
    expect(e1["code"], JSON.stringify(e1)).toBe("OK");
    expect(e1["files"]).toEqual([{ path: "e.md", insertions: 1, deletions: 0 }]);
    const final = await pull(check);
    expect(final["generation"]).toBe(before + 1);
    expect(readFileSync(path.join(check.dir, "e.md"), "utf8")).toBe("from e\n");
  }, 120_000);
});
