import { describe, expect, it } from "@effect/vitest";
import { Deferred, Effect, Exit, Fiber } from "effect";
import { inTurn } from "../../src/app/usecases/contention.js";

describe("publish turns within one process", () => {
  it.effect("run one at a time, first come first served, per store", () =>
    Effect.gen(function* () {
      const log: string[] = [];
      const gate = yield* Deferred.make<void>();
      const step = (name: string, wait?: Deferred.Deferred<void>) =>
        inTurn("store-a")(
          Effect.gen(function* () {
            log.push(`${name} start`);
            if (wait !== undefined) yield* Deferred.await(wait);
            yield* Effect.yieldNow();
            log.push(`${name} end`);
          }),
        );
      const first = yield* Effect.fork(step("first", gate));
      yield* Effect.yieldNow();
      const others = yield* Effect.fork(
        Effect.all([step("second"), step("third")], { concurrency: "unbounded" }),
      );
      // Another store's turns are independent: this one runs while "first" holds store-a.
      yield* inTurn("store-b")(Effect.sync(() => log.push("other store")));
      yield* Effect.yieldNow();
      expect(log).toEqual(["first start", "other store"]);
      yield* Deferred.succeed(gate, undefined);
      yield* Fiber.join(first);
      yield* Fiber.join(others);
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
      const holder = yield* Effect.fork(inTurn("store-c")(Deferred.await(gate)));
      yield* Effect.yieldNow();
      const waiter = yield* Effect.fork(inTurn("store-c")(Effect.succeed("never mind")));
      yield* Effect.yieldNow();
      yield* Fiber.interrupt(waiter);
      const failing = yield* Effect.fork(inTurn("store-c")(Effect.fail("boom")));
      yield* Deferred.succeed(gate, undefined);
      yield* Fiber.join(holder);
      const failed = yield* Fiber.await(failing);
      expect(Exit.isFailure(failed)).toBe(true);
      // Nobody holds store-c now: a new turn starts at once.
      expect(yield* inTurn("store-c")(Effect.succeed("free"))).toBe("free");
    }),
  );

  it.effect("let a call made from within a turn run at once instead of waiting for itself", () =>
    Effect.gen(function* () {
      const nested = inTurn("store-d")(
        inTurn("store-d")(Effect.succeed("inner")).pipe(Effect.map((inner) => `outer+${inner}`)),
      );
      expect(yield* nested).toBe("outer+inner");
    }),
  );
});
