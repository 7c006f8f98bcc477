/**
 * An in-process MCP harness: the real server (makeMcpServer) over InMemoryTransport,
 * with a scriptable fake NotebookService, a counting IdGenerator and captured logs.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Effect, Layer } from "effect";
import { loggerLayer, parseLogLevel } from "../../src/app/logging.js";
import { type McpServerHandle, makeMcpServer } from "../../src/app/mcp/server.js";
import {
  type CommitRequest,
  Notebook,
  type NotebookService,
  type PullRequest,
  type SyncReport,
} from "../../src/app/Notebook.js";
import type { DomainError } from "../../src/domain/errors.js";
import type { RedactOptions } from "../../src/domain/redact.js";
import { type PathSets, noPathSets } from "../../src/domain/pathSets.js";
import { IdGenerator } from "../../src/ports/IdGenerator.js";

export const notebookDirectory = "/tmp/quire-test/notebook";

/** What the fake notebook does on each call (default: succeed with {@link defaultReport}). */
export interface Script {
  pull?: (request: PullRequest) => Effect.Effect<SyncReport, DomainError>;
  commit?: (request: CommitRequest) => Effect.Effect<SyncReport, DomainError>;
}

export const defaultReport = (path: string | undefined): SyncReport => ({
  path: path === undefined || path === "" ? notebookDirectory : path,
  generation: 18,
  files: [
    { path: "notes/c.md", insertions: 2, deletions: 0 },
    { path: "notes/a.md", insertions: 1, deletions: 1 },
    { path: "archive/old.md", insertions: 0, deletions: 3 },
  ],
});

export interface Harness {
  readonly client: Client;
  readonly handle: McpServerHandle;
  readonly calls: Array<
    { op: "pull"; request: PullRequest } | { op: "commit"; request: CommitRequest }
  >;
  readonly logs: Array<string>;
  /** Resolves once a log line matching `predicate` has been written (already or later). */
  readonly waitForLog: (predicate: (fields: Record<string, string>) => boolean) => Promise<void>;
  /** The harness's services (logger included), for running handle.drain. */
  readonly services: Layer.Layer<Notebook | IdGenerator>;
  readonly close: () => Promise<void>;
}

/** Parses the key=value fields of a log line (enough for tests: values without spaces or quoted). */
export const fieldsOf = (line: string): Record<string, string> => {
  const fields: Record<string, string> = {};
  for (const match of line.matchAll(/([A-Za-z0-9_.-]+)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
    const [, key, raw] = match;
    if (key === undefined || raw === undefined) continue;
    fields[key] = raw.startsWith('"') ? (JSON.parse(raw) as string) : raw;
  }
  return fields;
};

export const startHarness = async (
  script: Script = {},
  pathSets: PathSets = noPathSets,
  redaction: RedactOptions = {},
): Promise<Harness> => {
  const calls: Harness["calls"] = [];
  const logs: Array<string> = [];
  const waiters: Array<{
    predicate: (fields: Record<string, string>) => boolean;
    resolve: () => void;
  }> = [];
  const writeLog = (line: string) => {
    logs.push(line);
    const fields = fieldsOf(line);
    for (const waiter of waiters.filter((w) => w.predicate(fields))) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  };
  const waitForLog = (predicate: (fields: Record<string, string>) => boolean) =>
    logs.some((line) => predicate(fieldsOf(line)))
      ? Promise.resolve()
      : new Promise<void>((resolve) => waiters.push({ predicate, resolve }));
  let counter = 0;
  const notebook: NotebookService = {
    notebookDirectory,
    pull: (request) =>
      Effect.suspend(() => {
        calls.push({ op: "pull", request });
        return script.pull?.(request) ?? Effect.succeed(defaultReport(request.path));
      }),
    commit: (request) =>
      Effect.suspend(() => {
        calls.push({ op: "commit", request });
        return script.commit?.(request) ?? Effect.succeed(defaultReport(request.path));
      }),
    // The MCP surface has no history tool unless asked for: nothing here calls it.
    log: (request) =>
      Effect.succeed({ path: request.path ?? notebookDirectory, generation: 0, publications: [] }),
    status: (request) =>
      Effect.succeed({
        path: request.path ?? notebookDirectory,
        generation: 0,
        remoteGeneration: 0,
        ahead: 0,
        changes: [],
        markers: [],
        invalid: [],
        recoveryPending: false,
      }),
    diff: (request) =>
      Effect.succeed({ path: request.path ?? notebookDirectory, generation: 0, files: [] }),
    show: (request) =>
      Effect.succeed({
        path: request.path ?? notebookDirectory,
        generation: request.generation,
        time: "",
        author: { name: "", version: "" },
        message: "",
        files: [],
      }),
    restore: (request) =>
      Effect.succeed({
        path: request.path ?? notebookDirectory,
        generation: request.generation,
        files: [],
        held: [],
      }),
    revert: (request) =>
      Effect.succeed({
        path: request.path ?? notebookDirectory,
        generation: request.generation,
        files: [],
        held: [],
      }),
    // The MCP server never ends sessions itself (serve's shutdown does, after it).
    discardIfPublished: () => Effect.die("the MCP server must not discard working copies"),
  };
  const services = Layer.mergeAll(
    Layer.succeed(Notebook, notebook),
    Layer.succeed(IdGenerator, {
      uuidv7: Effect.succeed("01890000-0000-7000-8000-000000000000"),
      diagnosticId: Effect.sync(() => (++counter).toString(16).padStart(16, "0")),
    }),
    loggerLayer({
      spec: parseLogLevel("debug").spec,
      write: writeLog,
      redaction,
    }),
  );
  const handle = await Effect.runPromise(
    makeMcpServer({ version: "9.8.7", pathSets, redaction }).pipe(Effect.provide(services)),
  );
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await handle.connect(serverTransport);
  const client = new Client({ name: "test-client", version: "1.2.3" });
  await client.connect(clientTransport);
  return {
    client,
    handle,
    calls,
    logs,
    waitForLog,
    services,
    close: async () => {
      await client.close();
      await handle.server.close();
    },
  };
};
