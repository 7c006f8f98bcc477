/**
 * `serve` processes killed at any moment of their start and of their first pull of a
 * large notebook (`npm run test:sessions`): taking the session's lock, writing its
 * record, making its directory, writing the notebook's files, recording the copy's
 * state. A later start must leave no session directory (none held anything of a
 * person's) and nothing of those sessions in the private root. Killed first pulls once
 * left their directories forever, as if they held unpublished work.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { assertBuilt, binPath, makeSandbox } from "../cli/quireProcess.js";
import {
  privateLeftovers,
  sessionDirectories,
  startSessionServe,
} from "../helpers/sessionServe.js";

const rounds = 12;
const notes = 1_500;
const sandbox = makeSandbox();
const tmp = path.join(sandbox.root, "tmp");
const storeFlags = ["--store", `file:${sandbox.store}`, "--private-root", sandbox.privateRoot];
beforeAll(assertBuilt);
afterAll(() => rmSync(sandbox.root, { recursive: true, force: true }));

const cli = (...args: ReadonlyArray<string>) => {
  const run = spawnSync(process.execPath, [binPath, ...args, ...storeFlags], {
    cwd: sandbox.workspace,
    env: sandbox.env,
    encoding: "utf8",
  });
  expect(run.status, run.stderr).toBe(0);
};

const send = (child: ReturnType<typeof spawn>, message: object) =>
  child.stdin?.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`);

it(`${rounds} serve processes killed during their start or first pull leave nothing behind`, async () => {
  cli("pull", ".");
  for (let i = 0; i < notes; i++) {
    const directory = path.join(sandbox.workspace, `d${i % 40}`);
    mkdirSync(directory, { recursive: true });
    writeFileSync(path.join(directory, `n${i}.md`), `note ${i}\n`.repeat(20));
  }
  cli("commit", ".", "-m", "a large notebook");

  for (let round = 0; round < rounds; round++) {
    const child = spawn(process.execPath, [binPath, "serve", ...storeFlags], {
      env: sandbox.env,
      stdio: ["pipe", "ignore", "ignore"],
    });
    child.stdin.on("error", () => undefined);
    send(child, {
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "killed-starts", version: "1" },
      },
    });
    send(child, { method: "notifications/initialized" });
    send(child, { id: 2, method: "tools/call", params: { name: "notes_pull", arguments: {} } });
    // Spread over the start (Node's own ~0.2 s included) and the pull of the notebook.
    const delay = 100 + Math.floor((round / rounds) * 2_400 + Math.random() * 200);
    await new Promise((resolve) => setTimeout(resolve, delay));
    const closed = new Promise((resolve) => child.on("close", resolve));
    child.kill("SIGKILL");
    await closed;
  }
  // A lock file killed before its holder wrote its name reads as being written for 5 s.
  await new Promise((resolve) => setTimeout(resolve, 5_500));
  const last = await startSessionServe(
    { env: sandbox.env, store: sandbox.store, privateRoot: sandbox.privateRoot, tmp },
    { LOG_LEVEL: "cli=debug,info" },
  );
  await last.waitForStderr('msg="reaped ended sessions"');
  expect(await last.stop("stdin")).toBe(0);

  expect(sessionDirectories(tmp)).toEqual([]);
  const leftovers = privateLeftovers(sandbox.privateRoot);
  // The workspace's own copy (the CLI's) stays; every session's went with it.
  expect(leftovers.copies).toHaveLength(1);
  expect(leftovers.sessions).toEqual([]);
  const turns = path.join(sandbox.privateRoot, "turns");
  expect(existsSync(turns) ? readdirSync(turns) : []).toEqual([]);
}, 600_000);
