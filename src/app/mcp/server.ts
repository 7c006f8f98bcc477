/**
 * The MCP server (SPEC §2): the SDK's low-level `Server` with exactly two tools over the
 * {@link Notebook} use cases. A thin shell: decode, call, wrap in an envelope, log.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  type CallToolResult,
  ErrorCode,
  type JSONRPCRequest,
  ListToolsRequestSchema,
  McpError,
  type RequestId,
  type Tool,
  isJSONRPCErrorResponse,
  isJSONRPCResultResponse,
} from "@modelcontextprotocol/sdk/types.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  Cause,
  Clock,
  Deferred,
  Effect,
  Either,
  Exit,
  Fiber,
  FiberId,
  LogLevel,
  Runtime,
} from "effect";
import { errorEnvelope, successEnvelope } from "../../domain/envelope.js";
import { clientAuthor, recordedAuthor } from "../../domain/author.js";
import { type DomainError, domainError } from "../../domain/errors.js";
import type { PathSets } from "../../domain/pathSets.js";
import { type RedactOptions, redact } from "../../domain/redact.js";
import { IdGenerator } from "../../ports/IdGenerator.js";
import { type Author, Notebook, type SyncReport } from "../Notebook.js";
import { describeCommit, describePull, instructions } from "./descriptions.js";
import { defectOf } from "./callDefects.js";
import { arrivalKey, makeArrivalOrder } from "./arrivalOrder.js";
import { type CallDefect, unknownParamsMember } from "./jsonRpcLine.js";
import {
  type Echo,
  cutEcho,
  decodeCommitArguments,
  decodeLogArguments,
  decodePullArguments,
  logIntegers,
} from "./toolInput.js";
import { defaultLogLimit, type HistoryLog } from "../../domain/history.js";
import { logObject, renderLog } from "../../domain/logReport.js";

/** What the server needs besides the services. */
export interface McpServerSettings {
  /** The release version advertised as `serverInfo.version`. */
  readonly version: string;
  /** The path sets this server enforces, advertised on every surface. */
  readonly pathSets: PathSets;
  /** Extra scrubbing of error text (private root, secret values). */
  readonly redaction?: RedactOptions;
  /** `--author`: the name this server's publications are recorded under (domain/author.ts). */
  readonly author?: string;
  /** `--history-tool`: also serve the read-only `notes_log` (SPEC §11); off by default. */
  readonly historyTool?: boolean;
}

/** A built server and the way to stop it gracefully. */
export interface McpServerHandle {
  readonly server: Server;
  /**
   * Connects the server to `transport`, noting when each tool call's response has been
   * written so that {@link McpServerHandle.drain} waits for answers, not just for work.
   * Use this rather than `server.connect`.
   */
  readonly connect: (transport: Transport) => Promise<void>;
  /**
   * Stops taking tool calls (new ones get a protocol error), waits up to `graceMs` until
   * every call in flight has been answered, then interrupts whatever is left and waits
   * for it to unwind.
   * Does not close the transport; never fails.
   */
  readonly drain: (graceMs: number) => Effect.Effect<void>;
}

const objectSchema = (
  properties: Record<
    string,
    | { type: "string"; description: string }
    | { type: "integer"; minimum: number; maximum?: number; description: string }
  >,
  required: ReadonlyArray<string>,
): Tool["inputSchema"] => ({
  type: "object",
  properties,
  ...(required.length === 0 ? {} : { required: [...required] }),
  additionalProperties: false,
});

const pathProperty = {
  type: "string",
  description:
    "Absolute path (or ~/…) of the working copy, at or below the workspace root. Omit it or pass an empty string for the server's notebook directory.",
} as const;

/**
 * The two tools, with hand-written input schemas and no output schema (SPEC §2.3), a
 * title and the behaviour hints (SPEC §12; docs/mcp-clients.md says why each value):
 * both write (files into the working copy; commit also into the shared store), so
 * neither is read-only; pull deletes or rewrites only files whose content the store
 * keeps and never an unpublished edit, while commit can delete notes for everyone and
 * resets edits to read-only paths; repeating a pull changes nothing more, repeating a
 * commit can publish what the first one refused; both reach only the configured store.
 */
export const toolDefinitions = (sets: PathSets, historyTool = false): ReadonlyArray<Tool> => [
  ...twoTools(sets),
  ...(historyTool ? [logTool] : []),
];

/**
 * `notes_log` (`serve --history-tool`, SPEC §11): the notebook's publications, newest
 * first. It reads and writes nothing but the copy's pack cache, so it is read-only and
 * idempotent.
 */
const logTool: Tool = {
  name: "notes_log",
  title: "Show the notebook's history",
  description:
    "Lists the notebook's publications, newest first: generation, time, author, message and the files each changed with their line counts. Read-only. The working copy must have been pulled. Use sinceGeneration to see what others published after a generation you know, file to see who changed a note.",
  inputSchema: objectSchema(
    {
      path: pathProperty,
      file: {
        type: "string",
        description:
          "Only publications that changed this notebook path (relative to the working copy's top, as results list files), or a file below it.",
      },
      sinceGeneration: {
        type: "integer",
        minimum: logIntegers.sinceGeneration.min,
        maximum: logIntegers.sinceGeneration.max,
        description: "Only publications newer than this generation.",
      },
      limit: {
        type: "integer",
        minimum: logIntegers.limit.min,
        maximum: logIntegers.limit.max,
        description: `At most this many publications (default ${defaultLogLimit}).`,
      },
    },
    [],
  ),
  annotations: {
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  },
};

const twoTools = (sets: PathSets): ReadonlyArray<Tool> => [
  {
    name: "notes_pull",
    title: "Pull the shared notebook",
    description: describePull(sets),
    inputSchema: objectSchema({ path: pathProperty }, []),
    annotations: {
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    },
  },
  {
    name: "notes_commit",
    title: "Commit notebook changes",
    description: describeCommit(sets),
    inputSchema: objectSchema(
      {
        message: {
          type: "string",
          description:
            "What changed and why: non-blank UTF-8 without U+0000, at most 16,384 bytes.",
        },
        path: pathProperty,
      },
      ["message"],
    ),
    annotations: {
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: false,
    },
  },
];

/** The result of one call and the facts its completion record carries. */
interface Outcome {
  readonly result: CallToolResult;
  readonly code: string;
  readonly reason?: string;
  readonly generation?: number;
}

const cutText = (text: string, length: number): string =>
  text.length > length ? `${text.slice(0, length)}…` : text;

const unknownAuthor: Author = { name: "unknown", version: "unknown" };

/** Codes an operator should notice; the rest are ordinary outcomes of agents' work. */
const noteworthy = new Set([
  "STORAGE_FAILURE",
  "STORAGE_INTEGRITY",
  "RECOVERY_FAILURE",
  "ENGINE_FAILED",
  "REMOTE_BUSY",
]);

/** How long a stop past its grace waits for the interrupted calls' answers to be written. */
const stopAnswerMs = 5_000;

/** The answer to a commit interrupted by the server's stop: its publication is not known. */
const stoppedCommit = domainError({
  code: "STORAGE_FAILURE",
  reason: "PUBLICATION_UNKNOWN",
  message:
    "quire was stopped while this commit ran (the server shut down), so whether it was published is not known; call notes_pull, and if your changes are not in the notebook, commit them again.",
});

/** The answer to a pull interrupted by the server's stop: the next call repairs the copy. */
const stoppedPull = domainError({
  code: "RECOVERY_FAILURE",
  reason: "UNEXPECTED_FAILURE",
  message:
    "quire was stopped while this pull ran (the server shut down); nothing was published, and the next call repairs the working copy: call notes_pull again.",
  recovery: { stage: "server-stopped", remoteAccepted: "no", resynchronized: false },
});

/**
 * The answer to a call still waiting for an earlier call on its copy (arrivalOrder.ts)
 * when the server's stop ends its grace: it never ran.
 */
const stoppedBeforeRun = domainError({
  code: "STORAGE_FAILURE",
  reason: "STORE_UNAVAILABLE",
  message:
    "quire was stopped before this call ran (the server shut down while it waited for an earlier call on the same working copy); nothing was changed: call it again.",
});

/** The answer to a notes_log interrupted by the server's stop: it changed nothing. */
const stoppedLog = domainError({
  code: "STORAGE_FAILURE",
  reason: "STORE_UNAVAILABLE",
  message:
    "quire was stopped while this log was being read (the server shut down); nothing was changed: call notes_log again.",
});

/**
 * Runs one `tools/call`: a fresh diagnosticId, one start record, the decoded call, one
 * completion record (`code`, `durationMs`, and `generation` on success or `reason` on an
 * error; `code=CANCELLED` when interrupted). Never fails: a domain error or a defect
 * becomes the error envelope (a defect as ENGINE_FAILED/INTERNAL, its cause logged with
 * the same diagnosticId). The use cases' own log records carry the diagnosticId too.
 *
 * `name` and `args` are what the client sent, unvalidated: a `name` that is not one of
 * the two tools (or not a string), arguments of any JSON shape, and a `defect` the
 * transport found in the request's text all end in INVALID_REQUEST/INVALID_ARGUMENT.
 * Text echoed from the request (the tool name, a field name) is redacted, then cut to
 * 64 characters, in the result and in the log records.
 *
 * `turn` completes when the call may run (calls on one copy run in arrival order,
 * arrivalOrder.ts); it is awaited after the start record.
 */
export const callTool = (
  name: unknown,
  args: unknown,
  author: Author,
  settings: McpServerSettings,
  defect?: CallDefect,
  stopping: Effect.Effect<void> = Effect.never,
  turn: Effect.Effect<void> = Effect.void,
): Effect.Effect<CallToolResult, never, Notebook | IdGenerator> =>
  Effect.gen(function* () {
    const diagnosticId = yield* (yield* IdGenerator).diagnosticId;
    // Redacted before it is cut: a secret cut in half would no longer be recognised.
    const echo: Echo = (text) => cutEcho(redact(text, settings.redaction));
    const tool = typeof name === "string" ? echo(name) : undefined;
    const startedAt = yield* Clock.currentTimeMillis;
    const record = (level: LogLevel.LogLevel, message: string, fields: object) =>
      Effect.logWithLevel(level, message).pipe(
        Effect.annotateLogs({ module: "mcp", ...(tool === undefined ? {} : { tool }), ...fields }),
      );

    const failure = (error: DomainError): Outcome => {
      const envelope = errorEnvelope(error, diagnosticId, settings.pathSets, settings.redaction);
      return {
        result: {
          isError: true,
          content: [{ type: "text", text: envelope.text }],
          structuredContent: { ...envelope.structured },
        },
        code: error.code,
        reason: error.reason,
      };
    };
    const success = (report: SyncReport): Outcome => {
      const envelope = successEnvelope(report, settings.pathSets);
      return {
        result: {
          content: [{ type: "text", text: envelope.text }],
          structuredContent: { ...envelope.structured },
        },
        code: "OK",
        generation: report.generation,
      };
    };

    const logged =
      (sinceGeneration: number | undefined, file: string | undefined) =>
      (log: HistoryLog & { readonly path: string }): Outcome => ({
        result: {
          content: [
            {
              type: "text",
              text: renderLog(log, {
                color: false,
                full: true,
                ...(sinceGeneration === undefined ? {} : { sinceGeneration }),
                ...(file === undefined ? {} : { file }),
              }),
            },
          ],
          structuredContent: { code: "OK", ...logObject(log) },
        },
        code: "OK",
        generation: log.generation,
      });

    const dispatch: Effect.Effect<Outcome, never, Notebook> = Effect.gen(function* () {
      const notebook = yield* Notebook;
      // A call still running when the server stops past its grace is interrupted (its
      // uninterruptible steps end first) and answered with what is known — never left
      // without an answer, never a protocol error.
      const run = <A>(
        operation: Effect.Effect<A, DomainError>,
        answer: (a: A) => Outcome,
        stopped: DomainError,
      ) =>
        Effect.raceFirst(
          operation.pipe(Effect.match({ onFailure: failure, onSuccess: answer })),
          stopping.pipe(Effect.as(failure(stopped))),
        );
      const refuse = (message: string) =>
        failure(domainError({ code: "INVALID_REQUEST", reason: "INVALID_ARGUMENT", message }));
      if (defect !== undefined) return refuse(defect(echo));
      if (typeof name !== "string") {
        return refuse(
          `tools/call needs "name", the tool to call as a string: ${settings.historyTool === true ? "notes_pull, notes_commit or notes_log" : "notes_pull or notes_commit"}.`,
        );
      }
      if (name === "notes_pull") {
        const decoded = decodePullArguments(args, echo);
        if (Either.isLeft(decoded)) return failure(decoded.left);
        return yield* run(notebook.pull(decoded.right), success, stoppedPull);
      }
      if (name === "notes_commit") {
        const decoded = decodeCommitArguments(args, echo);
        if (Either.isLeft(decoded)) return failure(decoded.left);
        return yield* run(notebook.commit({ ...decoded.right, author }), success, stoppedCommit);
      }
      if (name === "notes_log" && settings.historyTool === true) {
        const decoded = decodeLogArguments(args, echo);
        if (Either.isLeft(decoded)) return failure(decoded.left);
        const { limit, ...rest } = decoded.right;
        return yield* run(
          notebook.log({ ...rest, limit: limit ?? defaultLogLimit }),
          logged(rest.sinceGeneration, rest.file),
          stoppedLog,
        );
      }
      return refuse(
        `Unknown tool ${JSON.stringify(tool)}; the tools are notes_pull${settings.historyTool === true ? ", notes_commit and notes_log" : " and notes_commit"}.`,
      );
    }).pipe(
      Effect.catchAllDefect((defect) =>
        record(LogLevel.Error, "tool call failed unexpectedly", {}).pipe(
          Effect.annotateLogs("cause", Cause.pretty(Cause.die(defect))),
          Effect.as(
            failure(
              domainError({
                code: "ENGINE_FAILED",
                reason: "INTERNAL",
                message: `An unexpected internal error occurred; the log record with diagnosticId ${diagnosticId} has the cause.`,
              }),
            ),
          ),
        ),
      ),
    );

    const outcome = yield* record(LogLevel.Info, "tool call started", {}).pipe(
      // After the start record: a call cancelled while it waits for its turn is logged
      // CANCELLED like any other; one still waiting when the stop's grace ends never runs.
      Effect.zipRight(
        Effect.raceFirst(turn.pipe(Effect.as(true)), stopping.pipe(Effect.as(false))),
      ),
      Effect.flatMap((ready) => (ready ? dispatch : Effect.succeed(failure(stoppedBeforeRun)))),
      Effect.onExit((exit) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const durationMs = now - startedAt;
          if (Exit.isFailure(exit)) {
            return record(LogLevel.Info, "tool call completed", { code: "CANCELLED", durationMs });
          }
          const { code, reason, generation } = exit.value;
          return record(
            noteworthy.has(code) ? LogLevel.Warning : LogLevel.Info,
            "tool call completed",
            {
              code,
              ...(reason === undefined ? {} : { reason }),
              durationMs,
              ...(generation === undefined ? {} : { generation }),
            },
          );
        }),
      ),
      Effect.annotateLogs("diagnosticId", diagnosticId),
    );
    return outcome.result;
  });

/**
 * Builds the server over the {@link Notebook} and {@link IdGenerator} services of the
 * calling context: name `quire`, capabilities `{ tools: {} }` only, the session
 * instructions naming the notebook directory, and the two tool handlers. Connect it to
 * any transport (stdio in `quire serve`, in-memory in tests). A cancelled request
 * interrupts its call and stays a protocol-level cancellation (no result is sent).
 */
export const makeMcpServer = (
  settings: McpServerSettings,
): Effect.Effect<McpServerHandle, never, Notebook | IdGenerator> =>
  Effect.gen(function* () {
    const notebook = yield* Notebook;
    const runtime = yield* Effect.runtime<Notebook | IdGenerator>();
    const server = new Server(
      { name: "quire", version: settings.version },
      {
        capabilities: { tools: {} },
        instructions: instructions(notebook.notebookDirectory, settings.pathSets),
      },
    );
    const tools = toolDefinitions(settings.pathSets, settings.historyTool === true);
    const inFlight = new Set<Fiber.RuntimeFiber<CallToolResult>>();
    // tools/call requests whose response has not reached the transport yet: a call is
    // over for drain only once its answer is written, not when its fiber ends.
    // A client may reuse an id while a call with it runs (JSON-RPC forbids it, nothing
    // stops it): each id keeps a queue, and each answer sent for it settles one call.
    const unanswered = new Map<RequestId, Array<() => void>>();
    const answers = new Set<Promise<void>>();
    // Completed when a stop's grace is over: calls still running are then answered.
    const stopping = yield* Deferred.make<void>();
    const settle = (id: RequestId) => {
      const waiting = unanswered.get(id);
      waiting?.shift()?.();
      if (waiting?.length === 0) unanswered.delete(id);
    };
    const awaitAnswer = (id: RequestId): Promise<void> =>
      new Promise<void>((resolve) => {
        const waiting = unanswered.get(id);
        if (waiting === undefined) unanswered.set(id, [resolve]);
        else waiting.push(resolve);
      });
    let accepting = true;
    const arrival = makeArrivalOrder();

    // What the SDK and the transport could not use (a malformed notification, a response
    // to nothing) or could not send: noted on stderr, redacted before it is cut like
    // every echo.
    server.onerror = (error) =>
      Runtime.runSync(runtime)(
        Effect.logWarning("protocol error").pipe(
          Effect.annotateLogs({
            module: "mcp",
            error: cutText(redact(error.message, settings.redaction), 300),
          }),
        ),
      );
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...tools] }));
    // tools/call is handled as the fallback, not through setRequestHandler: the SDK's
    // handler validates (and copies) the request first, answering non-object arguments
    // with a protocol error and dropping `__proto__` keys, so the strict decode would
    // never see what the client sent. Here it sees the request's params as parsed.
    server.fallbackRequestHandler = async (request: JSONRPCRequest, extra) => {
      if (request.method !== "tools/call") {
        throw new McpError(ErrorCode.MethodNotFound, "Method not found");
      }
      if (!accepting) throw new McpError(ErrorCode.InternalError, "quire is shutting down");
      const answered = awaitAnswer(extra.requestId);
      answers.add(answered);
      void answered.then(() => answers.delete(answered));
      const client = server.getClientVersion();
      const author = recordedAuthor(
        client === undefined ? unknownAuthor : clientAuthor(client.name, client.version),
        settings.author,
      );
      const params = request.params ?? {};
      // Taken now, before any await: calls on one copy run in the order they arrived.
      const turn = arrival.enter(arrivalKey(params["arguments"], notebook.notebookDirectory));
      // Whatever happens below, the call leaves its queue: a throw would block the copy.
      try {
        const fiber = Runtime.runFork(runtime)(
          callTool(
            params["name"],
            params["arguments"],
            author,
            settings,
            defectOf(request) ?? unknownParamsMember(params),
            Deferred.await(stopping),
            Effect.promise(() => turn.ready),
          ),
        );
        inFlight.add(fiber);
        const cancel = () => fiber.unsafeInterruptAsFork(FiberId.none);
        // The SDK runs this handler a few microtasks after reading the request, and acts on
        // a notifications/cancelled read in the same chunk before that: the signal may be
        // aborted already, and an abort listener added now would never fire (the call ran
        // to its end, a commit published, and the client, sent no answer, never knew).
        if (extra.signal.aborted) cancel();
        else extra.signal.addEventListener("abort", cancel, { once: true });
        try {
          const exit = await Runtime.runPromise(runtime)(Fiber.await(fiber));
          if (Exit.isSuccess(exit)) return exit.value;
          // Interrupted: by the client's cancellation (the SDK then sends nothing) or by
          // shutdown. Either way not a domain error.
          throw new McpError(ErrorCode.InternalError, "the call was cancelled");
        } finally {
          extra.signal.removeEventListener("abort", cancel);
          inFlight.delete(fiber);
          // A cancelled request gets no response at all.
          if (extra.signal.aborted) settle(extra.requestId);
        }
      } finally {
        turn.done();
      }
    };

    const connect = (transport: Transport): Promise<void> => {
      const send = transport.send.bind(transport);
      transport.send = async (message, options) => {
        const answered = isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message);
        try {
          await send(message, options);
        } finally {
          // An answer that could not be written (the host closed stdout) is as over for
          // drain as one written: waiting on it would only hold the stop.
          if (answered && message.id !== undefined) settle(message.id);
        }
      };
      return server.connect(transport);
    };

    const drain = (graceMs: number): Effect.Effect<void> =>
      Effect.gen(function* () {
        accepting = false;
        const pending = [...answers];
        if (pending.length === 0) return;
        yield* Effect.logInfo("waiting for calls in flight").pipe(
          Effect.annotateLogs({ module: "mcp", calls: pending.length }),
        );
        const finished = yield* Effect.promise(() => Promise.all(pending)).pipe(
          Effect.timeoutTo({ duration: graceMs, onSuccess: () => true, onTimeout: () => false }),
        );
        if (!finished) {
          yield* Effect.logWarning("interrupting calls still in flight").pipe(
            Effect.annotateLogs({ module: "mcp", calls: inFlight.size }),
          );
          // Each pull and commit ends its uninterruptible steps and is answered (the
          // answer written before the process goes); whatever is still running after
          // that short wait is interrupted without an answer.
          yield* Deferred.succeed(stopping, undefined);
          yield* Effect.promise(() => Promise.all([...answers])).pipe(
            Effect.timeoutOption(stopAnswerMs),
          );
          yield* Effect.forEach([...inFlight], (fiber) => Fiber.interrupt(fiber), {
            concurrency: "unbounded",
            discard: true,
          });
        }
      });

    return { server, connect, drain };
  });
