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
import { domainError, type DomainError } from "../../../domain/errors.js";

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
 * under overload callers get a prompt answer rather than an ever longer queue. Counted
 * while the process runs: time it stood still (SIGSTOP) does not count (publishBatch.ts).
 */
export const placeWaitBudgetMs = (retries: number): number => {
  let total = 0;
  for (let attempt = 0; attempt < retries; attempt++) total += backoffCapMs(attempt);
  return Math.max(total, backoffCapMs(0));
};

/** Why a commit's last attempt did not publish, when its retries ran out. */
export type Setback =
  /** Another publication (another process's) replaced `current` first. */
  | "lost"
  /** Its batch was abandoned because another member's upload failed. */
  | "aborted"
  /** No place in a batch came within {@link placeWaitBudgetMs}. */
  | "noPlace";

const setbackMessages: Record<Setback, string> = {
  lost: "Other participants kept publishing first; nothing was published. Call notes_commit again later.",
  aborted:
    "The batches this commit joined were abandoned because another working copy's upload to the store failed; nothing was published. Call notes_commit again later; if it keeps happening, check the store and the server's log.",
  noPlace:
    "This process was busy publishing other working copies' commits and this one got no place within its retry budget; nothing was published. Call notes_commit again later.",
};

/**
 * REMOTE_BUSY/CAS_RETRIES_EXHAUSTED for a commit whose retries ran out, with a message
 * saying which `setback` ended its last attempt (the action is the same: call again).
 */
export const busyError = (setback: Setback): DomainError =>
  domainError({
    code: "REMOTE_BUSY",
    reason: "CAS_RETRIES_EXHAUSTED",
    message: setbackMessages[setback],
  });
