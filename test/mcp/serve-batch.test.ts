/**
 * JSON-RPC batches (a JSON array on one line) sent to a real `quire serve`: answered as
 * the negotiated protocol version says. 2025-03-26 requires a server to accept them: each
 * element is answered, all together as one array; a notification-only batch gets no
 * answer. Later versions (2025-06-18 removed batches) and earlier ones have none: an
 * array is one Invalid Request. No array, however deep or long, crashes or hangs it.
 */
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, binPath, makeSandbox } from "../cli/quireProcess.js";

const sandbox = makeSandbox();
beforeAll(assertBuilt);
afterAll(() => sandbox.cleanup());

/** Starts serve, initialises with `version`, writes `lines`, then a ping (id "last"); resolves with every stdout line parsed, once the ping is answered, and the exit status after stdin closes. */
const exchange = (version: string, lines: ReadonlyArray<string>) =>
  new Promise<{
    answers: Array<unknown>;
    beforeLast: number;
    code: number | null;
    stderr: string;
  }>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [binPath, "serve", "--store", `file:${sandbox.store}`, "--private-root", sandbox.privateRoot],
      { cwd: sandbox.workspace, env: sandbox.env, stdio: ["pipe", "pipe", "pipe"] },
    );
    child.stdin.on("error", () => undefined);
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const answers: Array<unknown> = [];
    let beforeLast = -1;
    let pending = "";
    let sent = false;
    const send = (text: string) => child.stdin.write(`${text}\n`);
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      pending += chunk;
      for (let end = pending.indexOf("\n"); end !== -1; end = pending.indexOf("\n")) {
        const message: unknown = JSON.parse(pending.slice(0, end));
        pending = pending.slice(end + 1);
        if (!sent) {
          sent = true;
          send(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));
          for (const line of lines) send(line);
          send(JSON.stringify({ jsonrpc: "2.0", id: "last", method: "ping" }));
          continue;
        }
        if (
          JSON.stringify(message) === JSON.stringify({ result: {}, jsonrpc: "2.0", id: "last" })
        ) {
          beforeLast = answers.length;
          child.stdin.end();
        } else answers.push(message);
      }
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ answers, beforeLast, code, stderr }));
    send(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: {
          protocolVersion: version,
          capabilities: {},
          clientInfo: { name: "t", version: "1" },
        },
      }),
    );
  });

const request = (id: number, method: string, params?: object) =>
  ({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) }) as const;
const invalid = (message: string) => ({
  jsonrpc: "2.0",
  error: { code: -32600, message: `Invalid Request: ${message}` },
});

const lines = [
  "[]",
  JSON.stringify([
    request(1, "ping"),
    5,
    request(2, "nope"),
    { jsonrpc: "2.0", method: "notifications/x" },
  ]),
  JSON.stringify([{ jsonrpc: "2.0", method: "notifications/x" }]),
  `[${"[".repeat(100_000)}${"]".repeat(100_000)}]`,
  JSON.stringify(Array.from({ length: 1_000 }, () => request(3, "ping"))),
];

describe("a JSON-RPC batch", () => {
  it("under 2025-03-26: every element answered, together in one array; notifications alone get nothing", async () => {
    const { answers, code } = await exchange("2025-03-26", lines);
    expect(code).toBe(0);
    expect(answers).toHaveLength(4);
    expect(answers[0]).toEqual(invalid("a message must be a JSON object, not an array."));
    const mixed = answers[1] as Array<Record<string, unknown>>;
    expect(mixed).toHaveLength(3);
    expect(mixed).toContainEqual({ jsonrpc: "2.0", result: {}, id: 1 });
    expect(mixed).toContainEqual(invalid("a message must be a JSON object, not a number."));
    expect(mixed).toContainEqual(
      expect.objectContaining({ id: 2, error: expect.objectContaining({ code: -32601 }) }),
    );
    expect(answers[2]).toEqual([invalid("the message is nested too deeply.")]);
    expect(answers[3]).toHaveLength(1_000);
  }, 120_000);

  it("under 2025-03-26: a batch of more than 1000 elements is refused whole, none run: the first 1000 requests told with their id, the rest in one error without an id", async () => {
    const tooMany = `Invalid Request: a batch holds at most 1000 messages, this one 5001; send it in smaller batches.`;
    const { answers, beforeLast, code } = await exchange("2025-03-26", [
      JSON.stringify([
        ...Array.from({ length: 5_000 }, (_, index) => request(10 + index, "ping")),
        { jsonrpc: "2.0", method: "notifications/x" },
      ]),
      JSON.stringify(Array.from({ length: 1_001 }, () => ({ jsonrpc: "2.0", method: "x" }))),
      JSON.stringify(Array.from({ length: 1_001 }, (_, index) => request(index, "ping"))),
    ]);
    expect(code).toBe(0);
    expect(beforeLast).toBe(3);
    const refused = answers[0] as Array<Record<string, unknown>>;
    expect(refused).toHaveLength(1_001);
    refused.slice(0, 1_000).forEach((answer, index) =>
      expect(answer).toEqual({
        jsonrpc: "2.0",
        id: 10 + index,
        error: { code: -32600, message: tooMany },
      }),
    );
    expect(refused[1_000]).toEqual({
      jsonrpc: "2.0",
      error: {
        code: -32600,
        message:
          "Invalid Request: a batch holds at most 1000 messages, this one 5001; none of it ran, and its 4000 requests after the 1000 answered above get no answer of their own (the refusal is bounded); send it in smaller batches.",
      },
    });
    expect(answers[1]).toEqual([
      {
        jsonrpc: "2.0",
        error: { code: -32600, message: tooMany.replace("5001", "1001") },
      },
    ]);
    expect(answers[2]).toHaveLength(1_001);
  }, 120_000);

  it("under 2025-03-26: the refusal of a 10 MiB batch stays far below a 10 MiB line, however many or long its ids", async () => {
    const many = JSON.stringify(
      Array.from({ length: 200_000 }, (_, index) => ({ jsonrpc: "2.0", id: index, method: "x" })),
    );
    const longIds = JSON.stringify(
      Array.from({ length: 1_001 }, (_, index) => ({
        jsonrpc: "2.0",
        id: `${String(index)}-${"i".repeat(9_000)}`,
        method: "x",
      })),
    );
    expect(many.length).toBeLessThan(10 * 1024 * 1024);
    expect(longIds.length).toBeLessThan(10 * 1024 * 1024);
    const { answers, beforeLast, code } = await exchange("2025-03-26", [many, longIds]);
    expect(code).toBe(0);
    expect(beforeLast).toBe(2);
    for (const answer of answers) {
      const refused = answer as Array<Record<string, unknown>>;
      expect(JSON.stringify(refused).length).toBeLessThan(2 * 1024 * 1024);
      const last = refused[refused.length - 1];
      expect(last).not.toHaveProperty("id");
      expect(last).toMatchObject({ error: { code: -32600 } });
      expect(String((last?.["error"] as { message: string }).message)).toContain(
        "get no answer of their own",
      );
    }
  }, 120_000);

  it("under 2025-03-26: a request cancelled in its batch (never answered) does not hold back the others' answers", async () => {
    const cancel = (requestId: number) => ({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId, reason: "changed my mind" },
    });
    const { answers, beforeLast, code } = await exchange("2025-03-26", [
      JSON.stringify([request(1, "tools/list"), cancel(1), request(2, "ping")]),
      // A cancellation on a later line, for a call still running (a pull: it takes a while).
      JSON.stringify([
        request(3, "tools/call", { name: "notes_pull", arguments: {} }),
        request(4, "ping"),
      ]),
      JSON.stringify(cancel(3)),
    ]);
    expect(code).toBe(0);
    // Before the ping sent after them is answered: not only once the server stops.
    const flat = answers.slice(0, beforeLast).flat() as Array<Record<string, unknown>>;
    expect(flat).toContainEqual({ jsonrpc: "2.0", result: {}, id: 2 });
    expect(flat).toContainEqual({ jsonrpc: "2.0", result: {}, id: 4 });
    expect(flat.some((answer) => answer["id"] === 1)).toBe(false);
  }, 120_000);

  it("under 2025-03-26: a cancellation the SDK ignores (id 0, a reason that is no string) leaves the request in its batch", async () => {
    const { answers, beforeLast, code } = await exchange("2025-03-26", [
      JSON.stringify([
        request(0, "ping"),
        { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 0 } },
        request(5, "ping"),
        {
          jsonrpc: "2.0",
          method: "notifications/cancelled",
          params: { requestId: 5, reason: 3 },
        },
      ]),
    ]);
    expect(code).toBe(0);
    // Both answered, together in the batch's one array.
    expect(answers.slice(0, beforeLast)).toEqual([
      expect.arrayContaining([
        { jsonrpc: "2.0", result: {}, id: 0 },
        { jsonrpc: "2.0", result: {}, id: 5 },
      ]),
    ]);
  }, 120_000);

  it("under 2025-06-18 (no batches): each array is one Invalid Request", async () => {
    const { answers, code } = await exchange("2025-06-18", lines);
    expect(code).toBe(0);
    expect(answers).toEqual(
      lines.map(() => invalid("a message must be a JSON object, not an array.")),
    );
  }, 120_000);
});
