/**
 * A host that stops reading `serve`'s answers (it closed its end of stdout, or went
 * away) while a call runs: that call's answer can never be written, so the server must
 * not hold its stop for it. It once waited out the whole grace period and the answer
 * timeout (15 s) for an answer that could not be sent before it ended its session.
 */
import { rmSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { assertBuilt, makeSandbox } from "../cli/quireProcess.js";
import { servingIn, sessionDirectories, startSessionServe } from "../helpers/sessionServe.js";

const sandbox = makeSandbox();
const serving = servingIn(sandbox);
const tmp = serving.tmp;
beforeAll(assertBuilt);
afterAll(() => rmSync(sandbox.root, { recursive: true, force: true }));

it("stdout closed with a call in flight: the server stops at once and ends its session", async () => {
  const server = await startSessionServe(serving);
  expect(sessionDirectories(tmp)).toHaveLength(1);
  server.child.stdout.destroy();
  const started = Date.now();
  // Stdin stays open: only the failed write of this call's answer can stop the server.
  server.child.stdin.write(
    `${JSON.stringify({ jsonrpc: "2.0", id: 99, method: "tools/call", params: { name: "notes_pull", arguments: {} } })}\n`,
  );
  expect(await server.exited).toBe(0);
  expect(Date.now() - started).toBeLessThan(5_000);
  expect(server.stderr()).toContain('why="stdout failed"');
  expect(server.stderr()).toContain("removed the session directory");
  expect(sessionDirectories(tmp)).toEqual([]);
}, 30_000);
