/**
 * How `quire serve` reads one line of stdin (MCP's stdio framing: one JSON-RPC message
 * per LF-terminated line) — what to hand to the MCP server, what to answer at once, and
 * what to drop. Pure.
 *
 * The SDK's own reader drops, with no answer, every line that is not a valid JSON-RPC
 * message (its client then waits forever), and its `tools/call` validation copies the
 * arguments, losing a `__proto__` key, and refuses non-object arguments with a protocol
 * error. Here, instead:
 *
 * - a valid `tools/call` is delivered with the arguments exactly as `JSON.parse` built
 *   them (own `__proto__` keys included), unless its text repeats a key;
 * - a `tools/call` the server cannot take as it is (a repeated key, params that are not
 *   an object, members JSON-RPC does not define, a line over the size limit) becomes a
 *   {@link MalformedCall}, which the server answers with its INVALID_REQUEST envelope;
 * - any other line that is not a message gets the JSON-RPC error the spec prescribes
 *   (`-32700` when it is not JSON, `-32600` otherwise), except malformed notifications
 *   and responses, which JSON-RPC never answers.
 */
import {
  ErrorCode,
  InitializeRequestSchema,
  type JSONRPCMessage,
  JSONRPCMessageSchema,
  type JSONRPCRequest,
  ListToolsRequestSchema,
  PingRequestSchema,
  type RequestId,
  isJSONRPCRequest,
} from "@modelcontextprotocol/sdk/types.js";
import type { Echo } from "./toolInput.js";
import {
  type DuplicateKey,
  findDuplicateKey,
  isJsonObject,
  jsonTypeOf,
  topLevelMembers,
} from "./jsonText.js";

/**
 * What is wrong with a `tools/call`, as the envelope's message. A function of how the
 * server shows text the client sent (it redacts, then cuts), so this module never has
 * to cut a name itself.
 */
export type CallDefect = (echo: Echo) => string;

/** What to do with one line. */
export type LineOutcome =
  /** Hand `message` to the MCP server. */
  | { readonly _tag: "Deliver"; readonly message: JSONRPCMessage }
  /** A `tools/call` to answer with INVALID_REQUEST: `request` stands in for what was sent. */
  | {
      readonly _tag: "MalformedCall";
      readonly request: JSONRPCRequest;
      readonly defect: CallDefect;
    }
  /** Not a message: write `message` (a JSON-RPC error response) back at once. */
  | { readonly _tag: "Answer"; readonly message: JSONRPCMessage }
  /** Not a message, and nothing to answer (a blank line, a malformed notification or response). */
  | { readonly _tag: "Drop"; readonly why: string };

const members = new Set(["jsonrpc", "id", "method", "params"]);

const errorResponse = (
  id: RequestId | undefined,
  code: ErrorCode,
  message: string,
): LineOutcome => ({
  _tag: "Answer",
  // JSON-RPC wants `"id": null` when the id is unknown; MCP's schema (and its SDK)
  // has no null id and omits it instead.
  message: { jsonrpc: "2.0", ...(id === undefined ? {} : { id }), error: { code, message } },
});

const requestId = (value: unknown): RequestId | undefined =>
  typeof value === "string" || (typeof value === "number" && Number.isSafeInteger(value))
    ? value
    : undefined;

/** A request standing in for a malformed `tools/call`: its id, and its tool name if it had one. */
const standIn = (id: RequestId, params: unknown): JSONRPCRequest => {
  const name = isJsonObject(params) ? params["name"] : undefined;
  return {
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: typeof name === "string" ? { name } : {},
  };
};

const describeDuplicate =
  (duplicate: DuplicateKey): CallDefect =>
  (echo) => {
    const where =
      duplicate.path.length === 0
        ? "at the top level"
        : `in ${duplicate.path.map((key) => (key === "[]" ? key : echo(key))).join(".")}`;
    return `The request repeats the key ${JSON.stringify(echo(duplicate.key))} ${where}; JSON readers disagree on which value counts, so it is refused. Send each key once.`;
  };

/** Why a `tools/call` object failed the JSON-RPC message schema, most specific first. */
const describeMalformed =
  (request: Readonly<Record<string, unknown>>): CallDefect =>
  (echo) => {
    const params = request["params"];
    if (params !== undefined && !isJsonObject(params)) {
      return `tools/call params must be a JSON object (name and arguments), not ${jsonTypeOf(params)}.`;
    }
    if (request["jsonrpc"] !== "2.0") return `The request's "jsonrpc" must be "2.0".`;
    const extra = Object.keys(request).find((key) => !members.has(key));
    if (extra !== undefined) {
      return `The request has a member ${JSON.stringify(echo(extra))}, which JSON-RPC does not define.`;
    }
    return isJsonObject(params) && Object.hasOwn(params, "_meta")
      ? "tools/call params._meta is malformed: it must be an object whose progressToken is a string or an integer."
      : "The request is not a valid JSON-RPC 2.0 request.";
  };

interface ParamsIssue {
  readonly path: ReadonlyArray<PropertyKey>;
  readonly message: string;
}

/** The first issue of a schema check, `undefined` when it passed. */
const firstIssue = (checked: {
  readonly success: boolean;
  readonly error?: { readonly issues: ReadonlyArray<ParamsIssue> } | undefined;
}): ParamsIssue | undefined =>
  checked.success
    ? undefined
    : (checked.error?.issues[0] ?? { path: ["params"], message: "not the expected shape" });

/**
 * The issue of a `tools/list` that names a cursor. quire lists every tool in one page and
 * never answers a `nextCursor`, so any cursor is one it did not issue; MCP asks servers to
 * refuse such a cursor with `-32602` rather than answer a page as if it were valid.
 */
const unissuedCursor = (request: JSONRPCRequest): ParamsIssue | undefined =>
  request.params !== undefined && Object.hasOwn(request.params, "cursor")
    ? {
        path: ["params", "cursor"],
        message:
          "quire lists every tool in one page and issued no cursor; call tools/list without one",
      }
    : undefined;

/**
 * The requests besides `tools/call` that the SDK answers, each with the check of its
 * schema (the first issue, or `undefined`). The SDK answers params of the wrong shape
 * with `-32603` (internal error) and the whole validation report, many lines of JSON, as
 * the message; these are checked here first and answered `-32602` (invalid params)
 * naming the first bad field.
 */
const sdkParamsChecks: Readonly<
  Record<string, (request: JSONRPCRequest) => ParamsIssue | undefined>
> = {
  initialize: (request) => firstIssue(InitializeRequestSchema.safeParse(request)),
  "tools/list": (request) =>
    firstIssue(ListToolsRequestSchema.safeParse(request)) ?? unissuedCursor(request),
  ping: (request) => firstIssue(PingRequestSchema.safeParse(request)),
};

/** The `-32602` answer to `request` if the SDK would refuse its params, or undefined. */
const invalidParams = (request: JSONRPCRequest): LineOutcome | undefined => {
  const check = Object.hasOwn(sdkParamsChecks, request.method)
    ? sdkParamsChecks[request.method]
    : undefined;
  const issue = check?.(request);
  if (issue === undefined) return undefined;
  // Issue paths name only members of the SDK's schema (or array indices), never a key
  // the client made up; the message names the expected and received types, not values.
  const where = issue.path.map(String).join(".");
  const why = issue.message.replace(/\s+/g, " ");
  return errorResponse(
    request.id,
    ErrorCode.InvalidParams,
    `Invalid params: ${request.method} ${where}: ${why.slice(0, 200)}`,
  );
};

/** The members of `tools/call` params quire reads. */
const callParamsMembers = new Set(["name", "arguments", "_meta"]);

/**
 * Whether `key` of `params` is MCP's task metadata (`"task": {…}`, 2025-11-25), which
 * quire accepts and ignores: it declares no tasks capability, and the tasks spec says a
 * receiver without it MUST process the request normally, ignoring that metadata.
 */
const isTaskMetadata = (params: Record<string, unknown>, key: string): boolean =>
  key === "task" && isJsonObject(params[key]);

/**
 * The defect of `tools/call` params holding a member other than `name`, `arguments`,
 * `_meta` and an object `task`, or undefined. The SDK's schema lets any extra member
 * through, so a misspelt `arguments` (`"argumets": {"path": …}`) would otherwise run the
 * tool with no arguments at all — on the server's notebook directory, not the one the
 * client named. A `task` that is not an object is no task metadata: refused too.
 */
export const unknownParamsMember = (params: unknown): CallDefect | undefined => {
  if (!isJsonObject(params)) return undefined;
  const extra = Object.keys(params).find(
    (key) => !callParamsMembers.has(key) && !isTaskMetadata(params, key),
  );
  if (extra === undefined) return undefined;
  if (extra === "task") {
    return () =>
      "tools/call params.task must be an object (MCP task metadata, which quire ignores: it runs every call directly), or be left out.";
  }
  return (echo) =>
    `tools/call params has a member ${JSON.stringify(echo(extra))}; it accepts only name, arguments, _meta and task.`;
};

/**
 * The request without its `params.task`: the SDK answers a task-augmented call to a
 * server without the tasks capability with a -32603 protocol error before any handler
 * runs, where MCP wants it processed as a normal call.
 */
const withoutTask = (request: JSONRPCRequest): JSONRPCRequest => {
  const params = request.params;
  if (params === undefined || !Object.hasOwn(params, "task")) return request;
  return {
    ...request,
    params: Object.fromEntries(Object.entries(params).filter(([key]) => key !== "task")),
  };
};

/** The request, with `params.arguments` exactly as parsed from the text (not a copy). */
const withRawArguments = (request: JSONRPCRequest, raw: unknown): JSONRPCRequest => {
  const params = isJsonObject(raw) ? raw["params"] : undefined;
  if (!isJsonObject(params) || !Object.hasOwn(params, "arguments")) return request;
  return { ...request, params: { ...request.params, arguments: params["arguments"] } };
};

/** The defect of a `tools/call` whose line was not UTF-8 (its text holds U+FFFD for those bytes). */
const notUtf8: CallDefect = () =>
  "The request's line is not valid UTF-8: some bytes are no UTF-8 character, and reading them as U+FFFD would act on text the client did not send. Send the request as UTF-8.";

/**
 * Reads one line (without its LF; a trailing CR is ignored). `utf8` says whether the
 * line's bytes were valid UTF-8: a `tools/call` whose were not is a {@link MalformedCall},
 * since decoding turned the bad bytes into U+FFFD — a path or message the client never
 * sent. Other messages are delivered as decoded (a client's odd name is never refused).
 */
export const readLine = (text: string, utf8 = true): LineOutcome => {
  const line = text.endsWith("\r") ? text.slice(0, -1) : text;
  if (line.trim() === "") return { _tag: "Drop", why: "a blank line" };
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return errorResponse(undefined, ErrorCode.ParseError, "Parse error: the line is not JSON.");
  }
  const parsed = JSONRPCMessageSchema.safeParse(value);
  if (parsed.success) {
    const message = parsed.data;
    if (!isJSONRPCRequest(message)) return { _tag: "Deliver", message };
    if (message.method !== "tools/call") {
      return invalidParams(message) ?? { _tag: "Deliver", message };
    }
    // Answered through a stand-in that holds only the tool name when a member is refused:
    // the SDK would act on an extra member itself (a `task`) before the handler saw it.
    const extra = unknownParamsMember(message.params);
    if (extra !== undefined)
      return {
        _tag: "MalformedCall",
        request: standIn(message.id, message.params),
        defect: extra,
      };
    if (!utf8)
      return {
        _tag: "MalformedCall",
        request: standIn(message.id, message.params),
        defect: notUtf8,
      };
    const request = withoutTask(withRawArguments(message, value));
    const duplicate = findDuplicateKey(line);
    return duplicate === undefined
      ? { _tag: "Deliver", message: request }
      : { _tag: "MalformedCall", request, defect: describeDuplicate(duplicate) };
  }
  if (!isJsonObject(value)) {
    return errorResponse(
      undefined,
      ErrorCode.InvalidRequest,
      `Invalid Request: a message must be a JSON object, not ${jsonTypeOf(value)}.`,
    );
  }
  const id = requestId(value["id"]);
  if (typeof value["method"] !== "string") {
    if (Object.hasOwn(value, "result") || Object.hasOwn(value, "error")) {
      return { _tag: "Drop", why: "a malformed response" };
    }
    return errorResponse(id, ErrorCode.InvalidRequest, "Invalid Request: no method.");
  }
  if (!Object.hasOwn(value, "id")) return { _tag: "Drop", why: "a malformed notification" };
  if (id === undefined) {
    return errorResponse(
      undefined,
      ErrorCode.InvalidRequest,
      // An integer past 2^53 - 1 is an integer to JSON, but loses digits when read (the
      // answer would carry another id), so it is named as too large, not as no integer.
      "Invalid Request: id must be a string or an integer from -9007199254740991 to 9007199254740991.",
    );
  }
  if (value["method"] !== "tools/call") {
    return errorResponse(id, ErrorCode.InvalidRequest, "Invalid Request: not JSON-RPC 2.0.");
  }
  return {
    _tag: "MalformedCall",
    request: standIn(id, value["params"]),
    defect: describeMalformed(value),
  };
};

/**
 * Reads a line longer than the transport's limit, of which only `prefix` was kept:
 * `bytes` long in all. A `tools/call` whose id and method lie in the prefix becomes a
 * {@link MalformedCall}; anything else gets a `-32600` (with its id when found).
 */
export const readOversizeLine = (prefix: string, bytes: number, limit: number): LineOutcome => {
  const found = topLevelMembers(prefix);
  const id = requestId(found.id);
  const size = `${bytes.toLocaleString("en-US")} bytes long; the limit is ${limit.toLocaleString("en-US")} bytes`;
  if (id === undefined || found.method !== "tools/call") {
    return errorResponse(id, ErrorCode.InvalidRequest, `Invalid Request: the message is ${size}.`);
  }
  return {
    _tag: "MalformedCall",
    request: standIn(id, undefined),
    defect: () => `The request is ${size}. Send shorter arguments.`,
  };
};
