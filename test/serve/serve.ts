/**
 * Real `quire serve` processes for the issue-4 tests: each one spawned by the MCP SDK's
 * `StdioClientTransport` (`node bin/quire.js serve …`), with its stderr collected line by
 * line and every JSON-RPC message it wrote to stdout recorded as parsed (before the
 * client's schema validation can drop or reshape anything).
 *
 * `npm test` builds first; run `npm run build` before running these files alone.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { binPath } from "../helpers/cli.js";

/** A recording wrapper: every message the server sent, in order, exactly as parsed. */
class RecordingTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly received: Array<JSONRPCMessage> = [];
  constructor(readonly inner: StdioClientTransport) {}
  start(): Promise<void> {
    this.inner.onmessage = (message) => {
      this.received.push(message);
      this.onmessage?.(message);
    };
    this.inner.onclose = () => this.onclose?.();
    this.inner.onerror = (error) => this.onerror?.(error);
    return this.inner.start();
  }
  send(message: JSONRPCMessage): Promise<void> {
    return this.inner.send(message);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

/** One running `quire serve` and its client. */
export interface Served {
  readonly client: Client;
  /** Every message received from the server's stdout, parsed, in order. */
  readonly received: ReadonlyArray<JSONRPCMessage>;
  /** Everything written to stderr so far. */
  readonly stderr: () => string;
  /** Complete stderr lines so far. */
  readonly stderrLines: () => ReadonlyArray<string>;
  /** Resolves once a stderr line satisfies `predicate` (already written or later). */
  readonly waitForLine: (predicate: (line: string) => boolean) => Promise<string>;
  /** The child's pid. */
  readonly pid: number;
  /** Closes stdin (a graceful stop) and waits for the process to go. */
  readonly close: () => Promise<void>;
}

/** Spawns `quire serve <args>` with exactly `env` (plus the SDK's default PATH/HOME…). */
export const serve = async (
  args: ReadonlyArray<string>,
  options: { readonly env: Readonly<Record<string, string>>; readonly cwd: string },
): Promise<Served> => {
  const inner = new StdioClientTransport({
    command: process.execPath,
    args: [binPath, "serve", ...args],
    env: { ...options.env },
    cwd: options.cwd,
    stderr: "pipe",
  });
  let text = "";
  const waiters: Array<() => void> = [];
  inner.stderr?.on("data", (chunk: Buffer) => {
    text += chunk.toString("utf8");
    for (const wake of waiters.splice(0)) wake();
  });
  const stderrLines = () => text.split("\n").slice(0, -1);
  const waitForLine = async (predicate: (line: string) => boolean): Promise<string> => {
    for (;;) {
      const found = stderrLines().find(predicate);
      if (found !== undefined) return found;
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  };
  const transport = new RecordingTransport(inner);
  const client = new Client({ name: "issue4-test", version: "4.0.0" });
  await client.connect(transport);
  const pid = inner.pid;
  if (pid === null) throw new Error("quire serve has no pid");
  return {
    client,
    received: transport.received,
    stderr: () => text,
    stderrLines,
    waitForLine,
    pid,
    close: () => client.close(),
  };
};

/** A tool result as the tests read it. */
export interface ToolResult {
  readonly isError: boolean;
  readonly text: string;
  readonly structured: Record<string, unknown>;
}

/** Calls a tool (any name: unknown ones are errors too) and returns its single text item and structured object (throws otherwise). */
export const call = async (
  served: Served,
  name: string,
  args: Record<string, unknown> = {},
): Promise<ToolResult> => {
  const result = await served.client.callTool({ name, arguments: args });
  const content = result.content as ReadonlyArray<{ type: string; text?: string }>;
  if (content.length !== 1 || content[0]?.type !== "text" || content[0].text === undefined) {
    throw new Error(`expected exactly one text item, got ${JSON.stringify(result.content)}`);
  }
  const structured = result.structuredContent as Record<string, unknown> | undefined;
  if (structured === undefined || structured === null) {
    throw new Error(`no structured content in ${JSON.stringify(result)}`);
  }
  return { isError: result.isError === true, text: content[0].text, structured };
};

/** Parses the `key=value` fields of one log line (quoted values unescaped). */
export const fieldsOf = (line: string): Record<string, string> => {
  const fields: Record<string, string> = {};
  for (const match of line.matchAll(/([A-Za-z0-9_.-]+)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
    const [, key, raw] = match;
    if (key === undefined || raw === undefined) continue;
    fields[key] = raw.startsWith('"') ? (JSON.parse(raw) as string) : raw;
  }
  return fields;
};
