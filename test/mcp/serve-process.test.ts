import { spawn } from "node:child_process";
import { existsSync, readFileSync, readdirSync, realpathSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  type Sandbox,
  assertBuilt,
  binPath,
  makeSandbox,
  packageVersion,
  runQuire,
} from "../cli/quireProcess.js";

let sandbox: Sandbox;
let clients: Array<Client> = [];
beforeAll(assertBuilt);
beforeEach(() => {
  sandbox = makeSandbox();
});
afterEach(async () => {
  await Promise.all(clients.map((client) => client.close()));
  clients = [];
  sandbox.cleanup();
});

const serveArgs = (...extra: ReadonlyArray<string>) => [
  "serve",
  "--store",
  `file:${sandbox.store}`,
  "--private-root",
  sandbox.privateRoot,
  ...extra,
];

/** An MCP client that spawns `quire serve`, with the server's stderr collected. */
const connect = async (...extra: ReadonlyArray<string>) => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [binPath, ...serveArgs(...extra)],
    env: sandbox.env,
    cwd: sandbox.workspace,
    stderr: "pipe",
  });
  const stderr = { text: "", waiters: [] as Array<() => void> };
  transport.stderr?.on("data", (chunk: Buffer) => {
    stderr.text += chunk.toString("utf8");
    for (const wake of stderr.waiters.splice(0)) wake();
  });
  /** Resolves once stderr contains `needle`. */
  const stderrContains = async (needle: string) => {
    while (!stderr.text.includes(needle)) {
      await new Promise<void>((resolve) => stderr.waiters.push(resolve));
    }
  };
  const client = new Client({ name: "process-test", version: "0.0.1" });
  await client.connect(transport);
  clients.push(client);
  return { client, stderr, stderrContains };
};

type Structured = Record<string, unknown>;
const textOf = (result: Record<string, unknown>) =>
  (result["content"] as Array<{ type: string; text: string }>)[0]?.text ?? "";

describe("quire serve over stdio", () => {
  it("lists exactly the two tools and advertises name, version and instructions", async () => {
    const { client } = await connect();
    expect(client.getServerVersion()).toEqual({ name: "quire", version: packageVersion });
    expect(client.getServerCapabilities()).toEqual({ tools: {} });
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(["notes_pull", "notes_commit"]);
    for (const tool of tools) {
      expect(tool.inputSchema).toMatchObject({ additionalProperties: false });
      expect(tool.outputSchema).toBeUndefined();
    }
  });

  it("notes_pull without path returns the session notebook directory and the full result", async () => {
    const { client } = await connect();
    const result = await client.callTool({ name: "notes_pull" });
    expect(result.isError).toBeFalsy();
    const directory = textOf(result);
    expect(directory).toMatch(/[\\/]quire-[0-9a-f]{16}[\\/]notebook$/);
    expect(directory.startsWith(realpathSync(path.join(sandbox.root, "tmp")))).toBe(true);
    expect(client.getInstructions()).toContain(`The notebook directory is ${directory}. `);
    expect(result.structuredContent).toEqual({
      code: "OK",
      path: directory,
      generation: 0,
      filesChanged: 0,
      insertions: 0,
      deletions: 0,
      files: [],
      readOnly: [],
      writable: [],
    });

    writeFileSync(path.join(directory, "a.md"), "hello\n");
    const commit = await client.callTool({ name: "notes_commit", arguments: { message: "add a" } });
    expect(commit.isError).toBeFalsy();
    expect(commit.structuredContent).toMatchObject({
      code: "OK",
      path: directory,
      generation: 1,
      files: [{ path: "a.md", insertions: 1, deletions: 0 }],
    });
  });

  it("an error's diagnosticId is on its start and completion log records on stderr", async () => {
    const { client, stderr, stderrContains } = await connect();
    const result = await client.callTool({ name: "notes_commit", arguments: { message: " " } });
    expect(result.isError).toBe(true);
    const structured = result.structuredContent as Structured;
    expect(structured).toMatchObject({ code: "INVALID_REQUEST", reason: "MESSAGE_BLANK" });
    const diagnosticId = String(structured["diagnosticId"]);
    expect(diagnosticId).toMatch(/^[0-9a-f]{16}$/);
    await stderrContains(`msg="tool call completed"`);
    const records = stderr.text
      .split("\n")
      .filter((line) => line.includes(`diagnosticId=${diagnosticId}`));
    expect(records).toHaveLength(2);
    expect(records[0]).toMatch(/ level=info module=mcp msg="tool call started"/);
    expect(records[1]).toMatch(/ module=mcp msg="tool call completed"/);
    expect(records[1]).toContain(" code=INVALID_REQUEST");
  });

  it("with --workspace-root, that directory is the notebook directory; path sets are advertised", async () => {
    const { client } = await connect(
      "--workspace-root",
      sandbox.workspace,
      "--writable",
      "notes",
      "--read-only",
      "notes/fixed",
    );
    expect(client.getInstructions()).toContain(
      `The notebook directory is ${realpathSync(sandbox.workspace)}. `,
    );
    expect(client.getInstructions()).toContain("Writable paths: `notes`.");
    const result = await client.callTool({ name: "notes_pull" });
    expect(textOf(result)).toBe(
      `${realpathSync(sandbox.workspace)} (writable: notes; read-only: notes/fixed; longest match decides)`,
    );
    expect(result.structuredContent).toMatchObject({
      readOnly: ["notes/fixed"],
      writable: ["notes"],
    });
  });
});

/** Writes raw JSON-RPC lines to `quire serve`, closes stdin, and collects everything. */
const rawSession = (lines: ReadonlyArray<object>) =>
  runQuire(serveArgs(), {
    cwd: sandbox.workspace,
    env: sandbox.env,
    input: lines.map((line) => `${JSON.stringify(line)}\n`).join(""),
  });

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "raw", version: "1" },
  },
};

describe("quire serve as a process", () => {
  it("stdout carries only JSON-RPC; closing stdin lets the call in flight finish, then exits 0", async () => {
    const result = await rawSession([
      initialize,
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 2, method: "tools/list" },
      {
        jsonrpc: "2.0",
        id: 3,
        method: "tools/call",
        params: { name: "notes_pull", arguments: {} },
      },
      {
        jsonrpc: "2.0",
        id: 4,
        method: "tools/call",
        params: { name: "notes_pull", arguments: { x: null } },
      },
    ]);
    expect(result.code).toBe(0);
    const lines = result.stdout.split("\n").filter((line) => line !== "");
    const messages = lines.map(
      (line) => JSON.parse(line) as { jsonrpc: string; id: number; result: Structured },
    );
    for (const message of messages) expect(message.jsonrpc).toBe("2.0");
    expect(messages.map((message) => message.id).sort()).toEqual([1, 2, 3, 4]);
    const pull = messages.find((message) => message.id === 3);
    expect(pull?.result["structuredContent"]).toMatchObject({ code: "OK", generation: 0 });
    const bad = messages.find((message) => message.id === 4);
    expect(bad?.result).toMatchObject({
      isError: true,
      structuredContent: { reason: "INVALID_ARGUMENT" },
    });
    for (const line of result.stderr.split("\n").filter((l) => l !== "")) {
      expect(line).toMatch(/^ts=\S+ level=\w+ module=\w+ msg="/);
    }
  });

  it("SIGTERM stops the server with status 0", async () => {
    const child = spawn(process.execPath, [binPath, ...serveArgs()], {
      cwd: sandbox.workspace,
      env: sandbox.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stderr = "";
    const served = new Promise<void>((resolve) => {
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
        stderr += chunk;
        if (stderr.includes("serving MCP on stdio")) resolve();
      });
    });
    const exited = new Promise<number | null>((resolve) =>
      child.on("close", (code) => resolve(code)),
    );
    await served;
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(stderr).toMatch(/msg="stopping" why=SIGTERM/);
  });

  it("an unusable store is one stderr line and a non-zero exit, nothing served", async () => {
    const result = await runQuire(
      [
        "serve",
        "--store",
        "s3://bkt",
        "--endpoint",
        "http://127.0.0.1:1",
        "--private-root",
        sandbox.privateRoot,
      ],
      {
        cwd: sandbox.workspace,
        env: {
          ...sandbox.env,
          AWS_ACCESS_KEY_ID: "AKIAABCDEFGHIJKLMNOP",
          AWS_SECRET_ACCESS_KEY: "x".repeat(30),
        },
      },
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    // Unreachable is a storage failure, not an incompatible store.
    expect(result.stderr).toMatch(/^quire: store unavailable: STORAGE_FAILURE · [^\n]+\n$/);
  });

  it("at shutdown removes its session directory when everything is published, and keeps it otherwise", async () => {
    const settled = async (check: () => boolean) => {
      for (let waited = 0; !check(); waited += 50) {
        if (waited > 15_000) throw new Error("serve did not end its session within 15 s");
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    const session = async (edit: (client: Client, directory: string) => Promise<void>) => {
      const { client, stderr } = await connect();
      const directory = textOf(await client.callTool({ name: "notes_pull" }));
      await edit(client, directory);
      await client.close(); // serve stops as a host stops it: stdin closed, SIGTERM
      clients = clients.filter((c) => c !== client);
      return { directory, parent: path.dirname(directory), stderr };
    };

    // A note written and committed: everything is published, nothing is left behind.
    const published = await session(async (client, directory) => {
      writeFileSync(path.join(directory, "a.md"), "hello\n");
      const commit = await client.callTool({ name: "notes_commit", arguments: { message: "a" } });
      expect(commit.isError).toBeFalsy();
    });
    await settled(() => !existsSync(published.parent));
    expect(readdirSync(path.join(sandbox.privateRoot, "copies")).length).toBe(0);

    // A note written but never committed: the directory and the note stay.
    const unpublished = await session(async (_client, directory) => {
      writeFileSync(path.join(directory, "b.md"), "not yet\n");
    });
    await settled(() => unpublished.stderr.text.includes("kept the session directory"));
    expect(readFileSync(path.join(unpublished.directory, "b.md"), "utf8")).toBe("not yet\n");
    expect(readFileSync(path.join(unpublished.directory, "a.md"), "utf8")).toBe("hello\n");
  });
});
