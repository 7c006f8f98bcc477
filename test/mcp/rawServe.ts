/**
 * A real `quire serve` process spoken to line by line, below any MCP client library:
 * the tests write exactly the bytes they mean (repeated keys, `__proto__`, lone
 * surrogates escaped in JSON, text that is not JSON at all) and read every line the
 * server writes to stdout, each checked to be one JSON-RPC message.
 *
 * Every wait has a deadline ({@link RawServe.answer}): a server that never answers fails
 * the test with the request it lost instead of hanging it. The deadline bounds a hang;
 * it is no assertion on speed.
 *
 * `npm test` builds first; run `npm run build` before running these files alone.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";
import { binPath } from "../cli/quireProcess.js";

/** How long one answer may take before the server is declared hung. */
export const answerDeadlineMs = 60_000;

/** What the server wrote to stdout that was not one JSON-RPC message per line. */
export interface StdoutViolation {
  readonly line: string;
  readonly why: string;
}

/** A response as the tests read it: its id (absent when the server did not know it) and result or error. */
export interface RawResponse {
  readonly id?: string | number;
  readonly result?: Record<string, unknown>;
  readonly error?: { readonly code: number; readonly message: string };
}

/** One running `quire serve`. */
export interface RawServe {
  readonly child: ChildProcessWithoutNullStreams;
  /** Writes `text` and a LF to stdin, as is. */
  readonly writeLine: (text: string) => void;
  /** Resolves with the response whose id is `id`, or rejects after {@link answerDeadlineMs}. */
  readonly answer: (id: string | number, what: string) => Promise<RawResponse>;
  /** Resolves with the next response that carries no id (a parse error, say), or rejects after the deadline. */
  readonly idlessAnswer: (what: string) => Promise<RawResponse>;
  /** Sends `{"jsonrpc":"2.0","id":…,"method":"tools/call","params":…}` (params serialised by JSON.stringify) and awaits its answer. */
  readonly callTool: (params: unknown) => Promise<RawResponse>;
  /** Sends a tools/call whose params are the JSON text `paramsText` exactly, and awaits its answer. */
  readonly callToolText: (paramsText: string) => Promise<RawResponse>;
  /** A fresh request id. */
  readonly nextId: () => number;
  /** How many responses arrived that no one awaited (a reply to nothing, or a second reply). */
  readonly unclaimed: () => number;
  /** Every stdout line that was not a JSON-RPC message. */
  readonly violations: ReadonlyArray<StdoutViolation>;
  /** Everything written to stderr so far. */
  readonly stderr: () => string;
  /** Whether the process is still running. */
  readonly alive: () => boolean;
  /** Kills the process (SIGKILL) if it is still running. */
  readonly kill: () => void;
  /** Closes stdin and resolves with the exit status (rejects if it does not exit by the deadline). */
  readonly close: () => Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const toResponse = (message: Record<string, unknown>): RawResponse => {
  const id = message["id"];
  const result = message["result"];
  const error = message["error"];
  return {
    ...(typeof id === "string" || typeof id === "number" ? { id } : {}),
    ...(isRecord(result) ? { result } : {}),
    ...(isRecord(error) && typeof error["code"] === "number" && typeof error["message"] === "string"
      ? { error: { code: error["code"], message: error["message"] } }
      : {}),
  };
};

/**
 * Spawns `quire serve <args>` (cwd and env exactly as given), performs the MCP
 * initialize handshake and resolves once the server answered it.
 */
export const startRawServe = async (
  args: ReadonlyArray<string>,
  options: { readonly env: Record<string, string>; readonly cwd: string },
): Promise<RawServe> => {
  const child = spawn(process.execPath, [binPath, "serve", ...args], {
    cwd: options.cwd,
    env: options.env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exitWaiters: Array<() => void> = [];
  child.on("exit", (code, signal) => {
    exited = { code, signal };
    for (const wake of exitWaiters.splice(0)) wake();
    for (const waiter of [...waiters.values()]) waiter.fail(new Error(describeExit()));
    waiters.clear();
    for (const waiter of idlessWaiters.splice(0)) waiter.fail(new Error(describeExit()));
  });
  // Writes to a dead child's stdin fail with EPIPE; the exit is what the test reports.
  child.stdin.on("error", () => undefined);
  let stderrText = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderrText += chunk));
  const describeExit = () =>
    `quire serve exited (code ${String(exited?.code)}, signal ${String(exited?.signal)}); stderr tail: ${stderrText.slice(-2000)}`;

  const violations: Array<StdoutViolation> = [];
  const byId = new Map<string | number, RawResponse>();
  const idless: Array<RawResponse> = [];
  const waiters = new Map<
    string | number,
    { ok: (response: RawResponse) => void; fail: (error: Error) => void }
  >();
  const idlessWaiters: Array<{
    ok: (response: RawResponse) => void;
    fail: (error: Error) => void;
  }> = [];
  let pending = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    pending += chunk;
    for (let end = pending.indexOf("\n"); end !== -1; end = pending.indexOf("\n")) {
      const line = pending.slice(0, end);
      pending = pending.slice(end + 1);
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        violations.push({ line: line.slice(0, 500), why: "not JSON" });
        continue;
      }
      if (!JSONRPCMessageSchema.safeParse(value).success || !isRecord(value)) {
        violations.push({ line: line.slice(0, 500), why: "not a JSON-RPC message" });
        continue;
      }
      const response = toResponse(value);
      if (response.id === undefined) {
        const waiter = idlessWaiters.shift();
        if (waiter === undefined) idless.push(response);
        else waiter.ok(response);
        continue;
      }
      const waiter = waiters.get(response.id);
      if (waiter === undefined) byId.set(response.id, response);
      else {
        waiters.delete(response.id);
        waiter.ok(response);
      }
    }
  });

  const withDeadline = <A>(
    what: string,
    register: (ok: (value: A) => void, fail: (error: Error) => void) => void,
  ): Promise<A> =>
    new Promise<A>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(new Error(`no answer within ${answerDeadlineMs} ms to ${what}; alive=${!exited}`)),
        answerDeadlineMs,
      );
      register(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (error) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });

  const answer = (id: string | number, what: string): Promise<RawResponse> => {
    const ready = byId.get(id);
    if (ready !== undefined) {
      byId.delete(id);
      return Promise.resolve(ready);
    }
    if (exited) return Promise.reject(new Error(describeExit()));
    return withDeadline(what, (ok, fail) => waiters.set(id, { ok, fail }));
  };
  const idlessAnswer = (what: string): Promise<RawResponse> => {
    const ready = idless.shift();
    if (ready !== undefined) return Promise.resolve(ready);
    if (exited) return Promise.reject(new Error(describeExit()));
    return withDeadline(what, (ok, fail) => idlessWaiters.push({ ok, fail }));
  };

  let counter = 0;
  const nextId = () => ++counter;
  const writeLine = (text: string) => {
    child.stdin.write(`${text}\n`);
  };
  const callToolText = (paramsText: string) => {
    const id = nextId();
    const line = `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":${paramsText}}`;
    writeLine(line);
    return answer(id, `tools/call ${line.slice(0, 300)}`);
  };
  const callTool = (params: unknown) => callToolText(JSON.stringify(params));

  const initId = nextId();
  writeLine(
    JSON.stringify({
      jsonrpc: "2.0",
      id: initId,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "raw-test", version: "0.0.1" },
      },
    }),
  );
  const init = await answer(initId, "initialize");
  if (init.result === undefined) throw new Error(`initialize failed: ${JSON.stringify(init)}`);
  writeLine(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));

  return {
    child,
    writeLine,
    answer,
    idlessAnswer,
    callTool,
    callToolText,
    nextId,
    violations,
    unclaimed: () => byId.size + idless.length,
    stderr: () => stderrText,
    alive: () => exited === undefined,
    kill: () => {
      if (exited === undefined) child.kill("SIGKILL");
    },
    close: () => {
      child.stdin.end();
      if (exited !== undefined) return Promise.resolve(exited);
      return withDeadline("closing stdin (the process did not exit)", (ok) =>
        exitWaiters.push(() => ok(exited ?? { code: null, signal: null })),
      );
    },
  };
};
