/**
 * A local operation refused for a permission (EACCES, EPERM) or a read-only file system
 * (EROFS) fails the same way on every retry: it is ENGINE_FAILED/LOCAL_ACCESS, not
 * retryable, its action says to fix the permission — through the CLI and `serve`, real
 * processes. A transient local failure (too many open files) stays LOCAL_IO, retryable.
 * As root (who may write anything) the processes run as `nobody`.
 */
import { spawn } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { Effect } from "effect";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as ids from "../../src/adapters/idGenerator.js";
import * as memFs from "../../src/adapters/memFileSystem.js";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import { makeNotebook } from "../../src/app/usecases/notebookLayer.js";
import { FsError } from "../../src/ports/FileSystem.js";
import { baseOptions, failure } from "../app/memNotebook.js";
import { type Sandbox, assertBuilt, binPath, makeSandbox } from "./quireProcess.js";

const nobody = 65534;
const asRoot = process.getuid?.() === 0;

let box: Sandbox;
beforeEach(() => {
  assertBuilt();
  box = makeSandbox();
});
afterEach(() => {
  chmodTree(box.root, true);
  box.cleanup();
});

/** Every directory below `root` made writable (or not) by its owner. */
const chmodTree = (root: string, writable: boolean): void => {
  chmodSync(root, writable ? 0o755 : 0o555);
  for (const entry of readdirSync(root, { withFileTypes: true }))
    if (entry.isDirectory()) chmodTree(path.join(root, entry.name), writable);
};

const chownTree = (root: string): void => {
  chownSync(root, nobody, nobody);
  for (const entry of readdirSync(root, { withFileTypes: true })) {
    const child = path.join(root, entry.name);
    if (entry.isDirectory()) chownTree(child);
    else chownSync(child, nobody, nobody);
  }
};

/** quire as a user permissions apply to; its stdout, stderr and exit status. */
const quire = (
  args: ReadonlyArray<string>,
  input?: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> =>
  new Promise((resolve, reject) => {
    const command = asRoot ? "setpriv" : process.execPath;
    const prefix = asRoot
      ? [`--reuid=${nobody}`, `--regid=${nobody}`, "--clear-groups", process.execPath]
      : [];
    const child = spawn(command, [...prefix, binPath, ...args], {
      cwd: box.workspace,
      env: box.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? "");
  });

const options = () => [
  "--store",
  `file:${box.store}`,
  "--private-root",
  box.privateRoot,
  "--workspace-root",
  box.workspace,
];

describe("a permission failure", () => {
  it("is not retryable, and says to fix the permission (CLI and serve)", async () => {
    const copy = path.join(box.workspace, "a");
    mkdirSync(copy);
    if (asRoot) chownTree(box.root);
    expect((await quire(["pull", copy, ...options()])).code).toBe(0);
    writeFileSync(path.join(copy, "n.md"), "one\n");
    if (asRoot) chownSync(path.join(copy, "n.md"), nobody, nobody);
    // The private root is made read-only: every call fails there, however often repeated.
    chmodTree(box.privateRoot, false);

    const cli = await quire(["commit", copy, "-m", "n", ...options()]);
    expect(cli.stderr).toContain("ENGINE_FAILED · LOCAL_ACCESS");
    expect(cli.stderr).toContain("retryable: false");
    expect(cli.stderr).toContain("action: CHECK_CONFIGURATION");
    expect(cli.stderr).toContain("detail: permission denied");
    expect(cli.code).toBe(1);

    const lines = [
      {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "t", version: "1" },
        },
      },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      {
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: { name: "notes_commit", arguments: { path: copy, message: "n" } },
      },
    ];
    const served = await quire(
      ["serve", "--no-share", ...options()],
      lines.map((line) => JSON.stringify(line)).join("\n") + "\n",
    );
    const answer = served.stdout
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as { id?: number; result?: { structuredContent?: unknown } })
      .find((message) => message.id === 2);
    expect(answer?.result?.structuredContent).toMatchObject({
      code: "ENGINE_FAILED",
      reason: "LOCAL_ACCESS",
      action: "CHECK_CONFIGURATION",
      retryable: false,
      detail: "permission denied",
    });
  });
});

describe("a transient local failure", () => {
  it("stays LOCAL_IO, retryable", async () => {
    const { service } = memFs.make({ "/ws/a/.keep": "" });
    const fs = {
      ...service,
      openTree: (root: string) =>
        Effect.fail(
          new FsError({ reason: "TooManyOpenFiles", path: root, message: "EMFILE: too many" }),
        ),
    };
    const notebook = Effect.runSync(
      makeNotebook({ store: memoryStore.make(), fs, ids: ids.make(), options: baseOptions }),
    );
    const error = await failure(notebook.pull({ path: "/ws/a" }));
    expect([error.code, error.reason, error.action, error.retryable, error.detail]).toEqual([
      "ENGINE_FAILED",
      "LOCAL_IO",
      "RETRY_LATER",
      true,
      "too many open files",
    ]);
  });
});

describe("a start refused for a permission", () => {
  it("is LOCAL_ACCESS, not retryable, in --json, the CLI's line and serve's line", async () => {
    const copy = path.join(box.workspace, "a");
    mkdirSync(copy);
    if (asRoot) chownTree(box.root);
    // The private root is to be made in a directory this user may not write.
    const locked = path.join(box.root, "locked");
    mkdirSync(locked, 0o555);
    chmodSync(locked, 0o555);
    const startOptions = [
      "--store",
      `file:${box.store}`,
      "--private-root",
      path.join(locked, "private"),
      "--workspace-root",
      box.workspace,
    ];

    const json = await quire(["status", copy, "--json", ...startOptions]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({
      code: "ENGINE_FAILED",
      reason: "LOCAL_ACCESS",
      action: "CHECK_CONFIGURATION",
      retryable: false,
      detail: "permission denied",
    });
    expect((JSON.parse(json.stdout) as { message: string }).message).toContain("--private-root");

    for (const args of [
      ["status", copy, ...startOptions],
      ["serve", "--no-share", ...startOptions],
    ]) {
      const text = await quire(args);
      expect(text.code).toBe(1);
      expect(text.stderr).toMatch(
        /^quire: permission denied: ENGINE_FAILED · LOCAL_ACCESS: cannot create the private root: .*--private-root/,
      );
      expect(text.stderr.trim().split("\n")).toHaveLength(1);
    }
  });
});

describe("quire mcp and a configuration directory this user cannot write", () => {
  it("status says install would refuse (the file is replaced by a new one renamed there), and install refuses, writing nothing", async () => {
    const file = path.join(box.workspace, ".mcp.json");
    writeFileSync(file, "{}\n");
    if (asRoot) chownTree(box.root);
    chmodSync(box.workspace, 0o555);
    const status = await quire(["mcp", "status"]);
    expect(status.code, status.stderr).toBe(0);
    // The file itself is writable; its directory is not, and a missing file's is not either.
    expect(status.stdout).toContain(
      `claude-code project: ${file}\n  not registered\n  quire mcp would refuse to edit it: the directory ${box.workspace} is not writable by this user`,
    );
    expect(status.stdout).toMatch(
      new RegExp(
        `cursor project: ${box.workspace}/\\.cursor/mcp\\.json\\n  not registered \\(no file\\)\\n  quire mcp would refuse to edit it: the directory ${box.workspace} is not writable by this user`,
      ),
    );
    const installed = await quire(["mcp", "install", "claude-code", "--scope", "project"]);
    expect(installed.code).toBe(1);
    expect(installed.stderr).toContain(
      `the directory ${box.workspace} is not writable by this user`,
    );
    expect(readFileSync(file, "utf8")).toBe("{}\n");
    expect(readdirSync(box.workspace).sort()).toEqual([".mcp.json"]);
  });
});
