/**
 * `quire serve`'s stdio transport: the SDK's stdio framing (one JSON-RPC message per
 * LF-terminated line, written as `JSON.stringify(message) + "\n"`) with quire's reading
 * of each line ({@link readLine}): every request gets an answer, and a malformed
 * `tools/call` reaches the tool handler (marked with its defect) instead of being
 * answered by the SDK with a protocol error or not at all. Writes nothing but JSON-RPC.
 */
import { isUtf8 } from "node:buffer";
import type { Readable, Writable } from "node:stream";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  ErrorCode,
  isJSONRPCRequest,
  type JSONRPCMessage,
} from "@modelcontextprotocol/sdk/types.js";
import { noteDefect } from "./callDefects.js";
import { type LineOutcome, readLine, readOversizeLine } from "./jsonRpcLine.js";

/** The longest line read as a message, in bytes (the SDK's stdio limit too). */
export const defaultMaxLineBytes = 10 * 1024 * 1024;

/**
 * The one protocol version that has JSON-RPC batches: 2025-03-26 says a server MUST
 * accept them (and `initialize` is never in one); 2025-06-18 removed them, and earlier
 * versions' schema has none. Under any other version an array is one invalid request.
 */
const batchingVersion = "2025-03-26";

/**
 * The most elements a batch may hold (as go-ethereum's JSON-RPC server allows by default).
 * Every answer of a batch is written in one array once the last is ready, so an unbounded
 * batch (a 10 MiB line holds some 250,000 requests) had the server run them all at once
 * and hold every answer; a larger one is refused whole, none of its elements run.
 */
export const maxBatchElements = 1000;

/**
 * How many bytes of ids the refusal of a too-large batch echoes at most: a 10 MiB line of
 * long string ids would otherwise be answered with a line longer than a client reads.
 */
const maxRefusalIdBytes = 1024 * 1024;

/**
 * The answers to a batch of more than {@link maxBatchElements} elements, none of which
 * ran: -32600 for each request in it with a usable id (so no client waits for one), or,
 * when none has one, a single -32600 without an id. The refusal is bounded (one -32600
 * per id of a 10 MiB line of short requests was some 40 MB, a line no client reads): only
 * the first {@link maxBatchElements} requests (and ids of {@link maxRefusalIdBytes} in
 * all) get theirs; one -32600 without an id then says how many more got none.
 */
const refuseBatch = (elements: ReadonlyArray<unknown>): Array<JSONRPCMessage> => {
  const tooMany = `Invalid Request: a batch holds at most ${String(maxBatchElements)} messages, this one ${String(elements.length)}`;
  const error = {
    code: ErrorCode.InvalidRequest,
    message: `${tooMany}; send it in smaller batches.`,
  };
  const answers: Array<JSONRPCMessage> = [];
  let idBytes = 0;
  let unanswered = 0;
  for (const element of elements) {
    if (typeof element !== "object" || element === null || Array.isArray(element)) continue;
    if (!("id" in element) || !("method" in element)) continue;
    const id = element.id;
    if (typeof id !== "string" && !(typeof id === "number" && Number.isSafeInteger(id))) continue;
    const bytes = typeof id === "string" ? Buffer.byteLength(id) : 16;
    if (
      unanswered === 0 &&
      answers.length < maxBatchElements &&
      idBytes + bytes <= maxRefusalIdBytes
    ) {
      idBytes += bytes;
      answers.push({ jsonrpc: "2.0", id, error });
    } else unanswered += 1;
  }
  if (answers.length === 0) return [{ jsonrpc: "2.0", error } satisfies JSONRPCMessage];
  if (unanswered > 0)
    answers.push({
      jsonrpc: "2.0",
      error: {
        code: ErrorCode.InvalidRequest,
        message: `${tooMany}; none of it ran, and its ${String(unanswered)} requests after the ${String(answers.length)} answered above get no answer of their own (the refusal is bounded); send it in smaller batches.`,
      },
    } satisfies JSONRPCMessage);
  return answers;
};

/** A batch's requests still unanswered (by {@link idKey}) and the answers so far. */
interface PendingBatch {
  readonly waiting: Map<string, number>;
  readonly answers: Array<JSONRPCMessage>;
}

const idKey = (id: string | number): string => JSON.stringify(id);

/** The id of a response (a result or an error), if `message` is one with an id. */
const responseId = (message: JSONRPCMessage): string | number | undefined =>
  "id" in message && !("method" in message) && ("result" in message || "error" in message)
    ? message.id
    : undefined;

/** The elements of `text` when it is a JSON array, else `undefined`. */
const arrayElements = (text: string): ReadonlyArray<unknown> | undefined => {
  if (!text.trimStart().startsWith("[")) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
};

/**
 * One element of a batch, read as the line holding it alone would be. An element nested
 * too deeply to be written out again (JSON.parse takes any depth, JSON.stringify does
 * not) is answered Invalid Request, with its id when it has a usable one.
 */
const readElement = (element: unknown, utf8: boolean): LineOutcome => {
  try {
    return readLine(JSON.stringify(element), utf8);
  } catch {
    const id =
      typeof element === "object" && element !== null && "id" in element ? element.id : undefined;
    const usable = typeof id === "string" || (typeof id === "number" && Number.isSafeInteger(id));
    return {
      _tag: "Answer",
      message: {
        jsonrpc: "2.0",
        ...(usable ? { id } : {}),
        error: {
          code: ErrorCode.InvalidRequest,
          message: "Invalid Request: the message is nested too deeply.",
        },
      },
    };
  }
};

/** The UTF-8 encoding of U+FEFF. */
const byteOrderMark = Buffer.from([0xef, 0xbb, 0xbf]);
/** How much of a longer line is kept to find its id and method. */
const oversizePrefixBytes = 64 * 1024;

const newline = 0x0a;

/** A {@link Transport} over a byte stream pair (the process's stdin and stdout by default). */
export class StdioLineTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private started = false;
  // The current line's bytes so far, concatenated once when its LF arrives.
  private chunks: Array<Buffer> = [];
  private length = 0;
  // Set while the current line is longer than the limit: its first bytes and its length.
  private oversize: { prefix: Buffer; bytes: number } | undefined;
  /** Whether no line has ended yet: the stream's first line may open with a byte order mark. */
  private firstLine = true;
  /** The protocol version the server answered `initialize` with (read from that answer). */
  private protocolVersion: string | undefined;
  /** Batches (2025-03-26) whose answers are being gathered into one array. */
  private readonly batches: Array<PendingBatch> = [];

  /**
   * @param maxLineBytes lines longer than this are not parsed: only their first 64 KiB
   *   are kept, to answer the request they carry with an error.
   */
  constructor(
    private readonly input: Readable = process.stdin,
    private readonly output: Writable = process.stdout,
    private readonly maxLineBytes: number = defaultMaxLineBytes,
  ) {}

  private readonly ondata = (chunk: Buffer | string): void => {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    let start = 0;
    for (;;) {
      const end = bytes.indexOf(newline, start);
      this.take(end === -1 ? bytes.subarray(start) : bytes.subarray(start, end));
      if (end === -1) return;
      this.endLine();
      start = end + 1;
    }
  };

  private readonly oninputerror = (error: Error): void => {
    this.onerror?.(error);
  };

  private take(piece: Buffer): void {
    if (piece.length === 0) return;
    if (this.oversize !== undefined) {
      const room = oversizePrefixBytes - this.oversize.prefix.length;
      if (room > 0) {
        this.oversize.prefix = Buffer.concat([this.oversize.prefix, piece.subarray(0, room)]);
      }
      this.oversize.bytes += piece.length;
      return;
    }
    if (this.length + piece.length <= this.maxLineBytes) {
      this.chunks.push(piece);
      this.length += piece.length;
      return;
    }
    const kept = Buffer.concat([...this.chunks, piece]);
    this.oversize = { prefix: kept.subarray(0, oversizePrefixBytes), bytes: kept.length };
    this.chunks = [];
    this.length = 0;
  }

  private endLine(): void {
    let outcome: LineOutcome;
    if (this.oversize !== undefined) {
      const { prefix, bytes } = this.oversize;
      this.oversize = undefined;
      outcome = readOversizeLine(prefix.toString("utf8"), bytes, this.maxLineBytes);
    } else {
      const joined = Buffer.concat(this.chunks, this.length);
      this.chunks = [];
      this.length = 0;
      // A UTF-8 byte order mark opening the stream (some Windows tools write one) is no
      // part of the JSON text; JSON.parse would fail on it and the client's initialize
      // would get a parse error without its id, and wait forever (RFC 8259 §8.1 lets a
      // parser ignore it). Anywhere else a U+FEFF is text, and refused as JSON.
      const bytes =
        this.firstLine && joined.subarray(0, 3).equals(byteOrderMark) ? joined.subarray(3) : joined;
      const text = bytes.toString("utf8");
      const elements = this.protocolVersion === batchingVersion ? arrayElements(text) : undefined;
      // An empty array is no batch: one Invalid Request, as readLine answers.
      if (elements !== undefined && elements.length > 0) {
        this.firstLine = false;
        if (elements.length > maxBatchElements)
          this.write(refuseBatch(elements)).catch((error: unknown) => this.report(error));
        else this.dispatchBatch(elements, isUtf8(bytes));
        return;
      }
      outcome = readLine(text, isUtf8(bytes));
    }
    this.firstLine = false;
    this.dispatch(outcome);
  }

  private dispatch(outcome: LineOutcome): void {
    // A failure while handling one message (the SDK throws on some it cannot match) must
    // not lose the lines after it, nor escape into the stream's event handler.
    try {
      switch (outcome._tag) {
        case "Deliver":
          this.onmessage?.(outcome.message);
          this.forgetCancelled(outcome.message);
          return;
        case "MalformedCall":
          noteDefect(outcome.request, outcome.defect);
          this.onmessage?.(outcome.request);
          return;
        case "Answer":
          this.send(outcome.message).catch((error: unknown) => this.report(error));
          return;
        case "Drop":
          this.onerror?.(new Error(`ignored ${outcome.why} on stdin`));
          return;
      }
    } catch (error) {
      this.report(error);
    }
  }

  /**
   * A JSON-RPC batch (2025-03-26): each element is read as a line of its own would be
   * (repeated keys are not seen: the array was parsed whole), its requests handed to the
   * server, and every answer (its requests', and an error for each element that is no
   * message) written together as one array once the last is ready. A batch of
   * notifications only gets no answer.
   */
  private dispatchBatch(elements: ReadonlyArray<unknown>, utf8: boolean): void {
    const outcomes = elements.map((element) => readElement(element, utf8));
    const batch: PendingBatch = { waiting: new Map(), answers: [] };
    // An id used twice in one batch is waited for twice.
    const wait = (id: string | number) =>
      batch.waiting.set(idKey(id), (batch.waiting.get(idKey(id)) ?? 0) + 1);
    for (const outcome of outcomes) {
      if (outcome._tag === "Answer") batch.answers.push(outcome.message);
      else if (outcome._tag === "MalformedCall") wait(outcome.request.id);
      else if (outcome._tag === "Deliver" && isJSONRPCRequest(outcome.message))
        wait(outcome.message.id);
    }
    if (batch.waiting.size > 0) this.batches.push(batch);
    else if (batch.answers.length > 0)
      this.write(batch.answers).catch((error: unknown) => this.report(error));
    for (const outcome of outcomes) if (outcome._tag !== "Answer") this.dispatch(outcome);
  }

  /**
   * A cancelled request is never answered (the SDK sends nothing once its handler is
   * aborted; an answer already sent was taken by its batch): a batch waiting for it would
   * wait forever and keep its other answers from the client. It stops waiting for it,
   * and writes its answers if that was the last one missing. A cancellation read before
   * its request (in one batch) at worst has that request's answer written on a line of
   * its own.
   */
  private forgetCancelled(message: JSONRPCMessage): void {
    if (!("method" in message) || message.method !== "notifications/cancelled") return;
    if ("id" in message) return;
    const params: unknown = message.params;
    if (typeof params !== "object" || params === null || !("requestId" in params)) return;
    const id: unknown = params.requestId;
    const reason: unknown = "reason" in params ? params.reason : undefined;
    // Only a cancellation the SDK acts on: it ignores a falsy id (0, "") and params its
    // schema refuses (an id that is no integer, a reason that is no string), and the
    // request is then answered, so its batch must still wait for it.
    if (!(
      (typeof id === "string" && id !== "") ||
      (typeof id === "number" && Number.isInteger(id) && id !== 0)
    ))
      return;
    if (reason !== undefined && typeof reason !== "string") return;
    const batch = this.batches.find((each) => each.waiting.has(idKey(id)));
    if (batch === undefined) return;
    this.settleInBatch(batch, id);
    if (batch.waiting.size === 0) this.flush(batch).catch((error: unknown) => this.report(error));
  }

  /** One answer fewer awaited for `id` in `batch`. */
  private settleInBatch(batch: PendingBatch, id: string | number): void {
    const left = (batch.waiting.get(idKey(id)) ?? 1) - 1;
    if (left > 0) batch.waiting.set(idKey(id), left);
    else batch.waiting.delete(idKey(id));
  }

  /** Writes `batch`'s answers (if any) and forgets it. */
  private flush(batch: PendingBatch): Promise<void> {
    this.batches.splice(this.batches.indexOf(batch), 1);
    return batch.answers.length === 0 ? Promise.resolve() : this.write(batch.answers);
  }

  private report(error: unknown): void {
    this.onerror?.(error instanceof Error ? error : new Error(String(error)));
  }

  /** Starts reading. Fails if already started. */
  start(): Promise<void> {
    if (this.started) return Promise.reject(new Error("StdioLineTransport already started"));
    this.started = true;
    this.input.on("data", this.ondata);
    this.input.on("error", this.oninputerror);
    return Promise.resolve();
  }

  /**
   * Writes one message as a line; resolves once the stream has written it, and rejects
   * when it cannot be: the stream failed (EPIPE: the host closed its end) or was closed.
   * Waiting for `drain` instead never settled once the stream had failed, and the stop
   * then waited out its whole grace period for an answer that could never be sent.
   */
  send(message: JSONRPCMessage): Promise<void> {
    if ("result" in message) {
      const { protocolVersion, serverInfo } = message.result;
      if (typeof protocolVersion === "string" && serverInfo !== undefined)
        this.protocolVersion = protocolVersion;
    }
    const id = responseId(message);
    const batch =
      id === undefined ? undefined : this.batches.find((each) => each.waiting.has(idKey(id)));
    if (id === undefined || batch === undefined) return this.write(message);
    this.settleInBatch(batch, id);
    batch.answers.push(message);
    return batch.waiting.size > 0 ? Promise.resolve() : this.flush(batch);
  }

  /** Writes one line: a message, or a batch's answers. */
  private write(message: JSONRPCMessage | ReadonlyArray<JSONRPCMessage>): Promise<void> {
    return new Promise((resolve, reject) => {
      const output = this.output;
      if (output.destroyed || output.writableEnded) {
        reject(new Error("the output stream is closed"));
        return;
      }
      output.write(`${JSON.stringify(message)}\n`, (error) => {
        if (error === null || error === undefined) resolve();
        else reject(error);
      });
    });
  }

  /** Stops reading (pausing the input if nothing else reads it), drops any partial line, and reports the close. */
  close(): Promise<void> {
    this.input.off("data", this.ondata);
    this.input.off("error", this.oninputerror);
    if (this.input.listenerCount("data") === 0) this.input.pause();
    this.chunks = [];
    this.length = 0;
    this.oversize = undefined;
    // Batches still waiting (a call the stop did not answer): what they have is sent, as
    // a single message would have been, rather than dropped with them.
    for (const batch of [...this.batches])
      this.flush(batch).catch((error: unknown) => this.report(error));
    this.onclose?.();
    return Promise.resolve();
  }
}
