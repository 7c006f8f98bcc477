import { describe, expect, it } from "@effect/vitest";
import { Clock, Effect, TestClock } from "effect";
import { layer, make } from "../../src/adapters/idGenerator.js";
import { IdGenerator } from "../../src/ports/IdGenerator.js";

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The 48-bit millisecond timestamp at the front of a UUIDv7. */
const timestampOf = (id: string): number =>
  Number.parseInt(id.replaceAll("-", "").slice(0, 12), 16);

const isStrictlyIncreasing = (ids: ReadonlyArray<string>): boolean =>
  ids.every((id, index) => index === 0 || (ids[index - 1] ?? "") < id);

/** A clock that reads `times` in order (then the last one forever). */
const scriptedClock = (times: ReadonlyArray<number>): Clock.Clock => {
  let index = 0;
  const next = (): number => times[Math.min(index++, times.length - 1)] ?? 0;
  return {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: next,
    unsafeCurrentTimeNanos: () => BigInt(next()) * 1_000_000n,
    currentTimeMillis: Effect.sync(next),
    currentTimeNanos: Effect.sync(() => BigInt(next()) * 1_000_000n),
    sleep: () => Effect.void,
  };
};

describe("idGenerator", () => {
  it.effect("uuidv7 has the canonical form, version 7 and variant 10", () =>
    Effect.gen(function* () {
      const ids = yield* Effect.replicateEffect(make().uuidv7, 200);
      for (const id of ids) expect(id).toMatch(uuidPattern);
      expect(new Set(ids).size).toBe(200);
    }),
  );

  it.effect("the timestamp comes from the Effect Clock (TestClock)", () =>
    Effect.gen(function* () {
      const generator = yield* IdGenerator;
      expect(timestampOf(yield* generator.uuidv7)).toBe(0);
      const when = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
      yield* TestClock.setTime(when);
      const id = yield* generator.uuidv7;
      expect(timestampOf(id)).toBe(when);
      expect(
        id.startsWith(
          when
            .toString(16)
            .padStart(12, "0")
            .replace(/^(.{8})/, "$1-"),
        ),
      ).toBe(true);
      yield* TestClock.adjust("1 millis");
      expect(timestampOf(yield* generator.uuidv7)).toBe(when + 1);
    }).pipe(Effect.provide(layer)),
  );

  it.effect("ids are strictly increasing within one millisecond", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(1_700_000_000_000);
      const ids = yield* Effect.replicateEffect(make().uuidv7, 5_000);
      expect(isStrictlyIncreasing(ids)).toBe(true);
      expect(new Set(ids.map(timestampOf))).toEqual(new Set([1_700_000_000_000]));
    }),
  );

  it.effect("ids stay increasing when the clock goes backwards, keeping the last timestamp", () =>
    Effect.gen(function* () {
      const generator = make();
      const ids = yield* Effect.replicateEffect(generator.uuidv7, 6).pipe(
        Effect.withClock(scriptedClock([5_000, 5_002, 4_000, 4_000, 5_002, 6_000])),
      );
      expect(isStrictlyIncreasing(ids)).toBe(true);
      expect(ids.map(timestampOf)).toEqual([5_000, 5_002, 5_002, 5_002, 5_002, 6_000]);
    }),
  );

  it.effect("ids from concurrent fibers are unique and each fiber's are increasing", () =>
    Effect.gen(function* () {
      const generator = make();
      const perFiber = yield* Effect.forEach(
        Array.from({ length: 8 }, (_, index) => index),
        () => Effect.replicateEffect(Effect.zipLeft(generator.uuidv7, Effect.yieldNow()), 100),
        { concurrency: "unbounded" },
      );
      expect(new Set(perFiber.flat()).size).toBe(800);
      for (const ids of perFiber) expect(isStrictlyIncreasing(ids)).toBe(true);
    }),
  );

  it.effect("diagnosticId is 16 lowercase hex characters", () =>
    Effect.gen(function* () {
      const ids = yield* Effect.replicateEffect(make().diagnosticId, 100);
      for (const id of ids) expect(id).toMatch(/^[0-9a-f]{16}$/);
      expect(new Set(ids).size).toBe(100);
    }),
  );
});
