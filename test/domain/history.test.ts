import { Either } from "effect";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  atOrBelowAny,
  atOrBelowOneOf,
  decodeHistorySegment,
  encodeHistorySegment,
  historyKey,
  nextSegment,
  type HistorySegment,
  type PublicationRecord,
} from "../../src/domain/history.js";

const record = (generation: number, message = `m${generation}`): PublicationRecord => ({
  generation,
  publicationId: `01a23580-0000-7000-8000-${String(generation).padStart(12, "0")}`,
  time: "2026-12-02T07:00:00.000Z",
  author: { name: "alice", version: "cli root" },
  message,
  files: [{ path: "a.md", change: "modified", insertions: 1, deletions: 2 }],
});

const segment = (through: number, generations: ReadonlyArray<number>): HistorySegment => ({
  through,
  previous: null,
  unrecordedThrough: 0,
  records: generations.map((g) => record(g)),
});

const text = new TextDecoder();
const bytes = (s: string) => new TextEncoder().encode(s);

describe("history segments", () => {
  it("are named after their checkpoint", () => {
    expect(historyKey("packs/checkpoints/17-01a23580-b84d-712a-91ed-94cfdc4860fc.pack")).toBe(
      "history/17-01a23580-b84d-712a-91ed-94cfdc4860fc.history",
    );
  });

  it("round-trip whatever they hold (messages with newlines, quotes, non-ASCII)", () => {
    const messages = fc.string({ unit: "binary", maxLength: 40 });
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 1, max: 500 }), { maxLength: 20 }),
        messages,
        (gens, m) => {
          const sorted = [...gens].sort((a, b) => a - b);
          const s: HistorySegment = {
            through: 600,
            previous: sorted.length % 2 === 0 ? null : "history/3-x.history",
            unrecordedThrough: sorted.length,
            records: sorted.map((g) => record(g, `${m}\n"${g}"`)),
          };
          const decoded = decodeHistorySegment(encodeHistorySegment(s));
          expect(Either.getOrThrow(decoded)).toEqual(s);
        },
      ),
    );
  });

  it("refuse every truncation, a wrong magic line, unknown fields and disorder", () => {
    const good = encodeHistorySegment(segment(9, [2, 5, 9]));
    for (let cut = 0; cut < good.length; cut++)
      expect(Either.isLeft(decodeHistorySegment(good.subarray(0, cut))), `cut at ${cut}`).toBe(
        true,
      );
    const body = text.decode(good).slice("QUIRE-HISTORY 1\n".length);
    const bad = [
      `QUIRE-HISTORY 2\n${body}`,
      body,
      `QUIRE-HISTORY 1\n${body.replace('"through":9', '"through":9,"extra":1')}`,
      `QUIRE-HISTORY 1\n${body.replace('"through":9', '"through":9,"through":9')}`,
      `QUIRE-HISTORY 1\n${JSON.stringify({ ...segment(9, [5, 2]) })}`,
      `QUIRE-HISTORY 1\n${JSON.stringify({ ...segment(4, [2, 5]) })}`,
      `QUIRE-HISTORY 1\n${JSON.stringify({ ...segment(9, [2]), previous: "packs/x.pack" })}`,
      `QUIRE-HISTORY 1\n${body.replace('"insertions":1', '"insertions":-1')}`,
    ];
    for (const b of bad) expect(Either.isLeft(decodeHistorySegment(bytes(b))), b).toBe(true);
    expect(Either.isLeft(decodeHistorySegment(new Uint8Array([0xff, 0xfe])))).toBe(true);
  });

  it("link to the previous segment and never repeat a record", () => {
    const previous = {
      _tag: "Segment" as const,
      key: "history/5-a.history",
      segment: segment(5, [1, 3, 5]),
    };
    const next = nextSegment(9, [record(5), record(7), record(9)], previous);
    expect(next).toMatchObject({
      through: 9,
      previous: "history/5-a.history",
      unrecordedThrough: 0,
    });
    expect(next.records.map((r) => r.generation)).toEqual([7, 9]);
    const older = { ...previous, segment: { ...segment(5, [4, 5]), unrecordedThrough: 3 } };
    expect(nextSegment(9, [record(7)], older).unrecordedThrough).toBe(3);
    const first = nextSegment(4, [record(3), record(4)], { _tag: "None", unrecordedThrough: 2 });
    expect(first).toMatchObject({ previous: null, unrecordedThrough: 2 });
    expect(first.records.map((r) => r.generation)).toEqual([3, 4]);
  });
});

describe("atOrBelowOneOf", () => {
  it("answers as atOrBelowAny for every path and list of paths", () => {
    const segment = fc.constantFrom("a", "b", "ab", "a.md", "b.md");
    const path = fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => s.join("/"));
    fc.assert(
      fc.property(path, fc.array(path, { maxLength: 6 }), (tested, paths) => {
        expect(atOrBelowOneOf(paths)(tested)).toBe(atOrBelowAny(tested, paths));
      }),
    );
  });
});
