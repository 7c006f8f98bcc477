// Issue 2, done-when 3: the malformed-request battery and two servers sharing one file
// store, all through real `quire serve` processes spoken to by the SDK's stdio client.
import { writeFileSync } from "node:fs";
import * as path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Sandbox, assertBuilt, binPath, makeSandbox } from "../cli/quireProcess.js";

type Structured = Record<string, unknown>;

let sandbox: Sandbox;
const clients: Client[] = [];

const connect = async (privateRoot: string) => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [binPath, "serve", "--store", `file:${sandbox.store}`, "--private-root", privateRoot],
    env: sandbox.env,
    cwd: sandbox.workspace,
    stderr: "pipe",
  });
  const stderr = { text: "" };
  transport.stderr?.on("data", (chunk: Buffer) => {
    stderr.text += chunk.toString("utf8");
  });
  const client = new Client({ name: "requests-test", version: "0.0.1" });
  await client.connect(transport);
  clients.push(client);
  return { client, stderr };
};

beforeAll(() => {
  assertBuilt();
  sandbox = makeSandbox();
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  sandbox.cleanup();
});

const waitFor = async (condition: () => boolean) => {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((r) => setTimeout(r, 25));
};

describe("malformed calls through a real quire serve", () => {
  const cases: ReadonlyArray<{
    title: string;
    name: string;
    args: Record<string, unknown>;
    reason: string;
    action: string;
  }> = [
    {
      title: "an unknown field",
      name: "notes_pull",
      args: { path: "", extra: 1 },
      reason: "INVALID_ARGUMENT",
      action: "FIX_REQUEST",
    },
    {
      title: "an explicit null",
      name: "notes_pull",
      args: { path: null },
      reason: "INVALID_ARGUMENT",
      action: "FIX_REQUEST",
    },
    {
      title: "a blank message",
      name: "notes_commit",
      args: { message: " \t\n" },
      reason: "MESSAGE_BLANK",
      action: "FIX_REQUEST",
    },
    {
      title: "a 16,385-byte message",
      name: "notes_commit",
      args: { message: "x".repeat(16_385) },
      reason: "MESSAGE_TOO_LONG",
      action: "FIX_REQUEST",
    },
    {
      title: "a relative path",
      name: "notes_pull",
      args: { path: "notes/here" },
      reason: "PATH_NOT_ABSOLUTE",
      action: "FIX_REQUEST",
    },
    {
      title: "a path outside the root",
      name: "notes_pull",
      args: { path: "/etc" },
      reason: "PATH_OUTSIDE_ROOT",
      action: "FIX_REQUEST",
    },
    {
      title: "a commit before any pull",
      name: "notes_commit",
      args: { message: "m" },
      reason: "NOT_PULLED",
      action: "PULL_FIRST",
    },
  ];

  it("each returns the INVALID_REQUEST envelope whose diagnosticId is in stderr", async () => {
    const { client, stderr } = await connect(sandbox.privateRoot);
    for (const call of cases) {
      const result = await client.callTool({ name: call.name, arguments: call.args });
      expect(result.isError, call.title).toBe(true);
      const structured = result.structuredContent as Structured;
      expect(structured, call.title).toMatchObject({
        code: "INVALID_REQUEST",
        reason: call.reason,
        action: call.action,
        retryable: false,
        files: [],
        readOnly: [],
        writable: [],
      });
      const diagnosticId = String(structured["diagnosticId"]);
      expect(diagnosticId).toMatch(/^[0-9a-f]{16}$/);
      const text = (result.content as Array<{ text: string }>)[0]?.text ?? "";
      expect(text).toContain(`INVALID_REQUEST · ${call.reason}`);
      expect(text).toContain(`diagnosticId: ${diagnosticId}`);
      await waitFor(() => stderr.text.split(`diagnosticId=${diagnosticId}`).length === 3);
      expect(stderr.text.split(`diagnosticId=${diagnosticId}`).length - 1, call.title).toBe(2);
    }
  });
});

describe("two serve processes on one file store", () => {
  it("see each other's commits", async () => {
    const first = await connect(path.join(sandbox.root, "private-1"));
    const second = await connect(path.join(sandbox.root, "private-2"));
    const pullA = await first.client.callTool({ name: "notes_pull", arguments: {} });
    const pullB = await second.client.callTool({ name: "notes_pull", arguments: {} });
    const dirA = String((pullA.structuredContent as Structured)["path"]);
    const dirB = String((pullB.structuredContent as Structured)["path"]);
    expect(dirA).not.toBe(dirB);
    writeFileSync(path.join(dirA, "from-a.md"), "written by A\n");
    const commitA = await first.client.callTool({
      name: "notes_commit",
      arguments: { message: "A" },
    });
    expect(commitA.structuredContent).toMatchObject({
      code: "OK",
      files: [{ path: "from-a.md", insertions: 1, deletions: 0 }],
    });
    writeFileSync(path.join(dirB, "from-b.md"), "written by B\n");
    const commitB = await second.client.callTool({
      name: "notes_commit",
      arguments: { message: "B" },
    });
    const generationB = (commitB.structuredContent as Structured)["generation"];
    expect(commitB.structuredContent).toMatchObject({ code: "OK" });
    const again = await first.client.callTool({ name: "notes_pull", arguments: {} });
    expect(again.structuredContent).toMatchObject({
      code: "OK",
      generation: generationB,
      files: [{ path: "from-b.md", insertions: 1, deletions: 0 }],
    });
  });
});
