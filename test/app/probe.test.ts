import { describe, expect } from "vitest";
import { it } from "@effect/vitest";
import { Deferred, Effect, Exit, Fiber, Layer, Option } from "effect";
import * as IdGeneratorAdapter from "../../src/adapters/idGenerator.js";
import * as FaultyStore from "../../src/adapters/faultyObjectStore.js";
import * as MemoryStore from "../../src/adapters/memoryObjectStore.js";
import { probeStore } from "../../src/app/usecases/commit/probe.js";
import type { DomainError } from "../../src/domain/errors.js";
import {
  ObjectStore,
  StoreError,
  type ObjectStoreService,
  type PutCondition,
  type StoreErrorReason,
} from "../../src/ports/ObjectStore.js";

/** A store over `base` with some operations replaced; records every key written. */
const fakeStore = (
  override: (base: ObjectStoreService) => Partial<ObjectStoreService>,
  base: ObjectStoreService = MemoryStore.make({ identity: "memory:probe-test" }),
) => {
  const written: Array<string> = [];
  const replaced = override(base);
  const service: ObjectStoreService = {
    ...base,
    ...replaced,
    put: (key, body, condition, metadata) => {
      written.push(key);
      return (replaced.put ?? base.put)(key, body, condition, metadata);
    },
  };
  return { service, base, written };
};

const runProbe = (service: ObjectStoreService) =>
  probeStore.pipe(
    Effect.provide(Layer.merge(Layer.succeed(ObjectStore, service), IdGeneratorAdapter.layer)),
    Effect.exit,
  );

const failureOf = (exit: Exit.Exit<void, DomainError>): DomainError => {
  if (Exit.isSuccess(exit)) throw new Error("the probe succeeded");
  const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined;
  if (failure === undefined) throw new Error(`the probe died: ${String(exit.cause)}`);
  return failure;
};

const storeError = (reason: StoreErrorReason) =>
  new StoreError({ reason, message: `injected ${reason}` });

/** Every put treated as unconditional, like s3rver and other stores ignoring the headers. */
const ignoresConditions = (base: ObjectStoreService): Partial<ObjectStoreService> => ({
  put: (key, body, _condition, metadata) =>
    base.put(key, body, { _tag: "Unconditional" }, metadata),
});

/**
 * Every put, or only those `when` picks, takes effect and then fails with `error`: a
 * lost answer (`Ambiguous`), or one the adapter could not use.
 */
const landsThenFails =
  (error: StoreError, when: () => boolean = () => true) =>
  (inner: ObjectStoreService): Partial<ObjectStoreService> => ({
    put: (key, body, condition, metadata) =>
      when()
        ? Effect.zipRight(inner.put(key, body, condition, metadata), Effect.fail(error))
        : inner.put(key, body, condition, metadata),
  });

const noProbeKeysLeft = (base: ObjectStoreService) =>
  Effect.map(base.list("probe/"), (left) => expect(left).toEqual([]));

describe("probeStore", () => {
  it.effect("passes on a store with real conditional writes and deletes its keys", () =>
    Effect.gen(function* () {
      const { service, base, written } = fakeStore(() => ({}));
      const exit = yield* runProbe(service);
      expect(Exit.isSuccess(exit)).toBe(true);
      expect(written.length).toBeGreaterThanOrEqual(5);
      // One key for create, read and replace; one that never exists, for If-Match of a missing key.
      expect(new Set(written).size).toBe(2);
      for (const key of written)
        expect(key).toMatch(
          /^probe\/[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
        );
      yield* noProbeKeysLeft(base);
    }),
  );

  it.effect("uses fresh keys per run", () =>
    Effect.gen(function* () {
      const { service, written } = fakeStore(() => ({}));
      yield* runProbe(service);
      yield* runProbe(service);
      expect(new Set(written).size).toBe(4);
    }),
  );

  it.effect(
    "refuses a store whose If-Match of a missing key creates it (the fault-injecting store) with IF_MATCH_CREATES",
    () =>
      Effect.gen(function* () {
        const base = MemoryStore.make({ identity: "memory:probe-test" });
        const faulty = FaultyStore.make(base, {
          rules: [{ fault: { _tag: "IfMatchCreates" }, times: Number.POSITIVE_INFINITY }],
        });
        const error = failureOf(yield* runProbe(faulty.store));
        expect([error.code, error.reason, error.action, error.retryable]).toEqual([
          "INCOMPATIBLE_STORE",
          "IF_MATCH_CREATES",
          "CHECK_CONFIGURATION",
          false,
        ]);
        expect(error.message).toContain("memory:probe-test");
        expect(error.message).toContain("does not exist");
        yield* noProbeKeysLeft(base);
        // The same store without the fault passes: that promise alone was broken.
        faulty.clear();
        expect(Exit.isSuccess(yield* runProbe(faulty.store))).toBe(true);
      }),
  );

  it.effect("refuses a store whose refused If-Match of a missing key still created it", () =>
    Effect.gen(function* () {
      const { service, base } = fakeStore((inner) => ({
        put: (key, body, condition, metadata) =>
          condition._tag === "IfMatch"
            ? Effect.flatMap(inner.head(key), (found) =>
                Option.isSome(found)
                  ? inner.put(key, body, condition, metadata)
                  : Effect.flatMap(inner.put(key, body, { _tag: "IfNoneMatch" }, metadata), () =>
                      Effect.fail(storeError("PreconditionFailed")),
                    ),
              )
            : inner.put(key, body, condition, metadata),
      }));
      const error = failureOf(yield* runProbe(service));
      expect(error.reason).toBe("IF_MATCH_CREATES");
      expect(error.message).toContain("created it");
      yield* noProbeKeysLeft(base);
    }),
  );

  it.effect(
    "refuses a store that ignores conditions with NO_CONDITIONAL_CREATE and cleans up",
    () =>
      Effect.gen(function* () {
        const { service, base } = fakeStore(ignoresConditions);
        const error = failureOf(yield* runProbe(service));
        expect(error.code).toBe("INCOMPATIBLE_STORE");
        expect(error.reason).toBe("NO_CONDITIONAL_CREATE");
        expect(error.action).toBe("CHECK_CONFIGURATION");
        expect(error.retryable).toBe(false);
        expect(error.message).toContain("memory:probe-test");
        yield* noProbeKeysLeft(base);
      }),
  );

  it.effect("refuses a store that ignores If-Match with NO_CONDITIONAL_REPLACE", () =>
    Effect.gen(function* () {
      const { service, base } = fakeStore((inner) => ({
        put: (key, body, condition: PutCondition, metadata) =>
          inner.put(
            key,
            body,
            condition._tag === "IfMatch" ? { _tag: "Unconditional" } : condition,
            metadata,
          ),
      }));
      const error = failureOf(yield* runProbe(service));
      expect(error.reason).toBe("NO_CONDITIONAL_REPLACE");
      yield* noProbeKeysLeft(base);
    }),
  );

  it.effect(
    "refuses a store that refuses even the right If-Match with NO_CONDITIONAL_REPLACE",
    () =>
      Effect.gen(function* () {
        const { service, base } = fakeStore((inner) => ({
          put: (key, body, condition, metadata) =>
            condition._tag === "IfMatch"
              ? Effect.fail(storeError("PreconditionFailed"))
              : inner.put(key, body, condition, metadata),
        }));
        const error = failureOf(yield* runProbe(service));
        expect(error.reason).toBe("NO_CONDITIONAL_REPLACE");
        yield* noProbeKeysLeft(base);
      }),
  );

  it.effect("refuses a store that reports a refused If-Match but changed the object", () =>
    Effect.gen(function* () {
      const { service, base } = fakeStore((inner) => ({
        put: (key, body, condition, metadata) =>
          condition._tag === "IfMatch"
            ? Effect.flatMap(inner.put(key, body, { _tag: "Unconditional" }, metadata), () =>
                Effect.fail(storeError("PreconditionFailed")),
              )
            : inner.put(key, body, condition, metadata),
      }));
      const error = failureOf(yield* runProbe(service));
      expect(error.reason).toBe("NO_CONDITIONAL_REPLACE");
      yield* noProbeKeysLeft(base);
    }),
  );

  it.effect("refuses a store without read-after-write with NO_READ_AFTER_WRITE", () =>
    Effect.gen(function* () {
      const { service, base } = fakeStore(() => ({ get: () => Effect.succeed(Option.none()) }));
      const error = failureOf(yield* runProbe(service));
      expect(error.reason).toBe("NO_READ_AFTER_WRITE");
      yield* noProbeKeysLeft(base);
    }),
  );

  it.effect("refuses a store whose read returns another ETag than the write", () =>
    Effect.gen(function* () {
      const { service, base } = fakeStore((inner) => ({
        get: (key) =>
          Effect.map(
            inner.get(key),
            Option.map((object) => ({ ...object, etag: `"${object.etag}"` })),
          ),
      }));
      const error = failureOf(yield* runProbe(service));
      expect(error.reason).toBe("NO_READ_AFTER_WRITE");
      yield* noProbeKeysLeft(base);
    }),
  );

  it.effect("refuses a store whose read returns other bytes", () =>
    Effect.gen(function* () {
      const { service, base } = fakeStore((inner) => ({
        get: (key) =>
          Effect.map(
            inner.get(key),
            Option.map((object) => ({ ...object, body: object.body.subarray(1) })),
          ),
      }));
      const error = failureOf(yield* runProbe(service));
      expect(error.reason).toBe("NO_READ_AFTER_WRITE");
      yield* noProbeKeysLeft(base);
    }),
  );

  const storeFailures: ReadonlyArray<readonly [StoreErrorReason, string]> = [
    ["AccessDenied", "ACCESS_DENIED"],
    ["BucketMissing", "BUCKET_MISSING"],
    ["Unavailable", "STORAGE_FAILURE/STORE_UNAVAILABLE"],
    ["Throttled", "STORAGE_FAILURE/THROTTLED"],
    ["Ambiguous", "STORAGE_FAILURE/TIMEOUT"],
    ["Corrupt", "STORAGE_FAILURE/STORE_UNAVAILABLE"],
    ["PreconditionFailed", "NO_CONDITIONAL_CREATE"],
  ];
  for (const [reason, expected] of storeFailures) {
    it.effect(`maps a ${reason} first create to ${expected}`, () =>
      Effect.gen(function* () {
        const { service, base } = fakeStore(() => ({ put: () => Effect.fail(storeError(reason)) }));
        const error = failureOf(yield* runProbe(service));
        const [code, reasonToken] = expected.includes("/")
          ? expected.split("/")
          : ["INCOMPATIBLE_STORE", expected];
        expect(error.code).toBe(code);
        expect(error.reason).toBe(reasonToken);
        expect(error.message).toContain(`injected ${reason}`);
        yield* noProbeKeysLeft(base);
      }),
    );
  }

  it.effect(
    "refuses a store that answers every write without its ETag, not as a retryable timeout",
    () =>
      Effect.gen(function* () {
        // The S3 adapters' answer to a 2xx write without an ETag: it took effect, unusably.
        const { service, base } = fakeStore(
          landsThenFails(
            new StoreError({
              reason: "Ambiguous",
              message: "injected: the answer has no ETag",
              answeredWithoutEtag: true,
            }),
          ),
        );
        const error = failureOf(yield* runProbe(service));
        expect(error.code).toBe("INCOMPATIBLE_STORE");
        expect(error.reason).toBe("NO_CONDITIONAL_REPLACE");
        expect(error.message).toContain("without the written object's ETag");
        yield* noProbeKeysLeft(base);
      }),
  );

  it.effect(
    "reports a store whose every write times out after taking effect as a retryable TIMEOUT",
    () =>
      Effect.gen(function* () {
        const { service, base } = fakeStore(landsThenFails(storeError("Ambiguous")));
        const error = failureOf(yield* runProbe(service));
        expect([error.code, error.reason]).toEqual(["STORAGE_FAILURE", "TIMEOUT"]);
        yield* noProbeKeysLeft(base);
      }),
  );

  it.effect("reports one lost response to the first create as a retryable TIMEOUT", () =>
    Effect.gen(function* () {
      let puts = 0;
      const { service, base } = fakeStore(
        landsThenFails(storeError("Ambiguous"), () => ++puts === 1),
      );
      const error = failureOf(yield* runProbe(service));
      expect([error.code, error.reason]).toEqual(["STORAGE_FAILURE", "TIMEOUT"]);
      yield* noProbeKeysLeft(base);
    }),
  );

  it.effect("deletes the key when a later step fails with a store error", () =>
    Effect.gen(function* () {
      let reads = 0;
      const { service, base } = fakeStore((inner) => ({
        get: (key) => (++reads === 2 ? Effect.fail(storeError("Unavailable")) : inner.get(key)),
      }));
      const error = failureOf(yield* runProbe(service));
      expect(error.reason).toBe("STORE_UNAVAILABLE");
      yield* noProbeKeysLeft(base);
    }),
  );

  it.effect("keeps the step's reason when the cleanup delete fails too", () =>
    Effect.gen(function* () {
      const { service } = fakeStore((inner) => ({
        ...ignoresConditions(inner),
        delete: () => Effect.fail(storeError("Unavailable")),
      }));
      const error = failureOf(yield* runProbe(service));
      expect(error.reason).toBe("NO_CONDITIONAL_CREATE");
    }),
  );

  it.effect("reports a denied delete after successful steps as ACCESS_DENIED", () =>
    Effect.gen(function* () {
      const { service } = fakeStore(() => ({
        delete: () => Effect.fail(storeError("AccessDenied")),
      }));
      const error = failureOf(yield* runProbe(service));
      expect(error.reason).toBe("ACCESS_DENIED");
    }),
  );

  it.effect("deletes the key when the probe is interrupted mid-way", () =>
    Effect.gen(function* () {
      const reading = yield* Deferred.make<void>();
      const { service, base } = fakeStore(() => ({
        get: () => Effect.zipRight(Deferred.succeed(reading, undefined), Effect.never),
      }));
      const fiber = yield* Effect.fork(runProbe(service));
      yield* Deferred.await(reading);
      expect((yield* base.list("probe/")).length).toBe(1);
      yield* Fiber.interrupt(fiber);
      yield* noProbeKeysLeft(base);
    }),
  );
});
