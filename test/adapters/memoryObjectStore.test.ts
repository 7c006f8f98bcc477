import { it } from "@effect/vitest";
import { Effect, Option } from "effect";
import { describe, expect } from "vitest";
import { layer, make } from "../../src/adapters/memoryObjectStore.js";
import { ObjectStore } from "../../src/ports/ObjectStore.js";
import { runObjectStoreContract } from "../contract/objectStoreContract.js";

runObjectStoreContract("memory", async () => ({ store: make(), cleanup: async () => {} }));

const body = (s: string) => new TextEncoder().encode(s);

describe("memory object store", () => {
  it("uses the configured identity, or a unique default", () => {
    expect(make({ identity: "memory:fixed" }).identity).toBe("memory:fixed");
    const a = make().identity;
    expect(a).toMatch(/^memory:/);
    expect(make().identity).not.toBe(a);
  });

  it.effect("each layer build is a fresh, empty store", () =>
    Effect.gen(function* () {
      const write = Effect.flatMap(ObjectStore, (store) =>
        store.put("k", body("x"), { _tag: "IfNoneMatch" }),
      );
      yield* write.pipe(Effect.provide(layer()));
      // A second build would fail the create if the map were shared.
      yield* write.pipe(Effect.provide(layer()));
    }),
  );

  it.effect("ETags are never reused, across keys or after delete and recreate", () =>
    Effect.gen(function* () {
      const store = make();
      const seen = new Set<string>();
      for (const key of ["a", "b", "a", "b"]) {
        const { etag } = yield* store.put(key, body("same"), { _tag: "Unconditional" });
        seen.add(etag);
        yield* store.delete(key);
      }
      expect(seen.size).toBe(4);
      // ETags of different stores differ too, so one never matches the other by chance.
      const other = make();
      const mine = yield* store.put("k", body("x"), { _tag: "Unconditional" });
      const theirs = yield* other.put("k", body("x"), { _tag: "Unconditional" });
      expect(mine.etag).not.toBe(theirs.etag);
      const wrong = yield* Effect.flip(
        store.put("k", body("y"), { _tag: "IfMatch", etag: theirs.etag }),
      );
      expect(wrong.reason).toBe("PreconditionFailed");
      expect(Option.map(yield* store.get("k"), (o) => o.etag)).toEqual(Option.some(mine.etag));
    }),
  );
});
