/**
 * A real `quire serve` process without `--workspace-root` (it makes its own session
 * directory under the sandbox's TMPDIR), spoken to in raw JSON-RPC so that a test can
 * stop it in each way an MCP host does and see its exit status.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import * as path from "node:path";
import { binPath, type Sandbox } from "../cli/quireProcess.js";

/** How a host stops a server. */
export type StopHow =
  /** Closes stdin (the MCP SDK's client, Claude Desktop). */
  | "stdin"
  | "SIGTERM"
  | "SIGINT"
  /** Closes stdin, then signals a moment later (the SDK client escalating, some hosts). */
  | "stdin+SIGTERM"
  /** Goes away: closes every pipe and signals (a host exiting). */
  | "hangup+SIGTERM"
  | "SIGKILL";

/** Every {@link StopHow}. */
export const stopWays: ReadonlyArray<StopHow> = [
  "stdin",
  "SIGTERM",
  "SIGINT",
  "stdin+SIGTERM",
  "hangup+SIGTERM",
  "SIGKILL",
];

/**
 * The exit statuses a server stopped `how` may end with: killed, SIGKILL; otherwise 0,
 * but for a stdin close followed by SIGTERM 15 ms later, whose signal can land once the
 * process has done everything and is tearing itself down, where Node no longer catches
 * it (docs/logging.md, step 5): then the signal is the exit status, and nothing is left
 * undone (every test that stops servers so checks what they left).
 */
export const stopStatuses = (how: StopHow): ReadonlyArray<number | string> =>
  how === "SIGKILL" ? ["SIGKILL"] : how === "stdin+SIGTERM" ? [0, "SIGTERM"] : [0];

/** What a sandbox gives a server: its environment, store and private root. */
export interface ServeSandbox {
  readonly env: Readonly<Record<string, string>>;
  readonly store: string;
  readonly privateRoot: string;
  /** The TMPDIR of `env`, where session directories are made. */
  readonly tmp: string;
}

/** The servers' side of a CLI test sandbox: its environment, store, private root and TMPDIR. */
export const servingIn = (sandbox: Sandbox): ServeSandbox => ({
  env: sandbox.env,
  store: sandbox.store,
  privateRoot: sandbox.privateRoot,
  tmp: path.join(sandbox.root, "tmp"),
});

/** One running server. */
export interface SessionServe {
  readonly child: ChildProcessWithoutNullStreams;
  /** Calls a tool and resolves with its structured result (the error object included). */
  readonly call: (tool: string, args?: object) => Promise<Record<string, unknown>>;
  /** Its session's notebook directory (after the first pull). */
  readonly notebook: () => string;
  readonly stderr: () => string;
  /** Resolves once stderr contains `needle` `times` times (rejects if the process ends first). */
  readonly waitForStderr: (needle: string, times?: number) => Promise<void>;
  /** Stops it `how` and resolves with its exit status (or the killing signal's name). */
  readonly stop: (how: StopHow) => Promise<number | string>;
  readonly exited: Promise<number | string>;
}

/** Starts `quire serve` in `sandbox`, initialises MCP and pulls once. */
export const startSessionServe = async (
  sandbox: ServeSandbox,
  env: Readonly<Record<string, string>> = {},
): Promise<SessionServe> => {
  const child = spawn(
    process.execPath,
    [binPath, "serve", "--store", `file:${sandbox.store}`, "--private-root", sandbox.privateRoot],
    { env: { ...sandbox.env, ...env }, stdio: ["pipe", "pipe", "pipe"] },
  );
  let stderr = "";
  let stdout = "";
  let ended = false;
  const wakers: Array<() => void> = [];
  const wake = () => {
    for (const w of wakers.splice(0)) w();
  };
  const responses = new Map<number, Record<string, unknown>>();
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
    wake();
  });
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
    for (let at = stdout.indexOf("\n"); at >= 0; at = stdout.indexOf("\n")) {
      const message: unknown = JSON.parse(stdout.slice(0, at));
      stdout = stdout.slice(at + 1);
      if (typeof message === "object" && message !== null && "id" in message) {
        const id = message.id;
        if (typeof id === "number") responses.set(id, { ...message });
      }
    }
    wake();
  });
  // Writes after the process ended (or after a hang-up) are not this helper's errors.
  child.stdin.on("error", () => undefined);
  const exited = new Promise<number | string>((resolve) =>
    child.on("close", (code, signal) => {
      ended = true;
      wake();
      resolve(code ?? signal ?? "unknown");
    }),
  );
  const until = async (done: () => boolean, what: string) => {
    while (!done()) {
      if (ended) throw new Error(`serve ended before ${what}; stderr:\n${stderr}`);
      await new Promise<void>((resolve) => wakers.push(resolve));
    }
  };
  let nextId = 1;
  const request = async (method: string, params: object) => {
    const id = nextId++;
    child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
    await until(() => responses.has(id), `answering ${method}`);
    return responses.get(id) ?? {};
  };
  await request("initialize", {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "session-test", version: "1" },
  });
  child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`);
  const call = async (tool: string, args: object = {}): Promise<Record<string, unknown>> => {
    const response = await request("tools/call", { name: tool, arguments: args });
    const result = response["result"];
    if (typeof result !== "object" || result === null || !("structuredContent" in result))
      throw new Error(`no result for ${tool}: ${JSON.stringify(response)}`);
    const structured = result.structuredContent;
    if (typeof structured !== "object" || structured === null)
      throw new Error(`no structured result for ${tool}: ${JSON.stringify(response)}`);
    return { ...structured };
  };
  const pulled = await call("notes_pull");
  const notebook = pulled["path"];
  if (pulled["code"] !== "OK" || typeof notebook !== "string")
    throw new Error(`the first pull failed: ${JSON.stringify(pulled)}`);
  const stop = async (how: StopHow) => {
    switch (how) {
      case "stdin":
        child.stdin.end();
        break;
      case "SIGTERM":
      case "SIGINT":
      case "SIGKILL":
        child.kill(how);
        break;
      case "stdin+SIGTERM":
        child.stdin.end();
        setTimeout(() => child.kill("SIGTERM"), 15);
        break;
      case "hangup+SIGTERM":
        child.stdout.destroy();
        child.stderr.destroy();
        child.stdin.destroy();
        child.kill("SIGTERM");
        break;
    }
    return exited;
  };
  return {
    child,
    call,
    notebook: () => notebook,
    stderr: () => stderr,
    waitForStderr: (needle, times = 1) =>
      until(() => stderr.split(needle).length > times, `logging ${needle}`),
    stop,
    exited,
  };
};

/** The session directories (`quire-<16 hex>`) in `tmp`. */
export const sessionDirectories = (tmp: string): ReadonlyArray<string> =>
  existsSync(tmp)
    ? readdirSync(tmp)
        .filter((name) => /^quire-[0-9a-f]{16}$/.test(name))
        .sort()
    : [];

/** The entries of a private root's `copies/` and `sessions/` directories. */
export const privateLeftovers = (
  privateRoot: string,
): {
  readonly copies: ReadonlyArray<string>;
  readonly owners: ReadonlyArray<string>;
  readonly sessions: ReadonlyArray<string>;
} => {
  const list = (dir: string) => (existsSync(dir) ? readdirSync(dir).sort() : []);
  return {
    copies: list(path.join(privateRoot, "copies")),
    // Which store each copy was pulled from: gone with the copy (storeOfCopy.ts).
    owners: list(path.join(privateRoot, "owners")),
    sessions: list(path.join(privateRoot, "sessions")),
  };
};
