/**
 * Contention for `current` (SPEC §6.2 step 6): the backoff after a lost race, and the
 * publish turns that keep the writers of one process from racing each other at all.
 *
 * Why turns: a compare-and-swap race wastes the loser's whole attempt (fetch, merge,
 * pack upload), and the winner is the best placed to win again — its view of `current`
 * is its own publication, so its next attempt fetches and merges nothing. With many
 * working copies in one process (a library host, a server for several agents) that
 * made a few copies capture `current` while others starved (measured: 32 writers in one
 * process, several published nothing in 20 s). Within a process the race is pointless:
 * attempts on one store take turns in arrival order, so they never lose to each other
 * and none waits behind more than the attempts queued before it. Races with other
 * processes remain, and the compare-and-swap still decides them.
 */
import { Duration, Effect, FiberRef, Option, Random } from "effect";

/** The longest single backoff. */
const maxBackoffMs = 1000;

/** The cap of the backoff before CAS retry `attempt` (0-based). */
const backoffCapMs = (attempt: number): number =>
  Math.min(maxBackoffMs, 10 * 2 ** Math.min(attempt, 10));

/** Full-jitter exponential backoff before CAS retry `attempt` (0-based). */
export const backoff = (attempt: number): Effect.Effect<void> =>
  Random.nextIntBetween(0, backoffCapMs(attempt) + 1).pipe(
    Effect.flatMap((ms) => Effect.sleep(Duration.millis(ms))),
  );

/**
 * How long one commit may spend waiting, in all, for its turns (the attempts themselves
 * and the backoff between them do not count): as long as `retries` lost races
 * could have kept it backing off (about 2.3 s for the default 8). Waiting behind other
 * copies of the process stands for losing races to them, so a commit that cannot get a
 * turn within that time is REMOTE_BUSY, as it would be had it raced and lost: under
 * overload callers get a prompt answer rather than an ever longer queue.
 */
export const turnWaitBudgetMs = (retries: number): number => {
  let total = 0;
  for (let attempt = 0; attempt < retries; attempt++) total += backoffCapMs(attempt);
  return Math.max(total, backoffCapMs(0));
};

/** The last turn queued per store identity, process-wide (every Notebook service shares it). */
const lastTurn = new Map<string, Promise<void>>();

/**
 * Runs `attempt` in its turn among the attempts on the store `storeIdentity` in this
 * process: strictly first come, first served, one at a time. The turn passes on however
 * the attempt ends (success, failure, interruption), and a caller interrupted while it
 * waits passes its turn on as soon as it comes. `None` (the attempt never ran) when the
 * turn did not come within `maxWaitMs`. An attempt made while the fiber already holds
 * the store's turn runs at once.
 */
export const inTurn =
  (storeIdentity: string, maxWaitMs: number) =>
  <A, E, R>(attempt: Effect.Effect<A, E, R>): Effect.Effect<Option.Option<A>, E, R> =>
    FiberRef.get(turnsHeld).pipe(
      Effect.flatMap((held) => {
        // A call made from within a turn (a store wrapper publishing on another copy's
        // behalf, as tests of lost races do) would otherwise wait for its own caller.
        if (held.has(storeIdentity)) return Effect.asSome(attempt);
        const holding = Effect.locally(turnsHeld, new Set([...held, storeIdentity]));
        return Effect.uninterruptibleMask((restore) =>
          restore(waitForTurn(storeIdentity, maxWaitMs)).pipe(
            Effect.flatMap(
              Option.match({
                onNone: () => Effect.succeedNone,
                onSome: (passOn) =>
                  restore(holding(attempt)).pipe(
                    Effect.asSome,
                    Effect.ensuring(Effect.sync(passOn)),
                  ),
              }),
            ),
          ),
        );
      }),
    );

/** The stores whose turn the current fiber (or the fiber that forked it) holds. */
const turnsHeld = FiberRef.unsafeMake<ReadonlySet<string>>(new Set());

/**
 * Queues a turn; succeeds with the function that passes it on once it has come, or with
 * `None` after `maxWaitMs` (wall-clock) without it.
 *
 * One state per waiter decides who passes the turn on, whatever order the turn's
 * arrival, the timer and an interruption happen in: a turn that arrives for an
 * abandoned waiter is passed on at once; a turn granted to a waiter that is then
 * interrupted is passed on by the canceler (passing on twice is harmless). A timeout
 * raced against the wait from outside could lose a turn that arrived in between, and a
 * lost turn would block the store for the rest of the process.
 */
const waitForTurn = (
  storeIdentity: string,
  maxWaitMs: number,
): Effect.Effect<Option.Option<() => void>> =>
  Effect.async<Option.Option<() => void>>((resume) => {
    let passOn: () => void = () => undefined;
    const mine = new Promise<void>((resolve) => {
      passOn = resolve;
    });
    const previous = lastTurn.get(storeIdentity) ?? Promise.resolve();
    lastTurn.set(storeIdentity, mine);
    let state: "waiting" | "granted" | "abandoned" = "waiting";
    const timer = setTimeout(
      () => {
        if (state !== "waiting") return;
        state = "abandoned";
        resume(Effect.succeedNone);
      },
      Math.max(0, maxWaitMs),
    );
    void previous.then(() => {
      clearTimeout(timer);
      if (state === "abandoned") return passOn();
      state = "granted";
      resume(Effect.succeed(Option.some(passOn)));
    });
    return Effect.sync(() => {
      clearTimeout(timer);
      if (state === "granted") passOn();
      else state = "abandoned";
    });
  });
