/**
 * Contention for `current` (SPEC §6.2 step 6): the backoff after a lost race, and how
 * long a commit may wait for its place among the process's other commits.
 *
 * Within a process, commits on one store do not race each other at all: they publish
 * in batches, in arrival order (publishBatch.ts). A compare-and-swap race wastes the
 * loser's whole attempt (fetch, merge, pack upload), and the winner is the best placed
 * to win again, so racing copies of one process starved each other (measured: 32
 * writers in one process, several published nothing in 20 s). Races with other
 * processes remain; the compare-and-swap decides them and the backoff spaces retries.
 */
import { Duration, Effect, Random } from "effect";

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
 * How long one commit may spend waiting, in all, for a place in a batch (the attempts
 * themselves and the backoff between them do not count): as long as `retries` lost
 * races could have kept it backing off (about 2.3 s for the default 8). Waiting behind
 * other copies of the process stands for losing races to them, so a commit that gets
 * no place within that time is REMOTE_BUSY, as it would be had it raced and lost:
 * under overload callers get a prompt answer rather than an ever longer queue.
 */
export const placeWaitBudgetMs = (retries: number): number => {
  let total = 0;
  for (let attempt = 0; attempt < retries; attempt++) total += backoffCapMs(attempt);
  return Math.max(total, backoffCapMs(0));
};
