import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { findDuplicateKey, topLevelMembers } from "../../src/app/mcp/jsonText.js";

describe("findDuplicateKey", () => {
  it("finds the first repeated key of any object, with the path to that object", () => {
    expect(findDuplicateKey('{"a":1,"a":2}')).toEqual({ key: "a", path: [] });
    expect(findDuplicateKey('{"p":{"x":[{"k":1,"k":2}]}}')).toEqual({
      key: "k",
      path: ["p", "x", "[]"],
    });
    expect(findDuplicateKey('{"a":1,"\\u0061":2}')).toEqual({ key: "a", path: [] });
    expect(findDuplicateKey('{"__proto__":1,"__proto__":2}')).toEqual({
      key: "__proto__",
      path: [],
    });
  });

  it("does not confuse values, nested objects or escaped quotes with keys", () => {
    for (const text of [
      '{"a":"a","b":"a"}',
      '{"a":{"a":{"a":1}}}',
      '[{"a":1},{"a":2}]',
      '{"a\\"":1,"a":2}',
      '{"a":["b","b"],"b":"\\\\"}',
      '"plain"',
      "[1,2,[3]]",
    ]) {
      expect(findDuplicateKey(text), text).toBeUndefined();
    }
  });

  it("handles nesting a million deep without recursion", () => {
    const depth = 1_000_000;
    expect(
      findDuplicateKey(`${'{"a":'.repeat(depth)}{"b":1,"b":2}${"}".repeat(depth + 1)}`),
    ).toMatchObject({
      key: "b",
    });
  });

  it("agrees with JSON.parse: no duplicate reported iff keys are distinct", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.constantFrom("a", "b", "\u00e9", "\ud800", "__proto__"),
            fc.jsonValue({ maxDepth: 2 }),
          ),
          {
            maxLength: 5,
          },
        ),
        (entries) => {
          const text = `{${entries.map(([key, value]) => `${JSON.stringify(key)}:${JSON.stringify(value)}`).join(",")}}`;
          const keys = entries.map(([key]) => key);
          const repeated = keys.find((key, index) => keys.indexOf(key) !== index);
          const found = findDuplicateKey(text);
          if (repeated === undefined) expect(found).toBeUndefined();
          else expect(found).toEqual({ key: repeated, path: [] });
        },
      ),
    );
  });
});

describe("topLevelMembers", () => {
  it("finds the top-level id and method in a truncated prefix", () => {
    expect(
      topLevelMembers('{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"x","argu'),
    ).toEqual({
      id: 42,
      method: "tools/call",
    });
    expect(
      topLevelMembers('{"params":{"id":1,"method":"no"},"id":"s-1","method":"tools/call"'),
    ).toEqual({
      id: "s-1",
      method: "tools/call",
    });
  });

  it("ignores members cut off, nested or malformed", () => {
    expect(topLevelMembers('{"method":"tools/ca')).toEqual({});
    expect(topLevelMembers('{"id":12')).toEqual({});
    expect(topLevelMembers('[{"id":1,"method":"tools/call"}]')).toEqual({});
    expect(topLevelMembers("garbage \u0000 {")).toEqual({});
  });

  it("ends on any text", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 200 }), (text) => {
        expect(typeof topLevelMembers(text)).toBe("object");
      }),
    );
  });
});
