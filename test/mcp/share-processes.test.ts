// Sharing one process among the serve processes of a file store (src/app/share), through
// real `quire serve` processes: the first runs the others' calls; killed, it is replaced
// by the next caller; nothing any call reported as published is ever lost.
import { readFileSync, writeFileSync } from "node:fs";
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
  /** Everything the server wrote to stderr so far. */
  readonly stderr: () => string;
  /** The working copy (the server's session directory), known after the first pull. */
  dir: string;
}

const start = async (name: string, extra: ReadonlyArray<string> = []): Promise<Server> => {
  const served = await serve(
    [
      "--store",
      `file:${sandbox.store}`,
      "--private-root",
      path.join(sandbox.root, `private-${name}`),
      ...extra,
    ],
    { env: { ...sandbox.env, LOG_LEVEL: "share=debug,mcp=info,warn" }, cwd: sandbox.workspace },
  );
  const server: Server = { name, served, stderr: served.stderr, dir: "" };
  servers.push(server);
  return server;
};

const call = async (server: Server, tool: string, args: Record<string, unknown>) => {
  const result = await server.served.client.callTool({ name: tool, arguments: args }, undefined, {
    timeout: 60_000,
  });
  return result.structuredContent as Structured;
};

const pull = async (server: Server) => {
  const result = await call(server, "notes_pull", {});
  expect(result["code"]).toBe("OK");
  server.dir = String(result["path"]);
  return result;
};

/** The diagnosticIds of the calls a server's log says it started. */
const startedIds = (server: Server): ReadonlyArray<string> =>
  [...server.stderr().matchAll(/msg="tool call started".*diagnosticId=([0-9a-f]{16})/g)].map(
    (match) => match[1] ?? "",
  );

/** The diagnosticIds of the calls a server ran for other processes. */
const ranForOthers = (server: Server): ReadonlyArray<string> =>
  [
    ...server
      .stderr()
      .matchAll(/msg="running a call for another process".*diagnosticId=([0-9a-f]{16})/g),
  ].map((match) => match[1] ?? "");

const killed = (server: Server) =>
  new Promise<void>((resolve) => {
    const pid = server.served.pid;
    process.kill(pid, "SIGKILL");
    const poll = () => {
      try {
        process.kill(pid, 0);
        setTimeout(poll, 10);
      } catch {
        resolve();
      }
    };
    poll();
  });

beforeAll(() => {
  assertBuilt();
  sandbox = makeSandbox();
});
afterAll(async () => {
  await Promise.all(servers.map((server) => server.served.client.close().catch(() => undefined)));
  sandbox.cleanup();
});

describe("serve processes of one file store share one of them", () => {
  it("the first runs the others' calls; killed, the next caller takes over; nothing is lost", async () => {
    const a = await start("a");
    const b = await start("b");
    const c = await start("c");
    const solo = await start("solo", ["--no-share"]);
    for (const server of [a, b, c, solo]) await pull(server);
    expect(a.stderr()).toContain("running the calls of other serve processes of this store");

    // b's and c's calls ran in a; solo's never left its process.
    const forwarded = ranForOthers(a);
    expect(forwarded.length).toBe(2);
    expect(startedIds(solo).length).toBe(1);
    for (const id of [...startedIds(b), ...startedIds(c)]) expect(forwarded).toContain(id);
    for (const id of startedIds(solo)) expect(forwarded).not.toContain(id);
    expect(solo.stderr()).not.toContain("module=share");

    // Concurrent commits of every server, then a killed while b and c keep committing.
    // Each commit adds a file of its own, so a later commit cannot carry an earlier one's
    // change: every commit reported OK is checked on its own.
    const published: Array<string> = [];
    const commitFile = async (server: Server, round: number) => {
      const name = `${server.name}-${round}.md`;
      writeFileSync(path.join(server.dir, name), `${name}\n`);
      const result = await call(server, "notes_commit", { message: name });
      // An OK whose call was cut off and re-run lists only what was left to publish.
      if (result["code"] === "OK") {
        published.push(name);
      } else
        // The whole result on failure: which call went wrong, and how, is in it.
        expect(
          ["REMOTE_BUSY", "STORAGE_FAILURE", "RECOVERY_FAILURE"],
          JSON.stringify(result),
        ).toContain(result["code"]);
    };
    const loop = async (server: Server, from: number, rounds: number) => {
      for (let round = from; round < from + rounds; round++) await commitFile(server, round);
    };
    await Promise.all([loop(a, 0, 3), loop(b, 0, 3), loop(c, 0, 3), loop(solo, 0, 3)]);
    const whileKilled = Promise.all([loop(b, 3, 8), loop(c, 3, 8)]);
    await new Promise((resolve) => setTimeout(resolve, 150));
    await killed(a);
    await whileKilled;

    // b and c noticed: a call cut off mid-flight or refused at connect ran in its caller.
    expect(`${b.stderr()}${c.stderr()}`).toMatch(
      /msg="the sharing process did not answer; running the call here".*reason=(Broken|Unreachable)/,
    );

    // Someone took over, and c's later calls ran there or in c itself.
    const takers = [b, c].filter((server) =>
      server.stderr().includes("running the calls of other serve processes of this store"),
    );
    expect(takers.length).toBeGreaterThan(0);

    // Every file a commit reported as published is in the notebook.
    const final = await pull(solo);
    expect(final["code"]).toBe("OK");
    for (const name of published)
      expect(readFileSync(path.join(solo.dir, name), "utf8")).toBe(`${name}\n`);
    expect(published.length).toBeGreaterThanOrEqual(20);
  });
});
