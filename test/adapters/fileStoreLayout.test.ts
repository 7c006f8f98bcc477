import { Either, Option } from "effect";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  isTempName,
  decodeSegment,
  encodeSegment,
  formatEtag,
  isTorn,
  keySegments,
  latestVersion,
  parseEtag,
  parseKeyDirectory,
  pruneFloor,
  type EntryType,
} from "../../src/adapters/fileStoreLayout.js";

const segment = fc
  .string({ unit: "binary", minLength: 1, maxLength: 40 })
  .filter((s) => s !== "." && s !== ".." && !s.includes("/"));

describe("file store key encoding", () => {
  it("round-trips every valid segment and yields only safe file-name characters", () => {
    fc.assert(
      fc.property(segment, (s) => {
        const name = encodeSegment(s);
        expect(name).toMatch(/^([a-z0-9._-]|%[0-9A-F]{2})+$/);
        expect(decodeSegment(name)).toEqual(Option.some(s));
      }),
    );
  });

  it("is injective even under case folding (case-insensitive file systems)", () => {
    fc.assert(
      fc.property(segment, segment, (a, b) => {
        fc.pre(a !== b);
        expect(encodeSegment(a).toLowerCase()).not.toBe(encodeSegment(b).toLowerCase());
      }),
    );
  });

  it("never encodes the key-directory suffix or a path separator literally", () => {
    expect(encodeSegment("a@b/c")).toBe("a%40b%2Fc");
    expect(encodeSegment("Current")).toBe("%43urrent");
    expect(encodeSegment("ü")).toBe("%C3%BC");
  });

  it("rejects names that are not canonical encodings", () => {
    for (const name of ["", ".", "..", "A", "%4a", "%4", "a b", "%2", "%C3", "a@"]) {
      expect(decodeSegment(name)).toEqual(Option.none());
    }
    // "%61" decodes to "a", whose canonical encoding is "a": not canonical.
    expect(decodeSegment("%61")).toEqual(Option.none());
  });

  it("validates keys", () => {
    expect(keySegments("packs/increments/5-x.pack")).toEqual(
      Either.right(["packs", "increments", "5-x.pack"]),
    );
    for (const bad of [
      "",
      "/a",
      "a/",
      "a//b",
      ".",
      "a/..",
      "\uDC00",
      "é".repeat(513),
      "x".repeat(300),
    ]) {
      expect(Either.isLeft(keySegments(bad))).toBe(true);
    }
    expect(Either.isRight(keySegments("x".repeat(200)))).toBe(true);
  });
});

const dir = (entries: ReadonlyArray<[string, EntryType]>) =>
  parseKeyDirectory(entries.map(([name, type]) => ({ name, type })));

describe("file store key directories", () => {
  it("reads versions, tombstones and markers, ignoring junk", () => {
    const state = dir([
      ["10", "file"],
      ["9", "directory"],
      ["2", "file"],
      ["p9", "file"],
      ["p3", "file"],
      ["010", "file"],
      ["0", "file"],
      ["notes", "file"],
      ["11", "other"],
      ["99999999999999999", "file"],
    ]);
    expect(state.versions).toEqual([
      { n: 2, kind: "data" },
      { n: 9, kind: "tombstone" },
      { n: 10, kind: "data" },
      { n: 11, kind: "other" },
    ]);
    expect(state.floor).toBe(9);
    expect(state.markers).toEqual([3, 9]);
    expect(latestVersion(state)).toEqual(Option.some({ n: 11, kind: "other" }));
    expect(isTorn(state)).toBe(false);
  });

  it("a listing whose newest version is below the floor is torn", () => {
    expect(
      isTorn(
        dir([
          ["3", "file"],
          ["p5", "file"],
        ]),
      ),
    ).toBe(true);
    expect(isTorn(dir([["p5", "file"]]))).toBe(true);
    expect(isTorn(dir([]))).toBe(false);
    expect(
      isTorn(
        dir([
          ["5", "file"],
          ["p5", "file"],
        ]),
      ),
    ).toBe(false);
  });

  it("ETags are version numbers and nothing else parses", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (n) => {
        expect(parseEtag(formatEtag(n))).toEqual(Option.some(n));
      }),
    );
    for (const bad of ["", "0", "01", "-1", "1.5", '"1"', "*", "1 ", "99999999999999999"]) {
      expect(parseEtag(bad)).toEqual(Option.none());
    }
  });

  it("pruning never removes the committed version and keeps the newest `retain`", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 6 }),
        fc.boolean(),
        (count, retain, tombstone) => {
          const versions = Array.from(
            { length: count },
            (_, i) => [String(i + 1), "file"] as [string, EntryType],
          );
          const committed = {
            n: count,
            kind: tombstone ? ("tombstone" as const) : ("data" as const),
          };
          const floor = pruneFloor(dir(versions), committed, retain);
          if (Option.isSome(floor)) {
            expect(floor.value).toBeLessThanOrEqual(count);
            if (!tombstone) expect(count - floor.value + 1).toBe(retain);
            if (!tombstone) expect(count).toBeGreaterThan(2 * retain);
          } else if (tombstone) {
            expect(count).toBe(1);
          } else {
            expect(count).toBeLessThanOrEqual(2 * retain);
          }
        },
      ),
    );
    // A floor at or below an existing marker is not raised again.
    expect(
      pruneFloor(
        dir([
          ["5", "file"],
          ["6", "file"],
          ["7", "file"],
          ["p6", "file"],
        ]),
        { n: 7, kind: "data" },
        1,
      ),
    ).toEqual(Option.some(7));
    expect(
      pruneFloor(
        dir([
          ["7", "file"],
          ["p7", "file"],
        ]),
        { n: 7, kind: "tombstone" },
        1,
      ),
    ).toEqual(Option.none());
  });
});

describe("file store temp names", () => {
  it("are the store's own <pid>-<uuid>[.gone] names and nothing else", () => {
    const uuid = "0b5e2f4c-1d2e-4f3a-9b8c-7d6e5f4a3b2c";
    expect(isTempName(`4242-${uuid}`)).toBe(true);
    expect(isTempName(`4242-${uuid}.gone`)).toBe(true);
    for (const name of [
      "notes.txt",
      uuid,
      `x-${uuid}`,
      `4242-${uuid}.tmp`,
      `4242-${uuid.toUpperCase()}`,
      ".bashrc",
    ])
      expect(isTempName(name)).toBe(false);
  });
});
