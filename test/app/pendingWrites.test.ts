import { describe, expect, it } from "@effect/vitest";
import { Deferred, Effect, Exit, Fiber } from "effect";
import { domainError } from "../../src/domain/errors.js";
import {
  deferUntilAwaited,
  makePendingWrites,
} from "../../src/app/usecases/workingCopy/pendingWrites.js";

const failure = domainError({
  code: "ENGINE_FAILED",
  reason: "LOCAL_IO",
  message: "A local file operation failed while caching a pack.",
});

describe("pending cache writes of one call", () => {
  it.effect("run detached from the fiber that started them; awaitAll waits for each", () =>
    Effect.gen(function* () {
      const pending = makePendingWrites();
      const gate = yield* Deferred.make<void>();
      const done: string[] = [];
      // Started from a fiber that ends at once, as a fetch inside Effect.forEach does.
      const starter = yield* Effect.fork(
        pending.start(
          Deferred.await(gate).pipe(Effect.tap(() => Effect.sync(() => done.push("a")))),
        ),
      );
      yield* Fiber.join(starter);
      yield* pending.start(Effect.sync(() => done.push("b")));
      const waiting = yield* Effect.fork(pending.awaitAll);
      yield* Effect.yieldNow();
      expect(waiting.unsafePoll()).toBeNull();
      yield* Deferred.succeed(gate, undefined);
      yield* Fiber.join(waiting);
      expect([...done].sort()).toEqual(["a", "b"]);
      yield* pending.awaitAll; // nothing left: returns at once
    }),
  );

  it.effect(
    "report a failed write to every later awaitAll, so nothing durable names its pack",
    () =>
      Effect.gen(function* () {
        const pending = makePendingWrites();
        yield* pending.start(Effect.fail(failure));
        yield* pending.start(Effect.void);
        for (let i = 0; i < 2; i++) {
          const exit = yield* Effect.exit(pending.awaitAll);
          expect(Exit.isFailure(exit) && JSON.stringify(exit.cause)).toContain("LOCAL_IO");
        }
      }),
  );

  it.effect("keep a write started during a wait for the next wait", () =>
    Effect.gen(function* () {
      const pending = makePendingWrites();
      const first = yield* Deferred.make<void>();
      const second = yield* Deferred.make<void>();
      yield* pending.start(Deferred.await(first));
      const waiting = yield* Effect.fork(pending.awaitAll);
      yield* Effect.yieldNow();
      yield* pending.start(Deferred.await(second));
      yield* Deferred.succeed(first, undefined);
      yield* Fiber.join(waiting);
      const next = yield* Effect.fork(pending.awaitAll);
      yield* Effect.yieldNow();
      expect(next.unsafePoll()).toBeNull();
      yield* Deferred.succeed(second, undefined);
      yield* Fiber.join(next);
    }),
  );

  it.effect("drain waits for every write, failed or not, and never fails", () =>
    Effect.gen(function* () {
      const pending = makePendingWrites();
      const gate = yield* Deferred.make<void>();
      let finished = false;
      yield* pending.start(Effect.fail(failure));
      yield* pending.start(
        Deferred.await(gate).pipe(Effect.tap(() => Effect.sync(() => (finished = true)))),
      );
      const draining = yield* Effect.fork(pending.drain);
      yield* Effect.yieldNow();
      expect(draining.unsafePoll()).toBeNull();
      yield* Deferred.succeed(gate, undefined);
      yield* Fiber.join(draining);
      expect(finished).toBe(true);
    }),
  );

  it.effect("sync a key once after the writes that asked for it, and again for later ones", () =>
    Effect.gen(function* () {
      const pending = makePendingWrites();
      const log: string[] = [];
      const gate = yield* Deferred.make<void>();
      const sync = (key: string) => Effect.sync(() => log.push(`sync ${key}`));
      yield* pending.startThenSync(
        Deferred.await(gate).pipe(Effect.tap(() => Effect.sync(() => log.push("link 1")))),
        "dir",
        sync("dir"),
      );
      yield* pending.startThenSync(
        Effect.sync(() => log.push("link 2")),
        "dir",
        sync("dir"),
      );
      const waiting = yield* Effect.fork(pending.awaitAll);
      yield* Effect.yieldNow();
      // Asked for while the first wait runs: its sync is owed to the next wait.
      yield* pending.startThenSync(
        Effect.sync(() => log.push("link 3")),
        "dir",
        sync("dir"),
      );
      yield* Deferred.succeed(gate, undefined);
      yield* Fiber.join(waiting);
      expect(log.slice(-1)).toEqual(["sync dir"]);
      expect(log.filter((entry) => entry.startsWith("sync"))).toHaveLength(1);
      yield* pending.awaitAll;
      expect(log.filter((entry) => entry.startsWith("sync"))).toHaveLength(2);
      yield* pending.awaitAll; // nothing owed any more
      expect(log.filter((entry) => entry.startsWith("sync"))).toHaveLength(2);
    }),
  );

  it.effect("fail awaitAll when a sync fails, and sync again next time", () =>
    Effect.gen(function* () {
      const pending = makePendingWrites();
      let attempts = 0;
      const sync = Effect.suspend(() => (++attempts === 1 ? Effect.fail(failure) : Effect.void));
      yield* pending.startThenSync(Effect.void, "dir", sync);
      expect(yield* Effect.exit(pending.awaitAll)).toEqual(Exit.fail(failure));
      yield* pending.awaitAll;
      expect(attempts).toBe(2);
    }),
  );

  it.effect("deferred: writes start only when awaited; never-awaited ones never run", () =>
    Effect.gen(function* () {
      const inner = makePendingWrites();
      const pending = deferUntilAwaited(inner);
      const log: string[] = [];
      yield* pending.start(Effect.sync(() => log.push("a")));
      yield* pending.startThenSync(
        Effect.sync(() => log.push("link")),
        "dir",
        Effect.sync(() => log.push("sync")),
      );
      yield* Effect.yieldNow();
      yield* pending.drain;
      expect(log).toEqual([]);
      yield* pending.awaitAll;
      expect([...log].sort()).toEqual(["a", "link", "sync"]);
      const later = deferUntilAwaited(makePendingWrites());
      yield* later.start(Effect.sync(() => log.push("never")));
      yield* later.drain;
      expect(log).not.toContain("never");
    }),
  );
});
