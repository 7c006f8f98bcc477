/**
 * The stdio transport on streams of this process: what a batch (2025-03-26) does when a
 * cancellation arrives after the output is gone (the answer cannot be written: reported,
 * never an unhandled rejection that ends the process).
 */
import { PassThrough } from "node:stream";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { StdioLineTransport } from "../../src/app/mcp/stdioTransport.js";

const line = (message: object) => `${JSON.stringify(message)}\n`;

describe("StdioLineTransport batches", () => {
  it("a cancellation that completes a batch after the output closed is reported, not thrown", async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    const transport = new StdioLineTransport(input, output);
    const errors: Array<string> = [];
    const received: Array<JSONRPCMessage> = [];
    transport.onerror = (error) => errors.push(error.message);
    transport.onmessage = (message) => received.push(message);
    await transport.start();
    // The server's answer to initialize settles the version that has batches.
    await transport.send({
      jsonrpc: "2.0",
      id: 0,
      result: {
        protocolVersion: "2025-03-26",
        capabilities: {},
        serverInfo: { name: "quire", version: "t" },
      },
    });
    const unhandled: Array<unknown> = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      // A request and an element that is no message (answered at once, so the batch has
      // something to write once the request is cancelled).
      input.write(`[${JSON.stringify({ jsonrpc: "2.0", id: 7, method: "ping" })},5]\n`);
      output.destroy();
      input.write(
        line({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 7 } }),
      );
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
    expect(received.map((message) => ("method" in message ? message.method : ""))).toEqual([
      "ping",
      "notifications/cancelled",
    ]);
    expect(unhandled).toEqual([]);
    expect(errors).toContain("the output stream is closed");
    await transport.close();
  });
});
