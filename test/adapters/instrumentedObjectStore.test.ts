import { it } from "@effect/vitest";
import { Duration, Effect, Fiber, Layer, Option, TestClock } from "effect";
import { describe, expect } from "vitest";
import {
  Instrumentation,
  instrument,
  layer,
  type InstrumentOptions,
} from "../../src/adapters/instrumentedObjectStore.js";
import * as Memory from "../../src/adapters/memoryObjectStore.js";
import { ObjectStore } from "../../src/ports/ObjectStore.js";
import { runObjectStoreContract } from "../contract/objectStoreContract.js";

// Transparent when no fault is scripted (with a real 1 ms latency on every request).
runObjectStoreContract("instrumented memory", async () => ({
  store: instrument(Memory.make(), { latency: "1 millis" }).store,
  cleanup: async () => {},
}));

const text = (s: string) => new TextEncoder().encode(s);
const decode = (b: Uint8Array) => new TextDecoder().decode(b);
const unconditional = { _tag: "Unconditional" } as const;
const ifNoneMatch = { _tag: "IfNoneMatch" } as const;

const setup = (options: InstrumentOptions = {}) => {
  const inner = Memory.make();
  return { inner, ...instrument(inner, options) };
};

describe("instrumented object store", () => {
  it.effect("counts and logs every request per method, with outcomes", () =>
    Effect.gen(function* () {
      const { store, counts, requests, reset } = setup();
      yield* store.put("a", text("x"), ifNoneMatch);
      yield* Effect.flip(store.put("a", text("y"), ifNoneMatch));
      yield* store.get("a");
      yield* store.head("b");
      yield* store.list("");
      yield* store.delete("a");
      expect(yield* counts).toEqual({ get: 1, head: 1, put: 2, delete: 1, list: 1 });
      expect(yield* requests).toEqual([
        { method: "put", key: "a", condition: "IfNoneMatch", outcome: "ok", injected: false },
        {
          method: "put",
          key: "a",
          condition: "IfNoneMatch",
          outcome: "PreconditionFailed",
          injected: false,
        },
        { method: "get", key: "a", outcome: "ok", injected: false },
        { method: "head", key: "b", outcome: "ok", injected: false },
        { method: "list", key: "", outcome: "ok", injected: false },
        { method: "delete", key: "a", outcome: "ok", injected: false },
      ]);
      yield* reset;
      expect(yield* counts).toEqual({ get: 0, head: 0, put: 0, delete: 0, list: 0 });
      expect(yield* requests).toEqual([]);
      const quiet = setup({ recordRequests: false });
      yield* quiet.store.get("a");
      expect(yield* quiet.requests).toEqual([]);
      expect((yield* quiet.counts).get).toBe(1);
    }),
  );

  it.effect("latency is an Effect.sleep, driven by the TestClock", () =>
    Effect.gen(function* () {
      const { store, inner } = setup({ latency: Duration.seconds(5) });
      yield* inner.put("k", text("v"), unconditional);
      const fiber = yield* Effect.fork(store.get("k"));
      yield* TestClock.adjust(Duration.seconds(4));
      expect(Option.isNone(yield* Fiber.poll(fiber))).toBe(true);
      yield* TestClock.adjust(Duration.seconds(1));
      const got = yield* Fiber.join(fiber);
      expect(Option.map(got, (o) => decode(o.body))).toEqual(Option.some("v"));
    }),
  );

  it.effect("per-request latency", () =>
    Effect.gen(function* () {
      const { store } = setup({
        latency: (request) => (request.method === "put" ? "10 seconds" : Duration.zero),
      });
      yield* store.get("k");
      const put = yield* Effect.fork(store.put("k", text("v"), unconditional));
      yield* TestClock.adjust("9 seconds");
      expect(Option.isNone(yield* Fiber.poll(put))).toBe(true);
      yield* TestClock.adjust("1 second");
      yield* Fiber.join(put);
    }),
  );

  it.effect("a 'before' fault fails without reaching the inner store", () =>
    Effect.gen(function* () {
      const { store, inner, requests } = setup({
        faults: [{ method: "put", when: "before", reason: "Throttled" }],
      });
      const error = yield* Effect.flip(store.put("k", text("v"), ifNoneMatch));
      expect(error.reason).toBe("Throttled");
      expect(error.message).toMatch(/^injected:/);
      expect(Option.isNone(yield* inner.get("k"))).toBe(true);
      expect((yield* requests)[0]).toMatchObject({ outcome: "Throttled", injected: true });
      // One-shot by default: the next put goes through.
      yield* store.put("k", text("v"), ifNoneMatch);
      expect(Option.isSome(yield* inner.get("k"))).toBe(true);
    }),
  );

  it.effect("an 'after' fault performs the request, then reports Ambiguous", () =>
    Effect.gen(function* () {
      const { store, inner } = setup({ faults: [{ method: "put", when: "after" }] });
      const error = yield* Effect.flip(store.put("k", text("v"), ifNoneMatch));
      expect(error.reason).toBe("Ambiguous");
      const got = yield* inner.get("k");
      expect(Option.map(got, (o) => decode(o.body))).toEqual(Option.some("v"));
      // Even a request that failed inside hides its own answer behind the injected one.
      yield* Effect.gen(function* () {
        const again = instrument(inner, { faults: [{ when: "after", reason: "Unavailable" }] });
        const lost = yield* Effect.flip(again.store.put("k", text("w"), ifNoneMatch));
        expect(lost.reason).toBe("Unavailable");
      });
    }),
  );

  it.effect("rules match method, key pattern and condition, and count down `times`", () =>
    Effect.gen(function* () {
      const { store, pendingFaults } = setup({
        faults: [
          { method: ["get", "head"], keyPattern: /^packs\//g, when: "before", times: 2 },
          { method: "put", condition: "IfMatch", when: "before", reason: "Unavailable" },
          { keyPattern: (key) => key.endsWith(".tmp"), when: "before", reason: "AccessDenied" },
          { keyPattern: "current", method: "delete", when: "before", times: Infinity },
        ],
      });
      const outcome = <A, E extends { reason: string }>(e: Effect.Effect<A, E>) =>
        Effect.match(e, { onFailure: (error) => error.reason, onSuccess: () => "ok" });
      expect(yield* outcome(store.get("current"))).toBe("ok");
      expect(yield* outcome(store.get("packs/a"))).toBe("Unavailable");
      expect(yield* outcome(store.head("packs/b"))).toBe("Unavailable");
      expect(yield* outcome(store.get("packs/c"))).toBe("ok");
      expect(yield* outcome(store.put("k", text("v"), unconditional))).toBe("ok");
      expect(yield* outcome(store.put("k", text("v"), { _tag: "IfMatch", etag: "x" }))).toBe(
        "Unavailable",
      );
      expect(yield* outcome(store.put("k", text("v"), { _tag: "IfMatch", etag: "x" }))).toBe(
        "PreconditionFailed",
      );
      expect(yield* outcome(store.list("a.tmp"))).toBe("AccessDenied");
      expect(yield* pendingFaults).toBe(1);
      for (let i = 0; i < 3; i++)
        expect(yield* outcome(store.delete("current"))).toBe("Unavailable");
      expect(yield* outcome(store.delete("other"))).toBe("ok");
    }),
  );

  it.effect("faults can be injected and cleared at run time, or decided by a function", () =>
    Effect.gen(function* () {
      let failNext = false;
      const { store, inject, clearFaults, pendingFaults } = setup({
        decide: (request) =>
          failNext && request.method === "get" ? { when: "before", reason: "Corrupt" } : undefined,
      });
      yield* inject({ method: "list", when: "before" }, { method: "list", when: "before" });
      expect(yield* pendingFaults).toBe(2);
      expect((yield* Effect.flip(store.list(""))).reason).toBe("Unavailable");
      yield* clearFaults;
      yield* store.list("");
      failNext = true;
      expect((yield* Effect.flip(store.get("k"))).reason).toBe("Corrupt");
      failNext = false;
      yield* store.get("k");
    }),
  );

  it.effect("corrupt and remove act on the inner store, uninstrumented", () =>
    Effect.gen(function* () {
      const { store, inner, corrupt, remove, counts } = setup();
      const { etag } = yield* inner.put("pack", text("abc"), unconditional);
      yield* corrupt("pack");
      const got = Option.getOrThrow(yield* inner.get("pack"));
      expect(decode(got.body)).toBe("abb");
      expect(got.etag).not.toBe(etag);
      yield* corrupt("pack", (body) => body.subarray(0, 1));
      expect(Option.map(yield* store.get("pack"), (o) => decode(o.body))).toEqual(Option.some("a"));
      yield* inner.put("empty", new Uint8Array(0), unconditional);
      yield* corrupt("empty");
      expect(Option.map(yield* inner.head("empty"), (i) => i.size)).toEqual(Option.some(1));
      expect((yield* Effect.flip(corrupt("missing"))).reason).toBe("NotFound");
      yield* remove("pack");
      expect(Option.isNone(yield* inner.get("pack"))).toBe(true);
      expect(yield* counts).toEqual({ get: 1, head: 0, put: 0, delete: 0, list: 0 });
    }),
  );

  it.effect("the layer wraps the provided store and exposes the controls", () =>
    Effect.gen(function* () {
      const store = yield* ObjectStore;
      const controls = yield* Instrumentation;
      expect(store.identity).toBe("memory:layer-test");
      expect((yield* Effect.flip(store.get("k"))).reason).toBe("Unavailable");
      yield* store.put("k", text("v"), unconditional);
      expect(yield* controls.counts).toMatchObject({ get: 1, put: 1 });
    }).pipe(
      Effect.provide(
        layer({ faults: [{ method: "get", when: "before" }] }).pipe(
          Layer.provide(Memory.layer({ identity: "memory:layer-test" })),
        ),
      ),
    ),
  );
});
