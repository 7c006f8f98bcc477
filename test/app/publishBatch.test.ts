import { describe, expect, it } from "@effect/vitest";
import { Cause, Deferred, Duration, Effect, Exit, Fiber, Option } from "effect";
import { domainError, type DomainError } from "../../src/domain/errors.js";
import type { Manifest } from "../../src/domain/manifest.js";
import {
  inBatch,
  type BatchStart,
  type Prepared,
  type Swap,
  type Swapped,
} from "../../src/app/usecases/commit/publishBatch.js";

/** A manifest standing for "what `current` would be": only its identity matters here. */
const manifest = (generation: number, head: string): Manifest => ({
  version: 1,
  generation,
  head,
  checkpoint: {
    key: `c/${head}`,
    generation: 0,
    size: 1,
    sha256: "0".repeat(64),
    publicationId: head,
  },
  increments: [],
  retained: [],
});

const base = manifest(10, "base");

/** Records the swaps made, answering each with `answer`. */
const swaps = (answer: "accept" | "lose" = "accept") => {
  const made: Array<{ next: Manifest; etag: Option.Option<string> }> = [];
  const swap: Swap = (next, from, after) =>
    after.pipe(
      Effect.map((): Swapped => {
        made.push({ next, etag: from.etag });
        return answer === "accept"
          ? { _tag: "Accepted", etag: Option.some(`etag-${next.head}`) }
          : { _tag: "Lost" };
      }),
    );
  return { made, swap };
};

/**
 * A member that publishes `head` on whatever it is given (its own start reads `base`
 * with ETag "e0"); `starts` records its start. With `gate`, its upload waits for it
 * (its batch is sealed meanwhile: later members queue for the next one); with
 * `preparing`, its preparation does (later members join its batch).
 */
const publisher = (
  store: string,
  head: string,
  starts: Array<[string, BatchStart]>,
  swap: Swap,
  options: {
    readonly gate?: Deferred.Deferred<void>;
    readonly preparing?: Deferred.Deferred<void>;
    readonly upload?: Effect.Effect<void, DomainError>;
    readonly ownRead?: boolean;
    readonly fromWritten?: boolean;
  } = {},
) =>
  inBatch(
    store,
    60_000,
    options.ownRead ?? false,
  )((start) =>
    Effect.gen(function* () {
      starts.push([head, start]);
      if (options.preparing !== undefined) yield* Deferred.await(options.preparing);
      const from = start._tag === "Tip" ? start.manifest : base;
      const prepared: Prepared<string> = {
        _tag: "Publish",
        from: {
          manifest: Option.some(from),
          etag: Option.some(start._tag === "Tip" ? start.etag : "e0"),
          fromWritten: options.fromWritten ?? false,
        },
        next: manifest(from.generation + 1, head),
        upload: Effect.zipRight(
          options.gate === undefined ? Effect.void : Deferred.await(options.gate),
          options.upload ?? Effect.void,
        ),
        member: { pack: new Uint8Array(), ticket: "t" },
        swap,
      };
      return prepared;
    }),
  );

/** A member that concludes `conclusion` without publishing. */
const concluder = (store: string, conclusion: string, starts: Array<[string, BatchStart]>) =>
  inBatch(
    store,
    60_000,
    false,
  )((start) =>
    Effect.sync((): Prepared<string> => {
      starts.push([conclusion, start]);
      return { _tag: "Concluded", conclusion };
    }),
  );

const concluded = (conclusion: string): Prepared<string> => ({ _tag: "Concluded", conclusion });

const tagsOf = (starts: Array<[string, BatchStart]>) =>
  starts.map(([name, start]) => [name, start._tag === "Tip" ? start.manifest.head : "own"]);

describe("group commit (publish batches within one process)", () => {
  it.effect(
    "members prepare in arrival order, each on the tip before it; one swap publishes all",
    () =>
      Effect.gen(function* () {
        const starts: Array<[string, BatchStart]> = [];
        const { made, swap } = swaps();
        const gate = yield* Deferred.make<void>();
        // "a" holds a batch of its own while b, c and d queue behind it.
        const a = yield* Effect.fork(publisher("s1", "a", starts, swap, { gate }));
        yield* Effect.yieldNow();
        const b = yield* Effect.fork(publisher("s1", "b", starts, swap));
        const c = yield* Effect.fork(concluder("s1", "c", starts));
        const d = yield* Effect.fork(publisher("s1", "d", starts, swap));
        yield* Effect.yieldNow();
        expect(tagsOf(starts)).toEqual([["a", "own"]]);
        yield* Deferred.succeed(gate, undefined);
        const took = yield* Effect.all([a, b, c, d].map(Fiber.join));
        // a alone, then b, c, d together: c concluded on b's tip, d publishes on b's too.
        expect(tagsOf(starts)).toEqual([
          ["a", "own"],
          ["b", "own"],
          ["c", "b"],
          ["d", "b"],
        ]);
        expect(made.map((m) => [m.next.head, m.next.generation, Option.getOrNull(m.etag)])).toEqual(
          [
            ["a", 11, "e0"],
            ["d", 12, "e0"],
          ],
        );
        expect(took.map((t) => Option.getOrThrow(t)._tag)).toEqual([
          "Accepted",
          "Accepted",
          "Concluded",
          "Accepted",
        ]);
        const bTook = Option.getOrThrow(took[1] ?? Option.none());
        expect(bTook._tag === "Accepted" && bTook.manifest.head).toBe("d");
      }),
  );

  it.effect("members arriving while one prepares join its batch", () =>
    Effect.gen(function* () {
      const starts: Array<[string, BatchStart]> = [];
      const { made, swap } = swaps();
      const preparing = yield* Deferred.make<void>();
      const a = yield* Effect.fork(publisher("s9", "a", starts, swap, { preparing }));
      yield* Effect.yieldNow();
      const b = yield* Effect.fork(publisher("s9", "b", starts, swap));
      yield* Effect.yieldNow();
      yield* Deferred.succeed(preparing, undefined);
      const took = yield* Effect.all([a, b].map(Fiber.join));
      expect(tagsOf(starts)).toEqual([
        ["a", "own"],
        ["b", "a"],
      ]);
      expect(made.map((m) => m.next.head)).toEqual(["b"]);
      for (const t of took) {
        const outcome = Option.getOrThrow(t);
        expect(outcome._tag === "Accepted" && outcome.manifest.head).toBe("b");
      }
    }),
  );

  it.effect("a member asking for its own read starts the next batch instead of joining", () =>
    Effect.gen(function* () {
      const starts: Array<[string, BatchStart]> = [];
      const { made, swap } = swaps();
      const gate = yield* Deferred.make<void>();
      const a = yield* Effect.fork(publisher("s2", "a", starts, swap, { gate }));
      yield* Effect.yieldNow();
      const b = yield* Effect.fork(publisher("s2", "b", starts, swap));
      const c = yield* Effect.fork(publisher("s2", "c", starts, swap, { ownRead: true }));
      const d = yield* Effect.fork(publisher("s2", "d", starts, swap));
      yield* Effect.yieldNow();
      yield* Deferred.succeed(gate, undefined);
      yield* Effect.all([a, b, c, d].map(Fiber.join));
      expect(tagsOf(starts)).toEqual([
        ["a", "own"],
        ["b", "own"],
        ["c", "own"],
        ["d", "c"],
      ]);
      expect(made.map((m) => m.next.head)).toEqual(["a", "b", "d"]);
    }),
  );

  it.effect("an upload failure fails its member; the others learn nothing was published", () =>
    Effect.gen(function* () {
      const starts: Array<[string, BatchStart]> = [];
      const { made, swap } = swaps();
      const gate = yield* Deferred.make<void>();
      const failure = domainError({
        code: "STORAGE_FAILURE",
        reason: "STORE_UNAVAILABLE",
        message: "injected",
      });
      const a = yield* Effect.fork(publisher("s3", "a", starts, swap, { gate }));
      yield* Effect.yieldNow();
      const b = yield* Effect.fork(publisher("s3", "b", starts, swap));
      const c = yield* Effect.fork(
        publisher("s3", "c", starts, swap, { upload: Effect.fail(failure) }),
      );
      const d = yield* Effect.fork(publisher("s3", "d", starts, swap));
      yield* Effect.yieldNow();
      yield* Deferred.succeed(gate, undefined);
      yield* Fiber.join(a);
      const bTook = yield* Fiber.join(b);
      const cExit = yield* Fiber.await(c);
      const dTook = yield* Fiber.join(d);
      expect(bTook).toEqual(Option.some({ _tag: "Aborted" }));
      expect(dTook).toEqual(Option.some({ _tag: "Aborted" }));
      expect(cExit).toEqual(Exit.fail(failure));
      expect(made.map((m) => m.next.head)).toEqual(["a"]);
    }),
  );

  it.live("the first publisher's own upload failing aborts the batch: nobody is told unknown", () =>
    Effect.gen(function* () {
      const starts: Array<[string, BatchStart]> = [];
      const made: string[] = [];
      // Stages its write alongside `after`, as the file store does.
      const staging: Swap = (next, _etag, after) =>
        Effect.all([after, Effect.sleep(Duration.millis(1))], { concurrency: 2 }).pipe(
          Effect.map((): Swapped => {
            made.push(next.head);
            return { _tag: "Accepted", etag: Option.some("e1") };
          }),
        );
      const failure = domainError({
        code: "STORAGE_FAILURE",
        reason: "STORE_UNAVAILABLE",
        message: "injected",
      });
      const preparing = yield* Deferred.make<void>();
      const a = yield* Effect.fork(
        publisher("s11", "a", starts, staging, {
          preparing,
          upload: Effect.zipRight(Effect.sleep(Duration.millis(5)), Effect.fail(failure)),
        }),
      );
      yield* Effect.yieldNow();
      const b = yield* Effect.fork(publisher("s11", "b", starts, staging));
      yield* Effect.yieldNow();
      yield* Deferred.succeed(preparing, undefined);
      expect(yield* Fiber.await(a)).toEqual(Exit.fail(failure));
      expect(yield* Fiber.join(b)).toEqual(Option.some({ _tag: "Aborted" }));
      expect(made).toEqual([]);
    }),
  );

  it.effect("a lost swap is lost for every member, and says where the batch started from", () =>
    Effect.gen(function* () {
      const starts: Array<[string, BatchStart]> = [];
      const { swap } = swaps("lose");
      const gate = yield* Deferred.make<void>();
      const a = yield* Effect.fork(publisher("s4", "a", starts, swap, { gate }));
      yield* Effect.yieldNow();
      const b = yield* Effect.fork(publisher("s4", "b", starts, swap, { fromWritten: true }));
      const c = yield* Effect.fork(publisher("s4", "c", starts, swap));
      yield* Effect.yieldNow();
      yield* Deferred.succeed(gate, undefined);
      const took = yield* Effect.all([a, b, c].map(Fiber.join));
      expect(took).toEqual([
        Option.some({ _tag: "Lost", fromWritten: false }),
        Option.some({ _tag: "Lost", fromWritten: true }),
        Option.some({ _tag: "Lost", fromWritten: true }),
      ]);
    }),
  );

  it.effect("a member on the tip that publishes on anything else is left out of the batch", () =>
    Effect.gen(function* () {
      const { made, swap } = swaps();
      const gate = yield* Deferred.make<void>();
      const starts: Array<[string, BatchStart]> = [];
      const a = yield* Effect.fork(publisher("s5", "a", starts, swap, { gate }));
      yield* Effect.yieldNow();
      const b = yield* Effect.fork(publisher("s5", "b", starts, swap));
      const stray = yield* Effect.fork(
        inBatch(
          "s5",
          60_000,
          false,
        )(() =>
          Effect.succeed<Prepared<string>>({
            _tag: "Publish",
            from: { manifest: Option.some(base), etag: Option.some("e0"), fromWritten: false },
            next: manifest(11, "stray"),
            upload: Effect.void,
            member: { pack: new Uint8Array(), ticket: "t" },
            swap,
          }),
        ),
      );
      yield* Effect.yieldNow();
      yield* Deferred.succeed(gate, undefined);
      yield* Effect.all([a, b].map(Fiber.join));
      expect(yield* Fiber.join(stray)).toEqual(Option.some({ _tag: "Aborted" }));
      expect(made.map((m) => m.next.head)).toEqual(["a", "b"]);
    }),
  );

  it.effect("a swap interrupted midway leaves the other members failing as unknown", () =>
    Effect.gen(function* () {
      const starts: Array<[string, BatchStart]> = [];
      const swapping = yield* Deferred.make<void>();
      const hanging: Swap = (_next, _etag, after) =>
        after.pipe(
          Effect.zipRight(Deferred.succeed(swapping, undefined)),
          Effect.zipRight(Effect.never),
        );
      const preparing = yield* Deferred.make<void>();
      const a = yield* Effect.fork(publisher("s10", "a", starts, hanging, { preparing }));
      yield* Effect.yieldNow();
      const b = yield* Effect.fork(publisher("s10", "b", starts, hanging));
      yield* Effect.yieldNow();
      yield* Deferred.succeed(preparing, undefined);
      yield* Deferred.await(swapping);
      yield* Fiber.interrupt(a);
      const bExit = yield* Fiber.await(b);
      expect(Exit.isFailure(bExit)).toBe(true);
      if (Exit.isFailure(bExit)) {
        const error = Option.getOrThrow(Cause.failureOption(bExit.cause));
        expect([error.code, error.reason]).toEqual(["STORAGE_FAILURE", "PUBLICATION_UNKNOWN"]);
      }
      // The line goes on.
      expect(yield* concluder("s10", "after", starts)).toEqual(
        Option.some({ _tag: "Concluded", conclusion: "after" }),
      );
    }),
  );

  it.effect(
    "a call made from within a batch is a batch of its own instead of waiting for itself",
    () =>
      Effect.gen(function* () {
        const starts: Array<[string, BatchStart]> = [];
        const { made, swap } = swaps();
        const inner = publisher("s6", "inner", starts, swap);
        const outer = publisher("s6", "outer", starts, swap, { upload: Effect.asVoid(inner) });
        const took = yield* outer;
        expect(Option.getOrThrow(took)._tag).toBe("Accepted");
        expect(made.map((m) => m.next.head)).toEqual(["inner", "outer"]);
      }),
  );

  it.live("give up (None, nothing runs) when no place comes in time; the line goes on", () =>
    Effect.gen(function* () {
      const starts: Array<[string, BatchStart]> = [];
      const { swap } = swaps();
      const gate = yield* Deferred.make<void>();
      const holder = yield* Effect.fork(publisher("s7", "a", starts, swap, { gate }));
      yield* Effect.sleep(Duration.millis(5));
      let ran = false;
      const late = yield* inBatch(
        "s7",
        30,
        false,
      )(() =>
        Effect.sync(() => {
          ran = true;
          return concluded("x");
        }),
      );
      expect(late).toEqual(Option.none());
      yield* Deferred.succeed(gate, undefined);
      yield* Fiber.join(holder);
      expect(ran).toBe(false);
      const next = yield* concluder("s7", "next", starts);
      expect(next).toEqual(Option.some({ _tag: "Concluded", conclusion: "next" }));
    }),
  );

  it.live("a wait for a place does not count time the process was stopped (SIGSTOP)", () =>
    Effect.gen(function* () {
      const starts: Array<[string, BatchStart]> = [];
      const { swap } = swaps();
      const gate = yield* Deferred.make<void>();
      const holder = yield* Effect.fork(publisher("s9", "a", starts, swap, { gate }));
      yield* Effect.sleep(Duration.millis(5));
      let ran = false;
      const late = yield* Effect.fork(
        inBatch(
          "s9",
          300,
          false,
        )(() =>
          Effect.sync(() => {
            ran = true;
            return concluded("x");
          }),
        ),
      );
      yield* Effect.sleep(Duration.millis(5));
      // The process stands still (as stopped by SIGSTOP, then continued) far longer than
      // the budget: no timer runs meanwhile, and each fires late at once after.
      yield* Effect.sync(() => {
        const until = performance.now() + 2_000;
        while (performance.now() < until);
      });
      // The late timers run first; then the place comes.
      yield* Effect.sleep(Duration.millis(1));
      yield* Deferred.succeed(gate, undefined);
      yield* Fiber.join(holder);
      expect(yield* Fiber.join(late)).toEqual(Option.some({ _tag: "Concluded", conclusion: "x" }));
      expect(ran).toBe(true);
    }),
  );

  it.live("never wedge the line when timeouts, failures and interruptions coincide", () =>
    Effect.gen(function* () {
      const starts: Array<[string, BatchStart]> = [];
      const { swap } = swaps();
      for (let round = 0; round < 120; round++) {
        const slow = Effect.sleep(Duration.millis(round % 3));
        const members = [
          publisher("s8", `a${round}`, starts, swap, { upload: slow }),
          inBatch("s8", (round * 7) % 4, false)(() => Effect.as(slow, concluded("late"))),
          publisher("s8", `b${round}`, starts, swap, {
            upload:
              round % 5 === 0
                ? Effect.fail(
                    domainError({
                      code: "STORAGE_FAILURE",
                      reason: "STORE_UNAVAILABLE",
                      message: "x",
                    }),
                  )
                : slow,
          }),
          publisher("s8", `c${round}`, starts, swap, { upload: slow }),
        ];
        const fibers = yield* Effect.all(members.map((m) => Effect.fork(m)));
        const victim = fibers[round % 4];
        if (round % 3 === 0 && victim !== undefined) yield* Fiber.interrupt(victim);
        yield* Effect.all(fibers.map(Fiber.await));
      }
      // Had any of those left a batch unfinished, nobody would get a place again.
      const last = yield* inBatch(
        "s8",
        2_000,
        false,
      )(() => Effect.succeed<Prepared<string>>({ _tag: "Concluded", conclusion: "still free" }));
      expect(last).toEqual(Option.some({ _tag: "Concluded", conclusion: "still free" }));
    }),
  );
});
