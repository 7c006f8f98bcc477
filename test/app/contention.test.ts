import { describe, expect, it } from "@effect/vitest";
import { Deferred, Duration, Effect, Exit, Fiber, Option } from "effect";
import { inTurn } from "../../src/app/usecases/contention.js";

describe("publish turns within one process", () => {
  it.effect("run one at a time, first come first served, per store", () =>
    Effect.gen(function* () {
      const log: string[] = [];
      const gate = yield* Deferred.make<void>();
      const firstStarted = yield* Deferred.make<void>();
      const step = (name: string) =>
        inTurn(
          "store-a",
          60_000,
        )(
          Effect.gen(function* () {
            log.push(`${name} start`);
            if (name === "first") {
              yield* Deferred.succeed(firstStarted, undefined);
              yield* Deferred.await(gate);
            }
            yield* Effect.yieldNow();
            log.push(`${name} end`);
          }),
        );
      const first = yield* Effect.fork(step("first"));
      yield* Deferred.await(firstStarted);
      const second = yield* Effect.fork(step("second"));
      yield* Effect.yieldNow();
      const third = yield* Effect.fork(step("third"));
      yield* Effect.yieldNow();
      // Another store's turns are independent: this one runs while "first" holds store-a.
      yield* inTurn("store-b", 60_000)(Effect.sync(() => log.push("other store")));
      expect(log).toEqual(["first start", "other store"]);
      yield* Deferred.succeed(gate, undefined);
      yield* Fiber.join(first);
      yield* Fiber.join(second);
      yield* Fiber.join(third);
      expect(log).toEqual([
        "first start",
        "other store",
        "first end",
        "second start",
        "second end",
        "third start",
        "third end",
      ]);
    }),
  );

  it.effect("pass on after a failure, and when a waiter is interrupted", () =>
    Effect.gen(function* () {
      const gate = yield* Deferred.make<void>();
      const holder = yield* Effect.fork(inTurn("store-c", 60_000)(Deferred.await(gate)));
      yield* Effect.yieldNow();
      const waiter = yield* Effect.fork(inTurn("store-c", 60_000)(Effect.succeed("never mind")));
      yield* Effect.yieldNow();
      yield* Fiber.interrupt(waiter);
      const failing = yield* Effect.fork(inTurn("store-c", 60_000)(Effect.fail("boom")));
      yield* Deferred.succeed(gate, undefined);
      yield* Fiber.join(holder);
      const failed = yield* Fiber.await(failing);
      expect(Exit.isFailure(failed)).toBe(true);
      // Nobody holds store-c now: a new turn starts at once.
      expect(yield* inTurn("store-c", 60_000)(Effect.succeed("free"))).toEqual(Option.some("free"));
    }),
  );

  it.effect("let a call made from within a turn run at once instead of waiting for itself", () =>
    Effect.gen(function* () {
      const inner = inTurn("store-d", 60_000)(Effect.succeed("inner"));
      const outer = inTurn("store-d", 60_000)(inner);
      expect(yield* outer).toEqual(Option.some(Option.some("inner")));
    }),
  );

  it.live("give up (None, the attempt never runs) when the turn does not come in time", () =>
    Effect.gen(function* () {
      const gate = yield* Deferred.make<void>();
      const holder = yield* Effect.fork(inTurn("store-e", 60_000)(Deferred.await(gate)));
      yield* Effect.yieldNow();
      let ran = false;
      const late = yield* inTurn("store-e", 30)(Effect.sync(() => (ran = true)));
      expect(late).toEqual(Option.none());
      yield* Deferred.succeed(gate, undefined);
      yield* Fiber.join(holder);
      expect(ran).toBe(false);
      // The abandoned place in the queue was passed on.
      expect(yield* inTurn("store-e", 60_000)(Effect.succeed(1))).toEqual(Option.some(1));
    }),
  );

  it.live("never lose a turn when timeouts, hand-overs and interruptions coincide", () =>
    Effect.gen(function* () {
      for (let round = 0; round < 150; round++) {
        const holdMs = round % 4;
        const holder = yield* Effect.fork(
          inTurn("store-f", 60_000)(Effect.sleep(Duration.millis(holdMs))),
        );
        const waiter = yield* Effect.fork(inTurn("store-f", (round * 7) % 4)(Effect.void));
        const interrupted = yield* Effect.fork(inTurn("store-f", 60_000)(Effect.void));
        if (round % 3 === 0) yield* Fiber.interrupt(interrupted);
        yield* Fiber.await(holder);
        yield* Fiber.await(waiter);
        yield* Fiber.await(interrupted);
      }
      // Had any of those lost the turn, nobody would get one again.
      expect(yield* inTurn("store-f", 2_000)(Effect.succeed("still free"))).toEqual(
        Option.some("still free"),
      );
    }),
  );
});
