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
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { noteDefect } from "./callDefects.js";
import { type LineOutcome, readLine, readOversizeLine } from "./jsonRpcLine.js";

/** The longest line read as a message, in bytes (the SDK's stdio limit too). */
export const defaultMaxLineBytes = 10 * 1024 * 1024;

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
      outcome = readLine(bytes.toString("utf8"), isUtf8(bytes));
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
    this.onclose?.();
    return Promise.resolve();
  }
}
