import { describe, expect, it } from "@effect/vitest";
import { Cause, Deferred, Effect, Exit, Fiber, FiberId, Option } from "effect";
import { alongside, forEachPooled } from "../../src/app/usecases/shared/pooled.js";

/** Items that each wait for a turn of the scheduler, recording how many ran at once. */
const tracked = () => {
  const started: number[] = [];
  const fibers = new Set<string>();
  let running = 0;
  let peak = 0;
  const run = (item: number) =>
    Effect.gen(function* () {
      started.push(item);
      fibers.add(FiberId.threadName(yield* Effect.fiberId));
      running++;
      peak = Math.max(peak, running);
      yield* Effect.yieldNow();
      yield* Effect.yieldNow();
      running--;
    });
  return { run, started, fibers, peak: () => peak };
};

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe("forEachPooled", () => {
  it.effect("runs every item once, in order of start", () =>
    Effect.gen(function* () {
      const t = tracked();
      yield* forEachPooled(range(50), t.run, { workers: 4, itemsPerWorker: 3 });
      expect(t.started).toEqual(range(50));
    }),
  );

  it.effect(
    "runs min(workers, ceil(n / itemsPerWorker)) items at once, each worker one fiber",
    () =>
      Effect.gen(function* () {
        for (const [n, shape, expected] of [
          [50, { workers: 4, itemsPerWorker: 3 }, 4],
          [7, { workers: 16, itemsPerWorker: 3 }, 3],
          [3, { workers: Number.POSITIVE_INFINITY, itemsPerWorker: 1 }, 3],
        ] as const) {
          const t = tracked();
          yield* forEachPooled(range(n), t.run, shape);
          expect([n, t.peak(), t.fibers.size]).toEqual([n, expected, expected]);
        }
      }),
  );

  it.effect("runs fewer than itemsPerWorker items in the calling fiber, without forking", () =>
    Effect.gen(function* () {
      const caller = FiberId.threadName(yield* Effect.fiberId);
      for (const [n, itemsPerWorker] of [
        [1, 1],
        [7, 8],
        [8, 8],
      ] as const) {
        const t = tracked();
        yield* forEachPooled(range(n), t.run, { workers: 16, itemsPerWorker });
        expect([n, t.peak(), [...t.fibers]]).toEqual([n, 1, [caller]]);
      }
    }),
  );

  it.effect("does nothing for no items", () =>
    Effect.gen(function* () {
      const t = tracked();
      yield* forEachPooled([], t.run, { workers: 8, itemsPerWorker: 1 });
      expect(t.started).toEqual([]);
    }),
  );

  it.effect("fails with the first failure, interrupts the other workers and starts no more", () =>
    Effect.gen(function* () {
      const started: number[] = [];
      const interrupted: number[] = [];
      const never = yield* Deferred.make<void>();
      const exit = yield* Effect.exit(
        forEachPooled(
          range(20),
          (item) =>
            Effect.sync(() => started.push(item)).pipe(
              Effect.zipRight(
                item === 1
                  ? Effect.fail(`item ${item} failed`)
                  : Deferred.await(never).pipe(
                      Effect.onInterrupt(() => Effect.sync(() => interrupted.push(item))),
                    ),
              ),
            ),
          { workers: 3, itemsPerWorker: 1 },
        ),
      );
      // The cause also records the interrupted workers, as Effect.forEach's does.
      expect(Exit.isFailure(exit) && Cause.failureOption(exit.cause)).toEqual(
        Option.some("item 1 failed"),
      );
      expect(started.sort((a, b) => a - b)).toEqual([0, 1, 2]);
      expect(interrupted.sort((a, b) => a - b)).toEqual([0, 2]);
    }),
  );

  it.effect("in one worker, stops at the first failure", () =>
    Effect.gen(function* () {
      const started: number[] = [];
      const exit = yield* Effect.exit(
        forEachPooled(
          range(10),
          (item) =>
            Effect.sync(() => started.push(item)).pipe(
              Effect.zipRight(item === 4 ? Effect.fail("boom") : Effect.void),
            ),
          { workers: 8, itemsPerWorker: 100 },
        ),
      );
      expect(exit).toEqual(Exit.fail("boom"));
      expect(started).toEqual([0, 1, 2, 3, 4]);
    }),
  );
});

describe("alongside", () => {
  const threadName = Effect.map(Effect.fiberId, FiberId.threadName);
  /** A second effect that signals its start, then runs until interrupted (signalled too). */
  const hangingSecond = Effect.gen(function* () {
    const interrupted = yield* Deferred.make<void>();
    const started = yield* Deferred.make<void>();
    const second = Deferred.succeed(started, undefined).pipe(
      Effect.zipRight(Effect.never),
      Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined)),
    );
    return { second, started, interrupted };
  });

  it.effect(
    "runs both at once and succeeds with both results, the first in the calling fiber",
    () =>
      Effect.gen(function* () {
        const caller = yield* threadName;
        const secondStarted = yield* Deferred.make<void>();
        // The first waits for the second to start: they overlap, or this never ends.
        const first = Deferred.await(secondStarted).pipe(Effect.zipRight(threadName));
        const second = Deferred.succeed(secondStarted, undefined).pipe(Effect.zipRight(threadName));
        const [a, b] = yield* alongside(first, second);
        expect(a).toBe(caller);
        expect(b).not.toBe(caller);
      }),
  );

  it.effect("fails with the first's failure and interrupts the second", () =>
    Effect.gen(function* () {
      const { second, started, interrupted } = yield* hangingSecond;
      const first = Deferred.await(started).pipe(Effect.zipRight(Effect.fail("first failed")));
      const exit = yield* Effect.exit(alongside(first, second));
      expect(exit).toEqual(Exit.fail("first failed"));
      expect(yield* Deferred.isDone(interrupted)).toBe(true);
    }),
  );

  it.effect("reports the second's failure once the first has ended, without cutting it short", () =>
    Effect.gen(function* () {
      const secondFailed = yield* Deferred.make<void>();
      let firstEnded = false;
      const second = Deferred.succeed(secondFailed, undefined).pipe(
        Effect.zipRight(Effect.fail("second failed")),
      );
      const first = Deferred.await(secondFailed).pipe(
        Effect.zipRight(Effect.yieldNow()),
        Effect.zipRight(
          Effect.sync(() => {
            firstEnded = true;
          }),
        ),
      );
      const exit = yield* Effect.exit(alongside(first, second));
      expect(exit).toEqual(Exit.fail("second failed"));
      expect(firstEnded).toBe(true);
    }),
  );

  it.effect("leaves nothing running when the caller is interrupted", () =>
    Effect.gen(function* () {
      const { second, started, interrupted } = yield* hangingSecond;
      const caller = yield* Effect.fork(alongside(Effect.never, second));
      yield* Deferred.await(started);
      yield* Fiber.interrupt(caller);
      yield* Deferred.await(interrupted);
    }),
  );
});
