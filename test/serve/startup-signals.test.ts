/**
 * A signal that reaches `quire serve` while it is still starting (its session directory
 * made, the store probed, the MCP server not yet listening) stops it like a signal
 * while it serves: exit status 0 and its own session directory removed. A host that
 * starts a server only to list its tools and stops it at once used to kill it outright
 * (Node's default for the signal): killed by SIGTERM, its empty session directory left
 * in TMPDIR until some later start of the same private root reaped it.
 */
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Sandbox, assertBuilt, binPath, makeSandbox } from "../cli/quireProcess.js";
import { sessionDirectories } from "../helpers/sessionServe.js";
import * as path from "node:path";

let sandbox: Sandbox;
beforeAll(() => {
  assertBuilt();
  sandbox = makeSandbox();
});
afterAll(() => sandbox.cleanup());

/** Starts serve, signals it as soon as it logs its start, and resolves with its exit. */
const signalWhileStarting = (signal: NodeJS.Signals) =>
  new Promise<{ status: number | string; stderr: string }>((resolve) => {
    const child = spawn(
      process.execPath,
      [binPath, "serve", "--store", `file:${sandbox.store}`, "--private-root", sandbox.privateRoot],
      { env: sandbox.env, stdio: ["pipe", "ignore", "pipe"] },
    );
    let stderr = "";
    let signalled = false;
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
      // Before `serving MCP on stdio`: the window in which Node's default used to apply.
      if (!signalled && stderr.includes('msg="quire serve starting"')) {
        signalled = true;
        child.kill(signal);
      }
    });
    child.on("close", (code, killedBy) => resolve({ status: code ?? killedBy ?? "?", stderr }));
  });

describe("a signal while serve is starting", () => {
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
    it(`${signal}: exit status 0, no session directory left`, async () => {
      const { status, stderr } = await signalWhileStarting(signal);
      expect(status, stderr).toBe(0);
      expect(stderr).toContain(`why=${signal}`);
      expect(sessionDirectories(path.join(sandbox.root, "tmp")), stderr).toEqual([]);
    });
  }
});
