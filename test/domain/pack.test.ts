import { Either } from "effect";
import { describe, expect, it } from "vitest";
import { contentId, encodeText } from "../../src/domain/content.js";
import { blobOf, blobsMatchIds, decodePack, encodePack } from "../../src/domain/pack.js";

describe("pack codec", () => {
  it("round-trips puts and deletes, storing equal contents once", () => {
    const same = encodeText("same\n");
    const { bytes, header } = encodePack({
      kind: "increment",
      generation: 4,
      publicationId: "0190a5b4-0000-7000-8000-000000000001",
      baseGeneration: 3,
      publication: {
        message: "m\u00e9",
        time: "2026-01-01T00:00:00.000Z",
        author: { name: "cli", version: "u" },
      },
      files: new Map<string, Uint8Array | undefined>([
        ["b.md", same],
        ["a.md", same],
        ["gone.md", undefined],
        ["c.md", encodeText("")],
      ]),
    });
    const decoded = Either.getOrThrow(decodePack(bytes));
    expect(decoded.header).toEqual(header);
    expect(decoded.header.puts.map((p) => p.path)).toEqual(["a.md", "b.md", "c.md"]);
    expect(decoded.header.deletes).toEqual(["gone.md"]);
    const [a, b] = decoded.header.puts;
    expect(a?.offset).toBe(b?.offset);
    for (const put of decoded.header.puts)
      expect(contentId(blobOf(bytes, decoded, put))).toBe(put.id);
  });

  it("blobsMatchIds: true for an encoded pack, false once a blob differs from its id", () => {
    const { bytes } = encodePack({
      kind: "checkpoint",
      generation: 1,
      publicationId: "0190a5b4-0000-7000-8000-000000000001",
      baseGeneration: 0,
      files: new Map<string, Uint8Array | undefined>([
        ["a.md", encodeText("same\n")],
        ["b.md", encodeText("same\n")],
        ["c.md", encodeText("other\n")],
      ]),
    });
    expect(blobsMatchIds(bytes, Either.getOrThrow(decodePack(bytes)))).toBe(true);
    const forged = bytes.slice();
    forged[Buffer.from(forged).lastIndexOf("other\n")] = "O".charCodeAt(0);
    expect(blobsMatchIds(forged, Either.getOrThrow(decodePack(forged)))).toBe(false);
  });

  it("refuses truncated or malformed packs", () => {
    const { bytes } = encodePack({
      kind: "checkpoint",
      generation: 1,
      publicationId: "0190a5b4-0000-7000-8000-000000000001",
      baseGeneration: 0,
      files: new Map([["x.md", encodeText("hello\n")]]),
    });
    expect(Either.isLeft(decodePack(bytes.subarray(0, bytes.length - 1)))).toBe(true);
    expect(Either.isLeft(decodePack(encodeText("nope")))).toBe(true);
    const tampered = new Uint8Array(bytes);
    tampered[0] = 0x58;
    expect(Either.isLeft(decodePack(tampered))).toBe(true);
  });

  it.each([
    ["a string offset", ["x.md", "0".repeat(64), "0", 1]],
    ["a missing size", ["x.md", "0".repeat(64), 0]],
    ["an extra field", ["x.md", "0".repeat(64), 0, 1, 2]],
    ["a numeric path", [7, "0".repeat(64), 0, 1]],
    ["an object", { path: "x.md", id: "0".repeat(64), offset: 0, size: 1 }],
  ])("refuses a put entry with %s", (_, put) => {
    const header = JSON.stringify({
      kind: "checkpoint",
      generation: 1,
      publicationId: "0190a5b4-0000-7000-8000-000000000001",
      baseGeneration: 0,
      puts: [put],
      deletes: [],
    });
    const bytes = encodeText(`QUIRE-PACK 1\n${encodeText(header).length}\n${header}x`);
    const decoded = decodePack(bytes);
    expect(Either.isLeft(decoded) && decoded.left).toBe(
      "header: a put is not [path, id, offset, size]",
    );
  });

  it.each([
    "../evil.md",
    "a//b.md",
    "/etc/passwd",
    "x/./y.md",
    ".git/config",
    "con.md",
    "a\u0000b",
  ])("refuses a pack naming the invalid path %j (it would become a file name)", (path) => {
    for (const files of [
      new Map([[path, encodeText("x\n")]]),
      new Map<string, Uint8Array | undefined>([[path, undefined]]),
    ]) {
      const { bytes } = encodePack({
        kind: "increment",
        generation: 2,
        publicationId: "0190a5b4-0000-7000-8000-000000000001",
        baseGeneration: 1,
        files,
      });
      const decoded = decodePack(bytes);
      expect(Either.isLeft(decoded) && decoded.left).toBe("entry with an invalid path");
    }
  });
});
