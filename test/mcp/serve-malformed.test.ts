/**
 * Malformed MCP input through a real `quire serve` process, written byte for byte below
 * any client library (test/mcp/rawServe.ts): every malformed tools/call is answered
 * with the INVALID_REQUEST envelope and its documented reason (docs/mcp.md#malformed-input),
 * every other line that is not a message gets the JSON-RPC error JSON-RPC prescribes,
 * stdout stays JSON-RPC only, and the process survives all of it.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type Sandbox, assertBuilt, binPath, makeSandbox, runQuire } from "../cli/quireProcess.js";
import { resultProblems } from "./envelopeShape.js";
import { type RawResponse, type RawServe, answerDeadlineMs, startRawServe } from "./rawServe.js";

let sandbox: Sandbox;
let server: RawServe;

const serveArgs = (sandbox: Sandbox) => [
  "--store",
  `file:${sandbox.store}`,
  "--private-root",
  sandbox.privateRoot,
  "--workspace-root",
  sandbox.workspace,
];

beforeAll(async () => {
  assertBuilt();
  sandbox = makeSandbox();
  server = await startRawServe(serveArgs(sandbox), { env: sandbox.env, cwd: sandbox.workspace });
});
afterAll(async () => {
  server.kill();
  sandbox.cleanup();
});

/** The lines of `stream`, one by one; each wait fails after {@link answerDeadlineMs}. */
const readLines = (stream: NodeJS.ReadableStream) => {
  const ready: Array<string> = [];
  const waiting: Array<(line: string) => void> = [];
  let pending = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    pending += chunk;
    for (let end = pending.indexOf("\n"); end !== -1; end = pending.indexOf("\n")) {
      const line = pending.slice(0, end);
      pending = pending.slice(end + 1);
      const wake = waiting.shift();
      if (wake === undefined) ready.push(line);
      else wake(line);
    }
  });
  return {
    next: (): Promise<string> => {
      const line = ready.shift();
      if (line !== undefined) return Promise.resolve(line);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("no line on stdout")), answerDeadlineMs);
        waiting.push((next) => {
          clearTimeout(timer);
          resolve(next);
        });
      });
    },
  };
};

const structuredOf = (response: RawResponse): Record<string, unknown> => {
  const structured = response.result?.["structuredContent"];
  if (typeof structured !== "object" || structured === null || Array.isArray(structured)) {
    throw new Error(`no structured content in ${JSON.stringify(response).slice(0, 1000)}`);
  }
  return Object.fromEntries(Object.entries(structured));
};

/** Asserts `response` is the INVALID_REQUEST envelope with `reason` and a message matching `message`. */
const expectRefused = (response: RawResponse, reason: string, message: RegExp, title: string) => {
  expect(response.error, title).toBeUndefined();
  expect(resultProblems(response.result), title).toEqual([]);
  const structured = structuredOf(response);
  expect(structured, title).toMatchObject({
    code: "INVALID_REQUEST",
    reason,
    action: "FIX_REQUEST",
    retryable: false,
    files: [],
  });
  expect(String(structured["message"]), title).toMatch(message);
};

const nested = (depth: number, leaf: string, open: string, close: string) =>
  `${open.repeat(depth)}${leaf}${close.repeat(depth)}`;

describe("a malformed tools/call through a real quire serve", () => {
  const notObject = /^notes_pull arguments must be a JSON object \(path\), not /;
  const cases: ReadonlyArray<{
    title: string;
    params: string;
    reason: string;
    message: RegExp;
  }> = [
    ...["null", '"a string"', "5", "-0.5", "[]", '["/x"]', "true", "false"].map((value) => ({
      title: `arguments ${value}`,
      params: `{"name":"notes_pull","arguments":${value}}`,
      reason: "INVALID_ARGUMENT",
      message: notObject,
    })),
    {
      title: "commit arguments null",
      params: '{"name":"notes_commit","arguments":null}',
      reason: "INVALID_ARGUMENT",
      message: /^notes_commit arguments must be a JSON object \(message and path\), not null\.$/,
    },
    {
      title: "a path nested 100,000 arrays deep",
      params: `{"name":"notes_pull","arguments":{"path":${nested(100_000, '"/x"', "[", "]")}}}`,
      reason: "INVALID_ARGUMENT",
      message: /^"path" must be a string, not an array\.$/,
    },
    {
      title: "a message nested 100,000 objects deep",
      params: `{"name":"notes_commit","arguments":{"message":${nested(100_000, "1", '{"m":', "}")}}}`,
      reason: "INVALID_ARGUMENT",
      message: /^"message" must be a string, not an object\.$/,
    },
    {
      title: "arguments that are 100,000 nested arrays",
      params: `{"name":"notes_pull","arguments":${nested(100_000, "", "[", "]")}}`,
      reason: "INVALID_ARGUMENT",
      message: notObject,
    },
    {
      title: "an unknown field nested 100,000 deep",
      params: `{"name":"notes_pull","arguments":{"a":${nested(100_000, "0", '{"a":', "}")}}}`,
      reason: "INVALID_ARGUMENT",
      message: /^notes_pull has no field "a"; it accepts only path\.$/,
    },
    {
      title: "a __proto__ field on pull",
      params: '{"name":"notes_pull","arguments":{"__proto__":{"path":"/etc"}}}',
      reason: "INVALID_ARGUMENT",
      message: /^notes_pull has no field "__proto__"; it accepts only path\.$/,
    },
    {
      title: "a __proto__ field beside a valid message",
      params: '{"name":"notes_commit","arguments":{"message":"m","__proto__":{}}}',
      reason: "INVALID_ARGUMENT",
      message: /^notes_commit has no field "__proto__"; it accepts only message and path\.$/,
    },
    {
      title: "a __proto__ field that is null",
      params: '{"name":"notes_pull","arguments":{"__proto__":null}}',
      reason: "INVALID_ARGUMENT",
      message: /has no field "__proto__"/,
    },
    ...["constructor", "prototype", "toString", "hasOwnProperty"].map((key) => ({
      title: `a ${key} field`,
      params: `{"name":"notes_pull","arguments":{"${key}":"/x"}}`,
      reason: "INVALID_ARGUMENT",
      message: new RegExp(`^notes_pull has no field "${key}"`),
    })),
    {
      title: "a repeated key (the last value would be taken)",
      params: `{"name":"notes_pull","arguments":{"path":"","path":"/etc"}}`,
      reason: "INVALID_ARGUMENT",
      message: /^The request repeats the key "path" in params\.arguments; /,
    },
    {
      title: "a key repeated through an escape",
      params: `{"name":"notes_commit","arguments":{"message":"a","\\u006dessage":"b"}}`,
      reason: "INVALID_ARGUMENT",
      message: /repeats the key "message" in params\.arguments/,
    },
    {
      title: "a repeated tool name",
      params: `{"name":"notes_pull","name":"notes_commit","arguments":{"message":"m"}}`,
      reason: "INVALID_ARGUMENT",
      message: /repeats the key "name" in params;/,
    },
    {
      title: "a repeated key deep inside a value",
      params: `{"name":"notes_pull","arguments":{"path":[{"x":1,"x":2}]}}`,
      reason: "INVALID_ARGUMENT",
      message: /repeats the key "x" in params\.arguments\.path\.\[\]/,
    },
    {
      title: "no tool name",
      params: '{"arguments":{}}',
      reason: "INVALID_ARGUMENT",
      message: /^tools\/call needs "name"/,
    },
    {
      title: "a numeric tool name",
      params: '{"name":5,"arguments":{}}',
      reason: "INVALID_ARGUMENT",
      message: /^tools\/call needs "name"/,
    },
    {
      title: "a null tool name",
      params: '{"name":null}',
      reason: "INVALID_ARGUMENT",
      message: /^tools\/call needs "name"/,
    },
    {
      title: "an unknown tool",
      params: '{"name":"notes_delete","arguments":{}}',
      reason: "INVALID_ARGUMENT",
      message: /^Unknown tool "notes_delete"; the tools are notes_pull and notes_commit\.$/,
    },
    {
      title: "params that are a string",
      params: '"notes_pull"',
      reason: "INVALID_ARGUMENT",
      message: /^tools\/call params must be a JSON object \(name and arguments\), not a string\.$/,
    },
    {
      title: "params that are null",
      params: "null",
      reason: "INVALID_ARGUMENT",
      message: /^tools\/call params must be a JSON object .*, not null\.$/,
    },
    {
      title: "params that are an array",
      params: '["notes_pull",{}]',
      reason: "INVALID_ARGUMENT",
      message: /^tools\/call params must be a JSON object .*, not an array\.$/,
    },
    {
      title: "a malformed _meta",
      params: '{"name":"notes_pull","_meta":5}',
      reason: "INVALID_ARGUMENT",
      message: /^tools\/call params\._meta is malformed/,
    },
    {
      title: "a misspelt arguments member (its path would be ignored)",
      params: '{"name":"notes_pull","argumets":{"path":"/etc"}}',
      reason: "INVALID_ARGUMENT",
      message:
        /^tools\/call params has a member "argumets"; it accepts only name, arguments, _meta and task\.$/,
    },
    {
      // Task metadata is an object ({"ttl": …}); an object is ignored (see below).
      title: "a task member that is not an object",
      params: '{"name":"notes_pull","arguments":{},"task":null}',
      reason: "INVALID_ARGUMENT",
      message: /^tools\/call params\.task must be an object \(MCP task metadata, /,
    },
    {
      title: "an unknown params member beside valid arguments",
      params: '{"name":"notes_commit","arguments":{"message":"m"},"path":"/etc"}',
      reason: "INVALID_ARGUMENT",
      message: /^tools\/call params has a member "path"; /,
    },
    {
      title: "a number where the path string belongs",
      params: '{"name":"notes_pull","arguments":{"path":4096}}',
      reason: "INVALID_ARGUMENT",
      message: /^"path" must be a string, not a number\.$/,
    },
    {
      title: "a boolean where the message belongs",
      params: '{"name":"notes_commit","arguments":{"message":true}}',
      reason: "INVALID_ARGUMENT",
      message: /^"message" must be a string, not a boolean\.$/,
    },
    {
      title: "a lone surrogate in a key",
      params: '{"name":"notes_pull","arguments":{"\\ud800x":1}}',
      reason: "INVALID_ARGUMENT",
      message: /^notes_pull has no field "\\ud800x"/,
    },
    {
      title: "a lone surrogate in the path",
      params: '{"name":"notes_pull","arguments":{"path":"/a\\udfff"}}',
      reason: "INVALID_ARGUMENT",
      message:
        /^path is not well-formed Unicode: it holds a lone surrogate \(U\+DFFF at UTF-16 index 2\), which has no UTF-8 form\.$/,
    },
    {
      title: "U+0000 in the message",
      params: '{"name":"notes_commit","arguments":{"message":"a\\u0000b"}}',
      reason: "INVALID_ARGUMENT",
      message: /^message must not contain U\+0000 \(found at UTF-16 index 1\)\.$/,
    },
    {
      title: "a key of 100,000 characters",
      params: `{"name":"notes_pull","arguments":{"${"k".repeat(100_000)}":1}}`,
      reason: "INVALID_ARGUMENT",
      message: /^notes_pull has no field "k{64}…"; it accepts only path\.$/,
    },
    {
      title: "a tool name of 100,000 characters",
      params: `{"name":"${"n".repeat(100_000)}","arguments":{}}`,
      reason: "INVALID_ARGUMENT",
      message: /^Unknown tool "n{64}…"/,
    },
    {
      title: "a message of 1,000,000 bytes",
      params: `{"name":"notes_commit","arguments":{"message":"${"m".repeat(1_000_000)}"}}`,
      reason: "MESSAGE_TOO_LONG",
      message: /^message must be at most 16,384 UTF-8 bytes\.$/,
    },
    {
      title: "a message of only Unicode White_Space (U+0085, U+3000)",
      params: '{"name":"notes_commit","arguments":{"message":"\\u0085\\u3000 "}}',
      reason: "MESSAGE_BLANK",
      message: /^message must not be empty or only white space\.$/,
    },
    {
      title: "a path of 1,000,000 bytes",
      params: `{"name":"notes_pull","arguments":{"path":"/${"p".repeat(1_000_000)}"}}`,
      reason: "PATH_TOO_LONG",
      message: /^path must be at most 4,096 UTF-8 bytes\.$/,
    },
  ];

  for (const { title, params, reason, message } of cases) {
    it(`${title} → INVALID_REQUEST/${reason}`, async () => {
      expectRefused(await server.callToolText(params), reason, message, title);
      expect(server.alive()).toBe(true);
    });
  }

  it("a tools/call whose line is not UTF-8 is refused, never read with U+FFFD in a path or message", async () => {
    const copy = path.join(sandbox.workspace, "bytes");
    expect(
      structuredOf(await server.callTool({ name: "notes_pull", arguments: { path: copy } })),
    ).toMatchObject({ code: "OK" });
    writeFileSync(path.join(copy, "a.md"), "a\n");
    const calls = [
      { name: "notes_pull", arguments: { path: `${copy}/\u0001` } },
      { name: "notes_commit", arguments: { path: copy, message: "msg \u0001 end" } },
    ];
    for (const params of calls) {
      const id = server.nextId();
      const text = JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params });
      // The placeholder U+0001 becomes the bytes FF FE, which are no UTF-8 character.
      const at = Buffer.from(text).indexOf(Buffer.from("\\u0001"));
      const bytes = Buffer.concat([
        Buffer.from(text).subarray(0, at),
        Buffer.from([0xff, 0xfe]),
        Buffer.from(text).subarray(at + 6),
        Buffer.from("\n"),
      ]);
      server.child.stdin.write(bytes);
      expectRefused(
        await server.answer(id, params.name),
        "INVALID_ARGUMENT",
        /^The request's line is not valid UTF-8/,
        params.name,
      );
    }
    expect(readdirSync(copy).filter((name) => !name.startsWith("."))).toEqual(["a.md"]);
    const log = await runQuire(["log", copy, "--json", "--private-root", sandbox.privateRoot], {
      cwd: copy,
      env: { ...sandbox.env, QUIRE_STORE: `file:${sandbox.store}` },
    });
    expect(log.code, log.stderr).toBe(0);
    expect(log.stdout).toContain('"publications":[]');
  });

  it("a task-augmented call is run as a normal call, its task metadata ignored (MCP 2025-11-25)", async () => {
    // quire declares no tasks capability, and the tasks spec says a receiver without it
    // MUST process the request normally; the SDK would answer -32603 before any handler.
    const copy = path.join(sandbox.workspace, "task");
    expect(
      structuredOf(await server.callTool({ name: "notes_pull", arguments: { path: copy } })),
    ).toMatchObject({ code: "OK" });
    writeFileSync(path.join(copy, "t.md"), "t\n");
    const committed = await server.callTool({
      name: "notes_commit",
      arguments: { path: copy, message: "as a task" },
      task: { ttl: 60_000 },
    });
    expect(resultProblems(committed.result)).toEqual([]);
    expect(structuredOf(committed)).toMatchObject({
      code: "OK",
      files: [{ path: "t.md", insertions: 1, deletions: 0 }],
    });
    // Ignoring task does not open the door to other members: a misspelt one still fails.
    expectRefused(
      await server.callToolText('{"name":"notes_pull","task":{},"argumets":{"path":"/etc"}}'),
      "INVALID_ARGUMENT",
      /^tools\/call params has a member "argumets"; it accepts only name, arguments, _meta and task\.$/,
      "task beside a misspelt arguments",
    );
  });

  it("a message of only U+FEFF is kept: it is not Unicode White_Space", async () => {
    const copy = path.join(sandbox.workspace, "bom");
    const pulled = await server.callTool({ name: "notes_pull", arguments: { path: copy } });
    expect(structuredOf(pulled)).toMatchObject({ code: "OK" });
    writeFileSync(path.join(copy, "a.md"), "a\n");
    const committed = await server.callTool({
      name: "notes_commit",
      arguments: { message: "\uFEFF", path: copy },
    });
    expect(resultProblems(committed.result)).toEqual([]);
    expect(structuredOf(committed)).toMatchObject({
      code: "OK",
      files: [{ path: "a.md", insertions: 1, deletions: 0 }],
    });
  });
});

describe("lines that are not a tools/call", () => {
  it("a line over 10 MiB carrying a tools/call is refused by its id; the server reads on", async () => {
    // Its own process: the SDK's reader closed the transport (and serve exited) on such a line.
    const own = await startRawServe(serveArgs(sandbox), {
      env: sandbox.env,
      cwd: sandbox.workspace,
    });
    const id = own.nextId();
    const line = `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"notes_commit","arguments":{"message":"${"x".repeat(11 * 1024 * 1024)}"}}}`;
    own.writeLine(line);
    expectRefused(
      await own.answer(id, "the oversized tools/call"),
      "INVALID_ARGUMENT",
      /^The request is 11,534,4\d\d bytes long; the limit is 10,485,760 bytes\./,
      "oversized",
    );
    const after = await own.callTool({ name: "notes_pull", arguments: { path: "/etc" } });
    expect(structuredOf(after)).toMatchObject({ reason: "PATH_OUTSIDE_ROOT" });
    expect(own.violations).toEqual([]);
    expect(await own.close()).toEqual({ code: 0, signal: null });
  });

  it("calls that reuse one id are each answered, and none is left waited for at the end", async () => {
    const own = await startRawServe(serveArgs(sandbox), {
      env: sandbox.env,
      cwd: sandbox.workspace,
    });
    let answered = 0;
    own.child.stdout.on("data", (chunk: Buffer) => {
      answered += chunk.toString("utf8").split('"id":"same"').length - 1;
    });
    const line = JSON.stringify({
      jsonrpc: "2.0",
      id: "same",
      method: "tools/call",
      params: { name: "notes_pull", arguments: { path: path.join(sandbox.workspace, "same") } },
    });
    for (let i = 0; i < 3; i++) own.writeLine(line);
    expect(structuredOf(await own.answer("same", "the first of three"))).toMatchObject({
      code: "OK",
    });
    await vi.waitFor(() => expect(answered).toBe(3), { timeout: 30_000, interval: 50 });
    expect(await own.close()).toEqual({ code: 0, signal: null });
    expect(own.stderr()).not.toContain("interrupting calls still in flight");
    expect(own.stderr()).not.toContain("waiting for calls in flight");
  });

  it("a byte order mark opening the stream is skipped: initialize is answered by its id", async () => {
    // Spawned here: startRawServe sends its own initialize first.
    const child = spawn(process.execPath, [binPath, "serve", ...serveArgs(sandbox)], {
      cwd: sandbox.workspace,
      env: sandbox.env,
      stdio: ["pipe", "pipe", "ignore"],
    });
    try {
      const lines = readLines(child.stdout);
      const initialize = {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "bom", version: "1" },
      };
      child.stdin.write(
        `\uFEFF${JSON.stringify({ jsonrpc: "2.0", id: 7, method: "initialize", params: initialize })}\n`,
      );
      expect(JSON.parse(await lines.next())).toMatchObject({
        id: 7,
        result: { serverInfo: { name: "quire" } },
      });
      // Only the stream's first line: a U+FEFF before a later message is not JSON.
      child.stdin.write(`\uFEFF${JSON.stringify({ jsonrpc: "2.0", id: 8, method: "ping" })}\n`);
      expect(JSON.parse(await lines.next())).toMatchObject({ error: { code: -32700 } });
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("text that is not JSON gets a parse error (-32700) with no id", async () => {
    server.writeLine("this is not json {");
    expect(await server.idlessAnswer("the non-JSON line")).toMatchObject({
      error: { code: -32700 },
    });
  });

  it("a request with a usable id but a malformed shape gets -32600 with that id", async () => {
    const id = server.nextId();
    server.writeLine(`{"jsonrpc":"2.0","id":${id},"method":"tools/list","params":7}`);
    expect(await server.answer(id, "malformed tools/list")).toMatchObject({
      id,
      error: { code: -32600 },
    });
  });

  it("a request the SDK answers with params of the wrong shape gets -32602 naming the field, not a -32603 schema dump", async () => {
    for (const [method, params, field] of [
      ["tools/list", '{"cursor":5}', /params\.cursor/],
      // quire never answers a nextCursor, so any cursor is one it did not issue.
      ["tools/list", '{"cursor":"page-2"}', /params\.cursor: quire lists every tool in one page/],
      ["initialize", "{}", /params\.protocolVersion/],
    ] as const) {
      const id = server.nextId();
      server.writeLine(`{"jsonrpc":"2.0","id":${id},"method":"${method}","params":${params}}`);
      const answer = await server.answer(id, `${method} with bad params`);
      expect(answer, method).toMatchObject({ id, error: { code: -32602 } });
      expect(answer.error?.message, method).toMatch(field);
      expect(answer.error?.message, method).not.toMatch(/\n/);
    }
  });

  it("a JSON value that is not an object, and an unusable id, get -32600 with no id", async () => {
    for (const line of ["[1,2]", "42", '{"jsonrpc":"2.0","id":1.5,"method":"tools/call"}']) {
      server.writeLine(line);
      expect(await server.idlessAnswer(line)).toMatchObject({ error: { code: -32600 } });
    }
  });

  it("an unknown method is -32601; a malformed notification or response is ignored", async () => {
    const id = server.nextId();
    server.writeLine(`{"jsonrpc":"2.0","id":${id},"method":"notes/delete"}`);
    expect(await server.answer(id, "unknown method")).toMatchObject({ error: { code: -32601 } });
    server.writeLine('{"jsonrpc":"2.0","method":"notifications/initialized","params":5}');
    server.writeLine(`{"jsonrpc":"2.0","id":999999,"result":${nested(100_000, "", "[", "]")}}`);
    server.writeLine("");
    const after = await server.callTool({ name: "notes_pull", arguments: { path: "relative" } });
    expect(structuredOf(after)).toMatchObject({ reason: "PATH_NOT_ABSOLUTE" });
  });

  it("stdout carried only JSON-RPC, and the process is still serving", async () => {
    const copy = path.join(sandbox.workspace, "last");
    const ok = await server.callTool({ name: "notes_pull", arguments: { path: copy } });
    expect(resultProblems(ok.result)).toEqual([]);
    expect(structuredOf(ok)).toMatchObject({ code: "OK" });
    expect(server.violations).toEqual([]);
    expect(server.alive()).toBe(true);
  });
});

describe("text a client or an operator sent is redacted before it is cut", () => {
  // A session token is long: cut at 64 characters first, its prefix would survive redaction.
  // It ends in "==" so that LOG_LEVEL splits it at "=" into a "module name".
  const token = `${randomBytes(150).toString("base64").replace(/[+/=]/g, "Q")}==`;
  const secretKey = `${randomBytes(30).toString("base64url").slice(0, 40)}`;
  let env: Record<string, string>;
  let echoSandbox: Sandbox;

  /** The first 16-character piece of `secret` that `text` contains, ignoring case. */
  const leakedPiece = (text: string, secret: string): string | undefined => {
    const haystack = text.toLowerCase();
    for (let i = 0; i + 16 <= secret.length; i++) {
      const piece = secret.slice(i, i + 16).toLowerCase();
      if (haystack.includes(piece)) return piece;
    }
    return undefined;
  };

  beforeAll(() => {
    echoSandbox = makeSandbox();
    env = { ...echoSandbox.env, AWS_SESSION_TOKEN: token, AWS_SECRET_ACCESS_KEY: secretKey };
  });
  afterAll(() => echoSandbox.cleanup());

  it("a malformed LOG_LEVEL holding a secret: warned about, the secret never printed (serve)", async () => {
    for (const logLevel of [token, `mcp=debug,${secretKey}`, `MCP=${secretKey}`]) {
      const served = await startRawServe(serveArgs(echoSandbox), {
        env: { ...env, LOG_LEVEL: logLevel },
        cwd: echoSandbox.workspace,
      });
      const exit = await served.close();
      expect(exit.code).toBe(0);
      const stderr = served.stderr();
      expect(stderr).toMatch(/msg="malformed LOG_LEVEL \(.+ in item \d of .+\); using info"/);
      expect(leakedPiece(stderr, token), logLevel).toBeUndefined();
      expect(leakedPiece(stderr, secretKey), logLevel).toBeUndefined();
    }
  });

  it("a malformed LOG_LEVEL holding a secret, through quire pull", async () => {
    mkdirSync(path.join(echoSandbox.workspace, "copy"), { recursive: true });
    const run = await runQuire(
      [
        "pull",
        "copy",
        "--store",
        `file:${echoSandbox.store}`,
        "--private-root",
        echoSandbox.privateRoot,
      ],
      { cwd: echoSandbox.workspace, env: { ...env, LOG_LEVEL: token } },
    );
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/malformed LOG_LEVEL/);
    expect(leakedPiece(run.stderr, token)).toBeUndefined();
  });

  it("a tool name or field name holding a long secret: refused, the secret in no result and no log line", async () => {
    const served = await startRawServe(serveArgs(echoSandbox), {
      env: { ...env, LOG_LEVEL: "debug" },
      cwd: echoSandbox.workspace,
    });
    const extraMemberId = served.nextId();
    served.writeLine(
      `{"jsonrpc":"2.0","${token}":1,"id":${extraMemberId},"method":"tools/call","params":{}}`,
    );
    const results = [
      await served.answer(extraMemberId, "a request with an extra member"),
      await served.callTool({ name: token, arguments: {} }),
      await served.callTool({ name: "notes_pull", arguments: { [token]: 1 } }),
      await served.callToolText(`{"name":"notes_pull","arguments":{"${token}":1,"${token}":2}}`),
    ];
    await served.close();
    for (const result of results) {
      expect(resultProblems(result.result)).toEqual([]);
      expect(structuredOf(result)).toMatchObject({ reason: "INVALID_ARGUMENT" });
      expect(JSON.stringify(result)).toContain("<secret>");
      expect(leakedPiece(JSON.stringify(result), token)).toBeUndefined();
    }
    expect(leakedPiece(served.stderr(), token)).toBeUndefined();
  });
});
