import { describe, expect, it } from "vitest";
import { cutEcho } from "../../src/app/mcp/toolInput.js";
import { readLine, readOversizeLine } from "../../src/app/mcp/jsonRpcLine.js";

const call = (params: string, id = 1) =>
  `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":${params}}`;

describe("readLine", () => {
  it("delivers a valid tools/call with its arguments exactly as parsed, __proto__ included", () => {
    const outcome = readLine(call('{"name":"notes_pull","arguments":{"__proto__":{"x":1}}}'));
    expect(outcome._tag).toBe("Deliver");
    if (outcome._tag !== "Deliver") return;
    const params = "params" in outcome.message ? outcome.message.params : undefined;
    const args = params?.["arguments"];
    expect(typeof args === "object" && args !== null && Object.keys(args)).toEqual(["__proto__"]);
  });

  it("delivers other messages as the SDK would, and ignores a trailing CR", () => {
    expect(readLine('{"jsonrpc":"2.0","id":1,"method":"tools/list"}\r')).toEqual({
      _tag: "Deliver",
      message: { jsonrpc: "2.0", id: 1, method: "tools/list" },
    });
  });

  it("turns a tools/call it cannot deliver as sent into a MalformedCall with the same id", () => {
    const cases: ReadonlyArray<[string, RegExp]> = [
      [
        call('{"name":"notes_pull","arguments":{"path":"","path":"/"}}'),
        /repeats the key "path" in params\.arguments/,
      ],
      [call('"x"', 7), /params must be a JSON object .*not a string/],
      ['{"jsonrpc":"1.0","id":7,"method":"tools/call","params":{}}', /"jsonrpc" must be "2\.0"/],
      ['{"jsonrpc":"2.0","id":7,"method":"tools/call","extra":1}', /member "extra"/],
    ];
    for (const [line, message] of cases) {
      const outcome = readLine(line);
      expect(outcome._tag, line).toBe("MalformedCall");
      if (outcome._tag !== "MalformedCall") continue;
      expect(outcome.request.method).toBe("tools/call");
      expect(outcome.defect(cutEcho)).toMatch(message);
    }
  });

  it("answers what is not a message with the JSON-RPC error, never silence for a request", () => {
    expect(readLine("{nope")).toMatchObject({
      _tag: "Answer",
      message: { error: { code: -32700 } },
    });
    expect(readLine("[]")).toMatchObject({ _tag: "Answer", message: { error: { code: -32600 } } });
    expect(readLine('{"jsonrpc":"2.0","id":3,"method":"ping","params":1}')).toMatchObject({
      _tag: "Answer",
      message: { id: 3, error: { code: -32600 } },
    });
    expect(readLine('{"jsonrpc":"2.0","id":{},"method":"ping"}')).toMatchObject({
      _tag: "Answer",
      message: { error: { code: -32600 } },
    });
    const noId = readLine('{"jsonrpc":"2.0","id":{},"method":"ping"}');
    expect(noId._tag === "Answer" && "id" in noId.message).toBe(false);
  });

  it("drops blank lines, malformed notifications and malformed responses (JSON-RPC never answers them)", () => {
    for (const line of [
      "",
      "  ",
      '{"jsonrpc":"2.0","method":"x","params":1}',
      '{"id":1,"result":5}',
    ]) {
      expect(readLine(line)._tag, line).toBe("Drop");
    }
  });
});

describe("readOversizeLine", () => {
  it("a tools/call whose id is in the prefix is a MalformedCall naming the size", () => {
    const outcome = readOversizeLine(
      call('{"name":"notes_commit","arguments":{"message":"xxxx', 9),
      20_000_000,
      10_485_760,
    );
    expect(outcome._tag).toBe("MalformedCall");
    if (outcome._tag !== "MalformedCall") return;
    expect(outcome.request.id).toBe(9);
    expect(outcome.defect(cutEcho)).toBe(
      "The request is 20,000,000 bytes long; the limit is 10,485,760 bytes. Send shorter arguments.",
    );
  });

  it("anything else gets -32600, with its id when found", () => {
    expect(
      readOversizeLine('{"jsonrpc":"2.0","id":4,"method":"ping","params":{"x":"', 2e7, 1e7),
    ).toMatchObject({
      _tag: "Answer",
      message: { id: 4, error: { code: -32600 } },
    });
    expect(readOversizeLine("xxxxxxxx", 2e7, 1e7)).toMatchObject({
      _tag: "Answer",
      message: { error: { code: -32600 } },
    });
  });
});

describe("ids JSON allows but JSON-RPC over MCP cannot carry", () => {
  it("an integer id beyond 2^53 - 1 is refused as too large, not as 'not an integer'", () => {
    const outcome = readLine(
      '{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}',
    );
    expect(outcome._tag).toBe("Answer");
    if (outcome._tag !== "Answer") return;
    const error = "error" in outcome.message ? outcome.message.error : undefined;
    expect(error?.code).toBe(-32600);
    expect(error?.message).toMatch(/from -9007199254740991 to 9007199254740991/);
  });
});
