/**
 * The ObjectStore contract suite (SPEC §7): the semantics the publication protocol
 * relies on, written against the port only, so every adapter (memory, file, S3, MinIO)
 * runs the same checks. Import it from a test file and call
 * {@link runObjectStoreContract}; it registers vitest `describe`/`it` blocks.
 *
 * ETag rule the suite enforces (and nothing stronger): a conditional replace with the
 * ETag observed by `get` succeeds iff no other write happened in between. It does NOT
 * require a new ETag when identical bytes are rewritten (S3 ETags are MD5s), but it
 * does require that an ETag goes stale once different bytes are written.
 */
import { readFileSync, statSync } from "node:fs";
import { Effect, Either, Option } from "effect";
import { describe, expect, it } from "vitest";
import {
  StoreError,
  type ObjectStoreService,
  type PutCondition,
  type StoreErrorReason,
} from "../../src/ports/ObjectStore.js";

/** A fresh, empty store for one test, and how to dispose of it afterwards. */
export interface ContractStore {
  readonly store: ObjectStoreService;
  readonly cleanup: () => Promise<void>;
}

/** Options of {@link runObjectStoreContract}. */
export interface ObjectStoreContractOptions {
  /**
   * Opens another, independent client (separate SDK client, separate store instance,
   * or a proxy to another process) on the SAME store the most recent `makeStore` call
   * created. When given, the concurrency tests spread their requests over such clients
   * and ETags are checked across clients.
   */
  readonly concurrentClients?: () => Promise<ObjectStoreService>;
  /**
   * Whether the store's objects are local files it lends to readers
   * (`StoredObject.localFile`): then every get must lend one, holding exactly the body
   * and never changed in place; otherwise no get may claim one.
   */
  readonly lendsLocalFiles?: boolean;
}

/** The signature of the store factory each test calls once. */
export type MakeContractStore = () => Promise<ContractStore>;

const unconditional: PutCondition = { _tag: "Unconditional" };
const ifNoneMatch: PutCondition = { _tag: "IfNoneMatch" };
const ifMatch = (etag: string): PutCondition => ({ _tag: "IfMatch", etag });

const text = (s: string): Uint8Array => new TextEncoder().encode(s);
const decode = (b: Uint8Array): string => new TextDecoder().decode(b);

const run = <A>(effect: Effect.Effect<A, StoreError>): Promise<A> => Effect.runPromise(effect);

/** Runs `effect` and returns its StoreError, failing the test if it succeeded. */
const failureOf = async <A>(effect: Effect.Effect<A, StoreError>): Promise<StoreError> => {
  const result = await Effect.runPromise(Effect.either(effect));
  if (Either.isRight(result)) {
    throw new Error(`expected a StoreError, got success ${JSON.stringify(result.right)}`);
  }
  expect(result.left).toBeInstanceOf(StoreError);
  return result.left;
};

const expectReason = async <A>(
  effect: Effect.Effect<A, StoreError>,
  reason: StoreErrorReason,
): Promise<void> => {
  const error = await failureOf(effect);
  expect(error.reason).toBe(reason);
};

const getSome = async (store: ObjectStoreService, key: string) => {
  const got = await run(store.get(key));
  if (Option.isNone(got)) throw new Error(`expected ${key} to exist`);
  return got.value;
};

/** Deterministic pseudo-random bytes (xorshift32), so large bodies are not compressible runs. */
const pseudoRandomBytes = (size: number, seed: number): Uint8Array => {
  const out = new Uint8Array(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
};

const expectBytes = (actual: Uint8Array, expected: Uint8Array): void => {
  expect(actual.length).toBe(expected.length);
  // One Buffer comparison instead of a per-byte diff keeps a 5 MiB mismatch report short.
  expect(Buffer.from(actual).equals(Buffer.from(expected))).toBe(true);
};

const CONTENDERS = 16;

/**
 * Registers the ObjectStore contract tests under `describe(name)`. `makeStore` is
 * called once per test and must return an EMPTY store (a fresh directory, a fresh
 * prefix); `cleanup` runs after the test, pass or fail.
 */
export const runObjectStoreContract = (
  name: string,
  makeStore: MakeContractStore,
  options: ObjectStoreContractOptions = {},
): void => {
  const withStore =
    (body: (store: ObjectStoreService) => Promise<void>): (() => Promise<void>) =>
    async () => {
      const { store, cleanup } = await makeStore();
      try {
        await body(store);
      } finally {
        await cleanup();
      }
    };

  /** The clients the concurrency tests use: separate ones when the adapter offers them. */
  const contenders = async (store: ObjectStoreService): Promise<ObjectStoreService[]> => {
    const open = options.concurrentClients;
    if (open === undefined) return Array.from({ length: CONTENDERS }, () => store);
    const clients: ObjectStoreService[] = [];
    for (let i = 0; i < CONTENDERS; i++) clients.push(await open());
    return clients;
  };

  describe(`ObjectStore contract: ${name}`, () => {
    describe("reads", () => {
      it(
        "get and head of a missing key are None",
        withStore(async (store) => {
          expect(Option.isNone(await run(store.get("missing")))).toBe(true);
          expect(Option.isNone(await run(store.head("missing")))).toBe(true);
          expect(Option.isNone(await run(store.get("missing/nested/key")))).toBe(true);
        }),
      );

      it(
        "has a non-empty identity",
        withStore(async (store) => {
          expect(store.identity.length).toBeGreaterThan(0);
        }),
      );
    });

    describe("unconditional put", () => {
      it(
        "then get returns the body and the ETag put returned; head agrees",
        withStore(async (store) => {
          const { etag } = await run(store.put("k", text("hello"), unconditional));
          expect(etag.length).toBeGreaterThan(0);
          const got = await getSome(store, "k");
          expect(decode(got.body)).toBe("hello");
          expect(got.etag).toBe(etag);
          const info = await run(store.head("k"));
          expect(info).toEqual(Option.some({ key: "k", size: 5, etag }));
        }),
      );

      it(
        "replaces an existing object and makes the old ETag stale",
        withStore(async (store) => {
          const first = await run(store.put("k", text("one"), unconditional));
          const second = await run(store.put("k", text("two"), unconditional));
          expect(second.etag).not.toBe(first.etag);
          const got = await getSome(store, "k");
          expect(decode(got.body)).toBe("two");
          expect(got.etag).toBe(second.etag);
          await expectReason(
            store.put("k", text("three"), ifMatch(first.etag)),
            "PreconditionFailed",
          );
          expect(decode((await getSome(store, "k")).body)).toBe("two");
        }),
      );

      it(
        "accepts metadata",
        withStore(async (store) => {
          const meta = { size: "3", sha256: "ab".repeat(32), kind: "increment", generation: "7" };
          const { etag } = await run(store.put("m", text("abc"), unconditional, meta));
          expect((await getSome(store, "m")).etag).toBe(etag);
        }),
      );
    });

    describe("If-None-Match create", () => {
      it(
        "succeeds on an absent key; a second create fails with PreconditionFailed and changes nothing",
        withStore(async (store) => {
          const created = await run(store.put("c", text("first"), ifNoneMatch));
          expect((await getSome(store, "c")).etag).toBe(created.etag);
          const error = await failureOf(store.put("c", text("second"), ifNoneMatch));
          expect(error.reason).toBe("PreconditionFailed");
          const got = await getSome(store, "c");
          expect(decode(got.body)).toBe("first");
          expect(got.etag).toBe(created.etag);
        }),
      );

      it(
        "fails even when the bytes are identical",
        withStore(async (store) => {
          await run(store.put("c", text("same"), ifNoneMatch));
          await expectReason(store.put("c", text("same"), ifNoneMatch), "PreconditionFailed");
        }),
      );
    });

    describe("If-Match replace", () => {
      it(
        "with the observed ETag replaces and returns the new ETag",
        withStore(async (store) => {
          await run(store.put("r", text("v1"), ifNoneMatch));
          const observed = await getSome(store, "r");
          const replaced = await run(store.put("r", text("v2"), ifMatch(observed.etag)));
          const got = await getSome(store, "r");
          expect(decode(got.body)).toBe("v2");
          expect(got.etag).toBe(replaced.etag);
        }),
      );

      it(
        "with a stale ETag fails with PreconditionFailed and changes nothing",
        withStore(async (store) => {
          const v1 = await run(store.put("r", text("v1"), ifNoneMatch));
          const v2 = await run(store.put("r", text("v2"), ifMatch(v1.etag)));
          await expectReason(store.put("r", text("v3"), ifMatch(v1.etag)), "PreconditionFailed");
          const got = await getSome(store, "r");
          expect(decode(got.body)).toBe("v2");
          expect(got.etag).toBe(v2.etag);
        }),
      );

      it(
        "with a made-up ETag fails with PreconditionFailed and changes nothing",
        withStore(async (store) => {
          const v1 = await run(store.put("r", text("v1"), unconditional));
          for (const bogus of ['"0123456789abcdef0123456789abcdef"', "not-an-etag", "*", ""]) {
            await expectReason(store.put("r", text("bogus"), ifMatch(bogus)), "PreconditionFailed");
          }
          const got = await getSome(store, "r");
          expect(decode(got.body)).toBe("v1");
          expect(got.etag).toBe(v1.etag);
        }),
      );

      it(
        "on a missing key fails with PreconditionFailed and creates nothing",
        withStore(async (store) => {
          const elsewhere = await run(store.put("other", text("x"), unconditional));
          await expectReason(
            store.put("absent", text("x"), ifMatch(elsewhere.etag)),
            "PreconditionFailed",
          );
          expect(Option.isNone(await run(store.get("absent")))).toBe(true);
        }),
      );

      it(
        "on a key that never existed fails with PreconditionFailed for any ETag and creates nothing",
        withStore(async (store) => {
          // The startup probe's step: some MinIO releases created the key instead.
          for (const made of [
            '"0123456789abcdef0123456789abcdef"',
            "fedcba9876543210fedcba9876543210",
          ]) {
            await expectReason(store.put("never", text("x"), ifMatch(made)), "PreconditionFailed");
            expect(Option.isNone(await run(store.get("never")))).toBe(true);
            expect(Option.isNone(await run(store.head("never")))).toBe(true);
          }
          expect((await run(store.list("never"))).map((o) => o.key)).toEqual([]);
        }),
      );

      it(
        "on a key deleted after it was read fails with PreconditionFailed and does not bring it back",
        withStore(async (store) => {
          const v1 = await run(store.put("gone", text("v1"), ifNoneMatch));
          await run(store.delete("gone"));
          await expectReason(store.put("gone", text("v2"), ifMatch(v1.etag)), "PreconditionFailed");
          expect(Option.isNone(await run(store.get("gone")))).toBe(true);
          // A create still works afterwards.
          await run(store.put("gone", text("v3"), ifNoneMatch));
          expect(decode((await getSome(store, "gone")).body)).toBe("v3");
        }),
      );

      it(
        "a chain of replaces each using the previous ETag succeeds, and every older ETag is stale",
        withStore(async (store) => {
          const etags = [(await run(store.put("chain", text("0"), ifNoneMatch))).etag];
          for (let i = 1; i <= 12; i++) {
            const prev = etags[etags.length - 1] ?? "";
            etags.push((await run(store.put("chain", text(String(i)), ifMatch(prev)))).etag);
          }
          for (const stale of etags.slice(0, -1)) {
            await expectReason(
              store.put("chain", text("late"), ifMatch(stale)),
              "PreconditionFailed",
            );
          }
          const got = await getSome(store, "chain");
          expect(decode(got.body)).toBe("12");
          expect(got.etag).toBe(etags[etags.length - 1]);
        }),
      );
    });

    describe("put after another effect", () => {
      it(
        "takes effect only once `after` succeeded, checking its condition then",
        withStore(async (store) => {
          const first = await run(store.put("gated", text("v1"), ifNoneMatch));
          let seenDuring: string | undefined;
          const after = Effect.promise(async () => {
            // The write has not happened while `after` runs…
            seenDuring = decode((await getSome(store, "gated")).body);
            // …and a replace made meanwhile is what its condition meets.
            await run(store.put("gated", text("other"), ifMatch(first.etag)));
          });
          await expectReason(
            store.putAfter("gated", text("v2"), ifMatch(first.etag), after),
            "PreconditionFailed",
          );
          expect(seenDuring).toBe("v1");
          const now = await getSome(store, "gated");
          expect(decode(now.body)).toBe("other");
          const written = await run(
            store.putAfter("gated", text("v3"), ifMatch(now.etag), Effect.void),
          );
          const got = await getSome(store, "gated");
          expect([decode(got.body), got.etag]).toEqual(["v3", written.etag]);
        }),
      );

      it(
        "writes nothing when `after` fails, and fails with its error",
        withStore(async (store) => {
          class Upstream extends Error {}
          const failed = await Effect.runPromise(
            Effect.either(
              store.putAfter("never", text("x"), ifNoneMatch, Effect.fail(new Upstream())),
            ),
          );
          expect(failed._tag === "Left" && failed.left instanceof Upstream).toBe(true);
          expect(Option.isNone(await run(store.get("never")))).toBe(true);
          await run(store.putAfter("never", text("y"), ifNoneMatch, Effect.void));
          expect(decode((await getSome(store, "never")).body)).toBe("y");
        }),
      );
    });

    describe("delete", () => {
      it(
        "of a missing key succeeds",
        withStore(async (store) => {
          await run(store.delete("never-existed"));
          await run(store.delete("never/existed/either"));
        }),
      );

      it(
        "removes the object; deleting again succeeds",
        withStore(async (store) => {
          await run(store.put("d", text("x"), unconditional));
          await run(store.delete("d"));
          expect(Option.isNone(await run(store.get("d")))).toBe(true);
          expect(Option.isNone(await run(store.head("d")))).toBe(true);
          await run(store.delete("d"));
        }),
      );

      it(
        "then If-None-Match create works, and the pre-delete ETag stays stale",
        withStore(async (store) => {
          const before = await run(store.put("d", text("before"), ifNoneMatch));
          await run(store.delete("d"));
          await expectReason(store.put("d", text("x"), ifMatch(before.etag)), "PreconditionFailed");
          expect(Option.isNone(await run(store.get("d")))).toBe(true);
          const after = await run(store.put("d", text("after"), ifNoneMatch));
          await expectReason(store.put("d", text("y"), ifMatch(before.etag)), "PreconditionFailed");
          const got = await getSome(store, "d");
          expect(decode(got.body)).toBe("after");
          expect(got.etag).toBe(after.etag);
        }),
      );

      it(
        "forever: the key is gone for get, head and list, deleting again succeeds, and it can be created anew",
        withStore(async (store) => {
          await run(store.put("once/k", text("x"), ifNoneMatch));
          await run(store.put("once/kept", text("y"), ifNoneMatch));
          await run(store.delete("once/k", { forever: true }));
          expect(Option.isNone(await run(store.get("once/k")))).toBe(true);
          expect(Option.isNone(await run(store.head("once/k")))).toBe(true);
          expect((await run(store.list("once/"))).map((o) => o.key)).toEqual(["once/kept"]);
          await run(store.delete("once/k", { forever: true }));
          await run(store.delete("never/existed", { forever: true }));
          await run(store.put("once/k", text("z"), ifNoneMatch));
          expect(decode((await getSome(store, "once/k")).body)).toBe("z");
          expect(decode((await getSome(store, "once/kept")).body)).toBe("y");
        }),
      );
    });

    describe("list", () => {
      const keys = ["list/a/1", "list/a/2", "list/a/b/c", "list/ab", "list/b/1", "other/x"];

      it(
        "returns exactly the keys with the prefix, in key order, with sizes and ETags",
        withStore(async (store) => {
          const etags = new Map<string, string>();
          // Written out of order so a store that lists in insertion order fails.
          for (const key of [...keys].reverse()) {
            const body = text(`body of ${key}`);
            etags.set(key, (await run(store.put(key, body, unconditional))).etag);
          }
          const expectFor = (ks: ReadonlyArray<string>) =>
            ks.map((key) => ({ key, size: text(`body of ${key}`).length, etag: etags.get(key) }));

          expect(await run(store.list("list/a/"))).toEqual(
            expectFor(["list/a/1", "list/a/2", "list/a/b/c"]),
          );
          expect(await run(store.list("list/a"))).toEqual(
            expectFor(["list/a/1", "list/a/2", "list/a/b/c", "list/ab"]),
          );
          expect(await run(store.list("list/"))).toEqual(
            expectFor(["list/a/1", "list/a/2", "list/a/b/c", "list/ab", "list/b/1"]),
          );
          expect(await run(store.list(""))).toEqual(expectFor(keys));
          expect(await run(store.list("list/a/b/c"))).toEqual(expectFor(["list/a/b/c"]));
          expect(await run(store.list("nothing/"))).toEqual([]);
          expect(await run(store.list("lis"))).toEqual(expectFor(keys.slice(0, 5)));
        }),
      );

      it(
        "omits deleted keys and reports replaced objects' current size and ETag",
        withStore(async (store) => {
          await run(store.put("l/gone", text("x"), unconditional));
          await run(store.put("l/kept", text("x"), unconditional));
          const replaced = await run(store.put("l/kept", text("longer"), unconditional));
          await run(store.delete("l/gone"));
          expect(await run(store.list("l/"))).toEqual([
            { key: "l/kept", size: 6, etag: replaced.etag },
          ]);
        }),
      );
    });

    describe("keys and bodies", () => {
      it(
        "keys with nested segments and unusual characters are distinct and round-trip",
        withStore(async (store) => {
          const odd = [
            "deep/a/b/c/d/e/f.txt",
            "deep/a/bc",
            "with space/and+plus",
            "percent%20sign",
            "unicode/ünïcødé-日本-😀",
            "at@sign/x",
            "Case/K",
            "case/k",
            "dots/.hidden",
            "dots/a..b",
            "packs/increments/5-0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.pack",
          ];
          for (const key of odd) await run(store.put(key, text(`=${key}`), ifNoneMatch));
          for (const key of odd) {
            expect(decode((await getSome(store, key)).body)).toBe(`=${key}`);
          }
          expect((await run(store.list(""))).map((i) => i.key).sort()).toEqual([...odd].sort());
          for (const key of odd) await run(store.delete(key));
          expect(await run(store.list(""))).toEqual([]);
        }),
      );

      it(
        "a body of all 256 byte values round-trips exactly",
        withStore(async (store) => {
          const body = new Uint8Array(512);
          for (let i = 0; i < body.length; i++) body[i] = i % 256;
          await run(store.put("bin", body, unconditional));
          expectBytes((await getSome(store, "bin")).body, body);
        }),
      );

      it(
        "an empty body round-trips with size 0",
        withStore(async (store) => {
          const { etag } = await run(store.put("empty", new Uint8Array(0), ifNoneMatch));
          const got = await getSome(store, "empty");
          expect(got.body.length).toBe(0);
          expect(got.etag).toBe(etag);
          expect(await run(store.head("empty"))).toEqual(
            Option.some({ key: "empty", size: 0, etag }),
          );
          await expectReason(
            store.put("empty", new Uint8Array(0), ifNoneMatch),
            "PreconditionFailed",
          );
        }),
      );

      it(
        "a 5 MiB body round-trips exactly",
        withStore(async (store) => {
          const body = pseudoRandomBytes(5 * 1024 * 1024, 0x5eed);
          const { etag } = await run(store.put("big", body, ifNoneMatch));
          const got = await getSome(store, "big");
          expect(got.etag).toBe(etag);
          expectBytes(got.body, body);
          expect(await run(store.head("big"))).toEqual(
            Option.some({ key: "big", size: body.length, etag }),
          );
        }),
      );

      it(
        "bodies are copied: mutating the put or got buffer changes nothing stored",
        withStore(async (store) => {
          const body = text("original");
          await run(store.put("alias", body, unconditional));
          body.fill(0x21);
          const got = await getSome(store, "alias");
          expect(decode(got.body)).toBe("original");
          got.body.fill(0x22);
          expect(decode((await getSome(store, "alias")).body)).toBe("original");
        }),
      );
    });

    describe("local files", () => {
      /** The bytes of `file` now, or `undefined` once it is gone. */
      const bytesOf = (file: string): Uint8Array | undefined => {
        try {
          return readFileSync(file);
        } catch (error) {
          if (error instanceof Error && "code" in error && error.code === "ENOENT") {
            return undefined;
          }
          throw error;
        }
      };

      if (options.lendsLocalFiles === true) {
        it(
          "a get lends the file it read, holding exactly the body, which later writes never change",
          withStore(async (store) => {
            await run(store.put("k", text("one"), unconditional));
            const first = (await getSome(store, "k")).localFile;
            if (first === undefined) throw new Error("expected the get to lend a local file");
            expect(decode(bytesOf(first.path) ?? new Uint8Array())).toBe("one");
            const stat = statSync(first.path);
            expect([stat.ino, stat.size, stat.mtimeMs]).toEqual([
              first.ino,
              first.size,
              first.mtimeMs,
            ]);
            await run(store.put("k", text("two, longer"), unconditional));
            const second = (await getSome(store, "k")).localFile;
            if (second === undefined) throw new Error("expected the get to lend a local file");
            expect(decode(bytesOf(second.path) ?? new Uint8Array())).toBe("two, longer");
            // The first file is gone or still "one": a reader that linked it keeps what it read.
            const before = bytesOf(first.path);
            if (before !== undefined) expect(decode(before)).toBe("one");
            await run(store.delete("k"));
            const after = bytesOf(second.path);
            if (after !== undefined) expect(decode(after)).toBe("two, longer");
          }),
        );
      } else {
        it(
          "a get lends no local file",
          withStore(async (store) => {
            await run(store.put("k", text("one"), unconditional));
            expect((await getSome(store, "k")).localFile).toBeUndefined();
          }),
        );
      }
    });

    describe("concurrency", () => {
      it(
        `${CONTENDERS} concurrent If-Match replaces with the same ETag: exactly one wins`,
        withStore(async (store) => {
          const clients = await contenders(store);
          const { etag } = await run(store.put("race", text("base"), ifNoneMatch));
          const attempts = clients.map((client, i) =>
            Effect.either(client.put("race", text(`writer-${i}`), ifMatch(etag))),
          );
          const results = await run(Effect.all(attempts, { concurrency: "unbounded" }));
          const winners = results.flatMap((r, i) =>
            Either.isRight(r) ? [{ i, etag: r.right.etag }] : [],
          );
          const losers = results.flatMap((r) => (Either.isLeft(r) ? [r.left.reason] : []));
          expect(winners).toHaveLength(1);
          expect(losers).toEqual(
            Array.from({ length: CONTENDERS - 1 }, () => "PreconditionFailed"),
          );
          const winner = winners[0];
          if (winner === undefined) throw new Error("no winner");
          // Read through a client other than the winner's when clients are separate.
          const reader = clients[(winner.i + 1) % clients.length] ?? store;
          const got = await getSome(reader, "race");
          expect(decode(got.body)).toBe(`writer-${winner.i}`);
          expect(got.etag).toBe(winner.etag);
        }),
      );

      it(
        `${CONTENDERS} concurrent If-None-Match creates: exactly one wins`,
        withStore(async (store) => {
          const clients = await contenders(store);
          const attempts = clients.map((client, i) =>
            Effect.either(client.put("create", text(`creator-${i}`), ifNoneMatch)),
          );
          const results = await run(Effect.all(attempts, { concurrency: "unbounded" }));
          const winners = results.flatMap((r, i) =>
            Either.isRight(r) ? [{ i, etag: r.right.etag }] : [],
          );
          const losers = results.flatMap((r) => (Either.isLeft(r) ? [r.left.reason] : []));
          expect(winners).toHaveLength(1);
          expect(losers).toEqual(
            Array.from({ length: CONTENDERS - 1 }, () => "PreconditionFailed"),
          );
          const winner = winners[0];
          if (winner === undefined) throw new Error("no winner");
          const got = await getSome(store, "create");
          expect(decode(got.body)).toBe(`creator-${winner.i}`);
          expect(got.etag).toBe(winner.etag);
        }),
      );

      it(
        "concurrent compare-and-swap loops never lose an update",
        withStore(async (store) => {
          const clients = (await contenders(store)).slice(0, 4);
          const perWriter = 5;
          let succeeded = 0;
          // Ambiguous (may or may not have taken effect) is a legal answer; such an
          // increment is not retried, and the final count can only be bounded.
          let ambiguous = 0;
          await run(store.put("counter", text("0"), ifNoneMatch));
          const increment = (client: ObjectStoreService): Effect.Effect<void, StoreError> =>
            Effect.gen(function* () {
              for (;;) {
                const current = yield* client.get("counter");
                if (Option.isNone(current)) return yield* Effect.die("counter vanished");
                const next = text(String(Number(decode(current.value.body)) + 1));
                const outcome = yield* Effect.either(
                  client.put("counter", next, ifMatch(current.value.etag)),
                );
                if (Either.isRight(outcome)) return void (succeeded += 1);
                if (outcome.left.reason === "Ambiguous") return void (ambiguous += 1);
                if (outcome.left.reason !== "PreconditionFailed") return yield* outcome.left;
              }
            });
          const writers = clients.map((client) => Effect.repeatN(increment(client), perWriter - 1));
          await run(Effect.all(writers, { concurrency: "unbounded" }));
          expect(succeeded + ambiguous).toBe(clients.length * perWriter);
          const final = Number(decode((await getSome(store, "counter")).body));
          expect(final).toBeGreaterThanOrEqual(succeeded);
          expect(final).toBeLessThanOrEqual(succeeded + ambiguous);
        }),
      );

      if (options.concurrentClients !== undefined) {
        const openClient = options.concurrentClients;
        it(
          "ETags are portable across clients",
          withStore(async (store) => {
            const other = await openClient();
            const a = await run(store.put("x", text("from A"), ifNoneMatch));
            const seenByB = await getSome(other, "x");
            expect(seenByB.etag).toBe(a.etag);
            const b = await run(other.put("x", text("from B"), ifMatch(a.etag)));
            const seenByA = await getSome(store, "x");
            expect(decode(seenByA.body)).toBe("from B");
            expect(seenByA.etag).toBe(b.etag);
            await expectReason(
              store.put("x", text("stale"), ifMatch(a.etag)),
              "PreconditionFailed",
            );
            await expectReason(other.put("x", text("again"), ifNoneMatch), "PreconditionFailed");
            expect(await run(other.head("x"))).toEqual(
              Option.some({ key: "x", size: text("from B").length, etag: b.etag }),
            );
          }),
        );
      }
    });
  });
};
