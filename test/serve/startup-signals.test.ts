/**
 * A signal that reaches `quire serve` while it is still starting (its session directory
 * made, the store probed, the MCP server not yet listening) stops it like a signal
 * while it serves: exit status 0 and its own session directory removed. A host that
 * starts a server only to list its tools and stops it at once used to kill it outright
 * (Node's default for the signal): killed by SIGTERM, its empty session directory left
 * in TMPDIR until some later start of the same private root reaped it.
 */
import { spawn } from "node:child_process";
import { createServer, type Server, type Socket } from "node:net";
import { rmSync } from "node:fs";
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

describe("a signal while the start is held up", () => {
  // A store that accepts connections and never answers: the start's probe waits (about
  // 40 s) before it would fail.
  let silent: Server;
  let port: number;
  const sockets: Array<Socket> = [];
  beforeAll(async () => {
    silent = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const address = silent.address();
    port = typeof address === "object" && address !== null ? address.port : 0;
  });
  afterAll(() => {
    for (const socket of sockets) socket.destroy();
    silent.close();
  });

  it("one SIGTERM still stops it (143), rather than waiting for the probe to give up", async () => {
    const tmp = path.join(sandbox.root, "tmp");
    const child = spawn(
      process.execPath,
      [
        binPath,
        "serve",
        "--store",
        "s3://bkt",
        "--endpoint",
        `http://127.0.0.1:${port}`,
        "--private-root",
        sandbox.privateRoot,
      ],
      {
        env: { ...sandbox.env, AWS_ACCESS_KEY_ID: "AKIAEXAMPLE", AWS_SECRET_ACCESS_KEY: "x" },
        stdio: ["pipe", "ignore", "pipe"],
      },
    );
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const exited = new Promise<number | string>((resolve) =>
      child.on("close", (code, killedBy) => resolve(code ?? killedBy ?? "?")),
    );
    // The session directory is claimed after the signals are held, before the probe.
    for (let i = 0; i < 400 && sessionDirectories(tmp).length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(sessionDirectories(tmp).length, stderr).toBe(1);
    child.kill("SIGTERM");
    expect(await exited, stderr).toBe(143);
    expect(stderr).toContain("quire: stopped by SIGTERM: the start had not finished");
    // Its empty session directory is left for a later start to reap, as after a kill.
    for (const dir of sessionDirectories(tmp)) rmSync(path.join(tmp, dir), { recursive: true });
  }, 30_000);
});
