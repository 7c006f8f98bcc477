// Sharing one process among the serve processes of a file store (src/app/share), through
// real `quire serve` processes: the first runs the others' calls; killed, it is replaced
// by the next caller; nothing any call reported as published is ever lost.
import { readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Sandbox, assertBuilt, binPath, makeSandbox } from "../cli/quireProcess.js";

type Structured = Record<string, unknown>;

let sandbox: Sandbox;
const servers: Array<Server> = [];

interface Server {
  readonly name: string;
  readonly client: Client;
  readonly transport: StdioClientTransport;
  readonly stderr: { text: string };
  /** The working copy (the server's session directory), known after the first pull. */
  dir: string;
}

const start = async (name: string, extra: ReadonlyArray<string> = []): Promise<Server> => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [
      binPath,
      "serve",
      "--store",
      `file:${sandbox.store}`,
      "--private-root",
      path.join(sandbox.root, `private-${name}`),
      ...extra,
    ],
    env: { ...sandbox.env, LOG_LEVEL: "share=debug,mcp=info,warn" },
    cwd: sandbox.workspace,
    stderr: "pipe",
  });
  const stderr = { text: "" };
  transport.stderr?.on("data", (chunk: Buffer) => {
    stderr.text += chunk.toString("utf8");
  });
  const client = new Client({ name: `share-test-${name}`, version: "0.0.1" });
  await client.connect(transport);
  const server: Server = { name, client, transport, stderr, dir: "" };
  servers.push(server);
  return server;
};

const call = async (server: Server, tool: string, args: Record<string, unknown>) => {
  const result = await server.client.callTool({ name: tool, arguments: args }, undefined, {
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
  [...server.stderr.text.matchAll(/msg="tool call started".*diagnosticId=([0-9a-f]{16})/g)].map(
    (match) => match[1] ?? "",
  );

/** The diagnosticIds of the calls a server ran for other processes. */
const ranForOthers = (server: Server): ReadonlyArray<string> =>
  [
    ...server.stderr.text.matchAll(
      /msg="running a call for another process".*diagnosticId=([0-9a-f]{16})/g,
    ),
  ].map((match) => match[1] ?? "");

const killed = (server: Server) =>
  new Promise<void>((resolve) => {
    const pid = server.transport.pid;
    if (pid === null) throw new Error("the server has no pid");
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
  await Promise.all(servers.map((server) => server.client.close().catch(() => undefined)));
  sandbox.cleanup();
});

describe("serve processes of one file store share one of them", () => {
  it("the first runs the others' calls; killed, the next caller takes over; nothing is lost", async () => {
    const a = await start("a");
    const b = await start("b");
    const c = await start("c");
    const solo = await start("solo", ["--no-share"]);
    for (const server of [a, b, c, solo]) await pull(server);
    expect(a.stderr.text).toContain("running the calls of other serve processes of this store");

    // b's and c's calls ran in a; solo's never left its process.
    const forwarded = ranForOthers(a);
    expect(forwarded.length).toBe(2);
    expect(startedIds(solo).length).toBe(1);
    for (const id of [...startedIds(b), ...startedIds(c)]) expect(forwarded).toContain(id);
    for (const id of startedIds(solo)) expect(forwarded).not.toContain(id);
    expect(solo.stderr.text).not.toContain("module=share");

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
        expect(["REMOTE_BUSY", "STORAGE_FAILURE", "RECOVERY_FAILURE"]).toContain(result["code"]);
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
    expect(`${b.stderr.text}${c.stderr.text}`).toMatch(
      /msg="the sharing process did not answer; running the call here".*reason=(Broken|Unreachable)/,
    );

    // Someone took over, and c's later calls ran there or in c itself.
    const takers = [b, c].filter((server) =>
      server.stderr.text.includes("running the calls of other serve processes of this store"),
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
