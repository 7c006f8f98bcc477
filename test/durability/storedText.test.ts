/**
 * Stored content that is not text (a well-formed pack, with the right checksum, whose
 * blobs are binary) is refused by a pull as STORAGE_INTEGRITY/PACK_INVALID before the
 * working copy is touched: for a file the pull would add (its line count is taken from
 * the bytes) and for one it would modify (both texts are decoded for the line diff).
 */
import { createHash } from "node:crypto";
import { Effect, Either } from "effect";
import { describe, expect, it } from "vitest";
import { encodeText } from "../../src/domain/content.js";
import { encodeManifest, packKey } from "../../src/domain/manifest.js";
import { decodePack, encodePack } from "../../src/domain/pack.js";
import { commit, fails, manifestOf, pull, world } from "./harness.js";

// A later UUIDv7 than any the test's notebooks generate today.
const forgedPublication = "7fffffff-ffff-7fff-bfff-ffffffffffff";

/** Publishes, on top of `current`, an increment writing `files` as raw bytes. */
const publishForged = async (
  w: ReturnType<typeof world>,
  files: ReadonlyMap<string, Uint8Array>,
): Promise<void> => {
  const manifest = await manifestOf(w.store);
  if (manifest === undefined) throw new Error("nothing published");
  const last = manifest.increments.at(-1) ?? manifest.checkpoint;
  const stored = await Effect.runPromise(w.store.get(last.key));
  if (stored._tag === "None") throw new Error("pack missing");
  const decoded = decodePack(stored.value.body);
  if (Either.isLeft(decoded)) throw new Error(decoded.left);
  const generation = manifest.generation + 1;
  const { bytes } = encodePack({
    kind: "increment",
    generation,
    publicationId: forgedPublication,
    baseGeneration: manifest.generation,
    ...(decoded.right.header.publication === undefined
      ? {}
      : { publication: decoded.right.header.publication }),
    files,
  });
  const key = packKey("increment", generation, forgedPublication);
  await Effect.runPromise(w.store.put(key, bytes, { _tag: "IfNoneMatch" }));
  const next = {
    ...manifest,
    generation,
    head: forgedPublication,
    increments: [
      ...manifest.increments,
      {
        key,
        generation,
        size: bytes.length,
        sha256: createHash("sha256").update(bytes).digest("hex"),
        publicationId: forgedPublication,
      },
    ],
  };
  await Effect.runPromise(
    w.store.put("current", encodeText(encodeManifest(next)), { _tag: "Unconditional" }),
  );
};

describe("stored content that is not text", () => {
  it("fails a pull that would add or modify it, and leaves the working copy as it was", async () => {
    const w = world();
    const a = w.open();
    await pull(a);
    w.write("/ws/a/x.md", "one\n");
    await commit(a);
    const binary = Uint8Array.of(0xff, 0xfe, 0x0a);
    await publishForged(
      w,
      new Map([
        ["x.md", binary],
        ["new.md", Uint8Array.of(0x61, 0x00, 0x0a)],
      ]),
    );

    // Copy A would modify x.md and add new.md.
    const modified = await fails(a.pull({ path: "/ws/a" }));
    expect([modified.code, modified.reason]).toEqual(["STORAGE_INTEGRITY", "PACK_INVALID"]);
    expect(w.files("/ws/a")).toEqual({ "x.md": "one\n" });

    // A fresh copy would add both.
    const b = w.open();
    const added = await fails(b.pull({ path: "/ws/b" }));
    expect([added.code, added.reason]).toEqual(["STORAGE_INTEGRITY", "PACK_INVALID"]);
    expect(w.files("/ws/b")).toEqual({});
  });
});
