import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseStrictJson } from "../../src/domain/strictJson.js";

/** A JSON value written by hand, so that objects may repeat keys, with how it was built. */
interface Written {
  readonly text: string;
  /** Whether some object in it repeats a key (compared by decoded value). */
  readonly duplicate: boolean;
}

// Keys that differ in text but not in value ("a" and "\u0061"), and keys made of the
// characters a scanner gets wrong: quotes, backslashes, a backslash before a quote.
const keyTexts = [
  '"a"',
  '"\\u0061"',
  '"b"',
  '"\\""',
  '"\\\\"',
  '"\\\\\\""',
  '"x\\\\"',
  '"{"',
  '"]"',
];
const stringTexts = ['""', '"\\\\"', '"\\""', '"a\\\\\\"b"', '"{\\"a\\":1,\\"a\\":2}"', '"[,]"'];

const written: fc.Memo<Written> = fc.memo((depth) =>
  depth <= 1
    ? fc.oneof(
        fc.constantFrom(...stringTexts, "1", "-2.5e3", "true", "null").map((text) => ({
          text,
          duplicate: false,
        })),
      )
    : fc.oneof(
        written(depth - 1),
        fc.array(written(depth - 1), { maxLength: 4 }).map((items) => ({
          text: `[${items.map((item) => item.text).join(",")}]`,
          duplicate: items.some((item) => item.duplicate),
        })),
        fc
          .array(fc.tuple(fc.constantFrom(...keyTexts), written(depth - 1)), { maxLength: 20 })
          .map((members) => {
            const keys = members.map(([key]): unknown => JSON.parse(key));
            return {
              text: `{${members.map(([key, value]) => `${key}:${value.text}`).join(",")}}`,
              duplicate:
                new Set(keys).size < keys.length || members.some(([, value]) => value.duplicate),
            };
          }),
      ),
);

describe("strict JSON", () => {
  it("refuses exactly the texts in which some object repeats a key, by value", () => {
    fc.assert(
      fc.property(written(4), ({ text, duplicate }) => {
        const result = parseStrictJson(text);
        expect(result.ok).toBe(!duplicate);
        if (result.ok) expect(result.value).toEqual(JSON.parse(text));
        else expect(result.problem).toMatch(/^duplicate key /);
      }),
      { numRuns: 2_000 },
    );
  });

  it("sees a repeat past the sixteen keys kept in a list", () => {
    const members = Array.from({ length: 40 }, (_, i) => `"k${i}":${i}`);
    expect(parseStrictJson(`{${members.join(",")}}`).ok).toBe(true);
    expect(parseStrictJson(`{${members.join(",")},"k3":0}`)).toEqual({
      ok: false,
      problem: 'duplicate key "k3"',
    });
  });

  it("refuses text that is not JSON", () => {
    expect(parseStrictJson('{"a":').ok).toBe(false);
    expect(parseStrictJson("").ok).toBe(false);
  });
});
