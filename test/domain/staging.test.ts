import { Either } from "effect";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeText } from "../../src/domain/content.js";
import { decodePack, encodePack } from "../../src/domain/pack.js";
import {
  decodeStaged,
  encodeStaged,
  makeClaims,
  repack,
  stagedBaseOf,
  stagingKey,
  stagingPrefixFor,
  touchedPaths,
} from "../../src/domain/staging.js";

const id = (n: number) => `0190f3c2-0000-7000-8000-${String(n).padStart(12, "0")}`;

const increment = (generation: number, n: number, files: Record<string, string | null>) =>
  encodePack({
    kind: "increment",
    generation,
    publicationId: id(n),
    baseGeneration: generation - 1,
    publication: {
      message: `message ${n}`,
      time: "2026-12-02T00:00:00.000Z",
      author: { name: `author ${n}`, version: "1" },
    },
    files: new Map(
      Object.entries(files).map(([path, text]) => [
        path,
        text === null ? undefined : encodeText(text),
      ]),
    ),
  }).bytes;

const decodeOrThrow = (bytes: Uint8Array) => {
  const decoded = decodeStaged(bytes);
  if (Either.isLeft(decoded)) throw new Error(decoded.left);
  return decoded.right;
};

describe("staged records: keys", () => {
  it("sort by base generation, and name it", () => {
    const keys = [
      stagingKey(10, id(2), id(5)),
      stagingKey(9, id(3), id(4)),
      stagingKey(100, id(1), id(6)),
    ];
    expect([...keys].sort()).toEqual([keys[1], keys[0], keys[2]]);
    expect(keys.map(stagedBaseOf)).toEqual([10, 9, 100]);
    expect(stagingKey(7, id(1), id(2)).startsWith(stagingPrefixFor(7))).toBe(true);
    expect(stagingKey(17, id(1), id(2)).startsWith(stagingPrefixFor(1))).toBe(false);
    // On one base, the older ticket (the commit that has waited longer) sorts first,
    // whatever its publication id.
    expect(stagingKey(7, id(1), id(9)) < stagingKey(7, id(2), id(3))).toBe(true);
    expect(stagedBaseOf("staging/abc")).toBeUndefined();
    expect(stagedBaseOf("packs/increments/1-x.pack")).toBeUndefined();
  });
});

describe("staged records: the codec", () => {
  it("decodes what it encodes: the base and every pack, byte for byte", () => {
    const packs = [increment(6, 1, { "a.md": "one\n" }), increment(7, 2, { "b.md": null })];
    const staged = decodeOrThrow(encodeStaged(5, id(9), packs));
    expect(staged.baseGeneration).toBe(5);
    expect(staged.baseHead).toBe(id(9));
    expect(staged.packs.map((p) => [...p.bytes])).toEqual(packs.map((p) => [...p]));
    expect(staged.packs.map((p) => p.pack.header.publicationId)).toEqual([id(1), id(2)]);
  });

  it("refuses records whose packs do not follow the base one by one", () => {
    expect(decodeStaged(encodeStaged(5, id(9), [increment(7, 1, { "a.md": "x" })]))).toEqual(
      Either.left("the packs do not follow the base generation one by one"),
    );
    const two = [increment(6, 1, { "a.md": "x" }), increment(6, 2, { "b.md": "y" })];
    expect(Either.isLeft(decodeStaged(encodeStaged(5, id(9), two)))).toBe(true);
  });

  it("refuses a repeated publication, a checkpoint, an empty record and anything malformed", () => {
    const same = [increment(6, 1, { "a.md": "x" }), increment(7, 1, { "b.md": "y" })];
    expect(decodeStaged(encodeStaged(5, id(9), same))).toEqual(
      Either.left("a publication id appears twice"),
    );
    const checkpoint = encodePack({
      kind: "checkpoint",
      generation: 6,
      publicationId: id(1),
      baseGeneration: 5,
      files: new Map([["a.md", encodeText("x")]]),
    }).bytes;
    expect(Either.isLeft(decodeStaged(encodeStaged(5, id(9), [checkpoint])))).toBe(true);
    expect(Either.isLeft(decodeStaged(encodeStaged(5, id(9), [])))).toBe(true);
    expect(Either.isLeft(decodeStaged(encodeText("not a record")))).toBe(true);
  });

  it("refuses a record whose pack holds content that is not its content id", () => {
    const pack = increment(6, 1, { "a.md": "one\n" });
    // Same size, so the pack still decodes; the record's SHA-256 is computed over it.
    const at = Buffer.from(pack).lastIndexOf("one\n");
    pack[at] = "O".charCodeAt(0);
    expect(decodeStaged(encodeStaged(5, id(9), [pack]))).toEqual(
      Either.left("a pack's content is not its id"),
    );
  });

  it("refuses every truncation and every single flipped byte of a record", () => {
    const record = encodeStaged(5, id(9), [increment(6, 1, { "a.md": "one\ntwo\n" })]);
    for (let length = 0; length < record.length; length++)
      expect(Either.isLeft(decodeStaged(record.subarray(0, length)))).toBe(true);
    fc.assert(
      fc.property(fc.nat(record.length - 1), fc.integer({ min: 1, max: 255 }), (at, flip) => {
        const bad = Uint8Array.from(record);
        bad[at] = (bad[at] ?? 0) ^ flip;
        const decoded = decodeStaged(bad);
        // A flip inside the JSON header may still decode (a digit of the base, say), but
        // never to the same record with different packs.
        if (Either.isRight(decoded))
          expect([...(decoded.right.packs[0]?.bytes ?? [])]).toEqual([
            ...record.subarray(record.length - (decoded.right.packs[0]?.bytes.length ?? 0)),
          ]);
      }),
    );
  });
});

describe("staged records: repack", () => {
  it("keeps the publication, its puts and deletes, at the new generation", () => {
    const staged = decodeOrThrow(
      encodeStaged(5, id(9), [increment(6, 1, { "a.md": "one\n", "gone.md": null })]),
    ).packs[0];
    if (staged === undefined) throw new Error("no pack");
    const { bytes } = repack(staged, 12);
    const decoded = decodePack(bytes);
    if (Either.isLeft(decoded)) throw new Error(decoded.left);
    const header = decoded.right.header;
    expect([header.kind, header.generation, header.baseGeneration]).toEqual(["increment", 12, 11]);
    expect(header.publicationId).toBe(id(1));
    expect(header.publication).toEqual(staged.pack.header.publication);
    expect(header.deletes).toEqual(["gone.md"]);
    expect(header.puts.map((p) => [p.path, p.id])).toEqual(
      staged.pack.header.puts.map((p) => [p.path, p.id]),
    );
    // At its own generation it is the very same pack.
    expect([...repack(staged, 6).bytes]).toEqual([...staged.bytes]);
  });

  it("touched paths are the puts and the deletes", () => {
    const decoded = decodePack(increment(6, 1, { "a.md": "x", "b/c.md": null }));
    if (Either.isLeft(decoded)) throw new Error(decoded.left);
    expect([...touchedPaths(decoded.right.header)].sort()).toEqual(["a.md", "b/c.md"]);
  });
});

describe("claims: which changes apply after others exactly as on their base", () => {
  it("refuses a claimed path, in any case", () => {
    const claims = makeClaims();
    claims.claim(["notes/Plan.md"]);
    expect(claims.clear(["notes/Plan.md"])).toBe(false);
    expect(claims.clear(["NOTES/plan.MD"])).toBe(false);
    expect(claims.clear(["notes/other.md", "b.md"])).toBe(true);
  });

  it("refuses a file where a claimed path has a directory, and the reverse", () => {
    const claims = makeClaims();
    claims.claim(["a/b/c.md"]);
    expect(claims.clear(["a"])).toBe(false);
    expect(claims.clear(["a/b"])).toBe(false);
    expect(claims.clear(["a/b/c.md/d"])).toBe(false);
    expect(claims.clear(["a/b/d.md", "a/e.md"])).toBe(true);
    const other = makeClaims();
    other.claim(["x"]);
    expect(other.clear(["x/y.md"])).toBe(false);
    expect(other.clear(["X/y.md"])).toBe(false);
    expect(other.clear(["xy.md"])).toBe(true);
  });

  it("refuses a path under a claimed directory spelled in another case", () => {
    // On a case-insensitive file system both land in one directory: a case collision.
    const claims = makeClaims();
    claims.claim(["Notes/a.md"]);
    expect(claims.clear(["notes/b.md"])).toBe(false);
    expect(claims.clear(["NOTES/deeper/b.md"])).toBe(false);
    expect(claims.clear(["Notes/b.md"])).toBe(true);
    claims.claim(["notes/c.md"]);
    // Once claimed both ways, no spelling is clear.
    expect(claims.clear(["Notes/d.md"])).toBe(false);
  });

  it("agrees with a direct definition on random path sets", () => {
    const segment = fc.constantFrom("a", "A", "b", "c.md");
    const path = fc.array(segment, { minLength: 1, maxLength: 3 }).map((s) => s.join("/"));
    const fold = (p: string) => p.toLowerCase();
    // The same path, one a directory of the other, or a directory spelled two ways.
    const related = (p: string, q: string) => {
      const [x, y] = [fold(p), fold(q)];
      if (x === y || x.startsWith(`${y}/`) || y.startsWith(`${x}/`)) return true;
      const [ps, qs] = [p.split("/"), q.split("/")];
      for (let depth = 1; depth < Math.min(ps.length, qs.length); depth++) {
        const [dp, dq] = [ps.slice(0, depth).join("/"), qs.slice(0, depth).join("/")];
        if (fold(dp) === fold(dq) && dp !== dq) return true;
      }
      return false;
    };
    fc.assert(
      fc.property(fc.array(path, { maxLength: 5 }), fc.array(path, { maxLength: 5 }), (a, b) => {
        const claims = makeClaims();
        claims.claim(a);
        expect(claims.clear(b)).toBe(b.every((q) => a.every((p) => !related(p, q))));
      }),
    );
  });
});
