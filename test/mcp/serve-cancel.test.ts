/**
 * `notifications/cancelled` through a real `quire serve`: a call the client cancels is
 * not run on its behalf once the cancellation has been read, even when the
 * notification arrives before the call's handler starts (the same write, say), since
 * the client gets no answer and cannot learn what the call did.
 */
import { writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Sandbox, assertBuilt, makeSandbox } from "../cli/quireProcess.js";
import { type RawServe, startRawServe } from "./rawServe.js";

let sandbox: Sandbox;
let server: RawServe;

beforeAll(async () => {
  assertBuilt();
  sandbox = makeSandbox();
  server = await startRawServe(
    [
      "--store",
      `file:${sandbox.store}`,
      "--private-root",
      sandbox.privateRoot,
      "--workspace-root",
      sandbox.workspace,
    ],
    { env: sandbox.env, cwd: sandbox.workspace },
  );
});
afterAll(() => {
  server.kill();
  sandbox.cleanup();
});

/** The `key=value` fields of the stderr records whose message is `msg`. */
const records = (msg: string) =>
  server
    .stderr()
    .split("\n")
    .filter((line) => line.includes(`msg="${msg}"`));

describe("a call cancelled in the same write as its request", () => {
  it("is not published, is logged CANCELLED, and the next commit publishes the edit", async () => {
    const pulled = await server.callTool({ name: "notes_pull", arguments: {} });
    expect(pulled.result?.["structuredContent"]).toMatchObject({ code: "OK", generation: 0 });
    writeFileSync(path.join(sandbox.workspace, "a.md"), "hello\n");

    const id = server.nextId();
    const request = {
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "notes_commit", arguments: { message: "cancelled at once" } },
    };
    const cancel = {
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: id, reason: "changed my mind" },
    };
    // One write, two lines: the cancellation is read before the call's handler runs.
    server.writeLine(`${JSON.stringify(request)}\n${JSON.stringify(cancel)}`);

    // A ping after both lines: once it is answered, the cancelled call has been read.
    const ping = server.nextId();
    server.writeLine(JSON.stringify({ jsonrpc: "2.0", id: ping, method: "ping" }));
    await server.answer(ping, "ping");
    for (let i = 0; i < 200 && records("tool call completed").length < 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(records("tool call completed").at(-1)).toContain("code=CANCELLED");

    const again = await server.callTool({
      name: "notes_commit",
      arguments: { message: "the real one" },
    });
    expect(again.result?.["structuredContent"]).toMatchObject({
      code: "OK",
      generation: 1,
      filesChanged: 1,
    });
    expect(server.unclaimed()).toBe(0);
  });
});
