/**
 * A working copy pulled from one store, called through a real `quire serve` configured
 * with another (SPEC §4.1; docs/storage.md "Private state"): notes_pull and notes_commit
 * answer the documented INVALID_REQUEST/NESTED_WORKING_COPY envelope, and nothing is
 * written into the copy or either store.
 */
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type Sandbox, assertBuilt, binPath, makeSandbox, runQuire } from "../cli/quireProcess.js";
import { resultProblems } from "./envelopeShape.js";

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

/** Every file below `dir` with its content, sorted by path. */
const snapshot = (dir: string): Array<[string, string]> =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry): [string, string] => {
      const file = path.join(entry.parentPath, entry.name);
      return [path.relative(dir, file), readFileSync(file, "latin1")];
    })
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

const cli = async (store: string, ...args: ReadonlyArray<string>) => {
  const result = await runQuire(
    [...args, "--store", `file:${store}`, "--private-root", sandbox.privateRoot],
    { cwd: sandbox.workspace, env: sandbox.env },
  );
  expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(0);
  return result;
};

describe("a working copy called through quire serve with another store", () => {
  it("notes_pull and notes_commit answer NESTED_WORKING_COPY; nothing is written into the copy or either store", async () => {
    const copy = path.join(sandbox.workspace, "notes");
    await cli(sandbox.store, "pull", copy);
    writeFileSync(path.join(copy, "mine.md"), "only in the first store\n");
    await cli(sandbox.store, "commit", copy, "-m", "first");
    writeFileSync(path.join(copy, "draft.md"), "not committed yet\n");
    const other = path.join(sandbox.root, "other-store");
    const copyBefore = snapshot(copy);
    const storeBefore = snapshot(sandbox.store);

    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        binPath,
        "serve",
        "--store",
        `file:${other}`,
        "--private-root",
        sandbox.privateRoot,
        "--workspace-root",
        sandbox.workspace,
      ],
      env: sandbox.env,
      cwd: sandbox.workspace,
      stderr: "pipe",
    });
    const client = new Client({ name: "other-store-test", version: "0.0.1" });
    await client.connect(transport);
    clients.push(client);

    for (const [name, args] of [
      ["notes_pull", { path: copy }],
      ["notes_commit", { path: copy, message: "into the other store" }],
      ["notes_pull", { path: `${copy}/` }],
    ] as const) {
      const result = await client.callTool({ name, arguments: args });
      expect(result.isError, name).toBe(true);
      expect(resultProblems(result), name).toEqual([]);
      expect(result.structuredContent, name).toMatchObject({
        code: "INVALID_REQUEST",
        reason: "NESTED_WORKING_COPY",
        action: "FIX_REQUEST",
        retryable: false,
      });
      const message = String((result.structuredContent as Record<string, unknown>)["message"]);
      expect(message).toContain("last pulled from another store");
      expect(message).toContain("move the directory aside");
    }
    await client.close();
    clients = [];

    expect(snapshot(copy)).toEqual(copyBefore);
    expect(snapshot(sandbox.store)).toEqual(storeBefore);
    // The other store holds no note: a fresh pull from it gives nothing.
    const fresh = path.join(sandbox.workspace, "fresh");
    const pulled = await cli(other, "pull", fresh);
    expect(pulled.stdout).toContain("generation 0");
    expect(readdirSync(fresh)).toEqual([]);
  });
});
