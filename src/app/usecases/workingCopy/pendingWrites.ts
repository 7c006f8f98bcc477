/**
 * Durable writes of downloaded packs into the object cache, still in flight during one
 * call.
 *
 * Why: a downloaded pack is verified and held in memory, so nothing in the call needs
 * its cache file until a durable record — the rewrite intent or the baseline — names
 * it. Writing it (temp file, fsync, rename, directory fsync) before the call may go on
 * put two fsync rounds per fetch into the window between reading `current` and writing
 * it, which bounds commit throughput under contention; a cold pull waited for 40 MB to
 * reach the disk before writing any note. So the writes start at once and run
 * alongside; every durable record that names cached packs is written only after they
 * all are durable, and the call releases its working copy only after they have ended:
 * what the private state promises is the same as before.
 */
import { Effect, Fiber } from "effect";
import type { DomainError } from "../../../domain/errors.js";
import { forEachPooled } from "../shared/pooled.js";

/** The in-flight cache writes of one call. */
export interface PendingWrites {
  /** Starts `write` now, detached from the calling fiber (it completes even if that ends). */
  readonly start: (write: Effect.Effect<void, DomainError>) => Effect.Effect<void>;
  /**
   * Starts `write` like {@link start}, for a write that is durable only once `sync` has
   * run after it (a hard link, whose directory must then be synced): the next
   * {@link awaitAll} runs the `sync` of each `syncKey` once, after every write it waits
   * for, however many writes share the key.
   */
  readonly startThenSync: (
    write: Effect.Effect<void, DomainError>,
    syncKey: string,
    sync: Effect.Effect<void, DomainError>,
  ) => Effect.Effect<void>;
  /**
   * Waits for every write started so far, and their syncs; fails with the first failure
   * among them (the durable record that needed them must then not be written).
   */
  readonly awaitAll: Effect.Effect<void, DomainError>;
  /**
   * Waits until every write started so far has ended, however: run before the call
   * releases its working copy, so no write of one call outlives its lock.
   */
  readonly drain: Effect.Effect<void>;
}

/** No writes in flight yet. */
export const makePendingWrites = (): PendingWrites => {
  const inFlight: Array<Fiber.RuntimeFiber<void, DomainError>> = [];
  // Per key: the sync still owed, and how many writes have asked for it (so a sync run
  // for some writes does not discharge one asked for by a write started meanwhile).
  const syncs = new Map<string, { sync: Effect.Effect<void, DomainError>; asked: number }>();
  const start = (write: Effect.Effect<void, DomainError>) =>
    Effect.forkDaemon(write).pipe(
      Effect.map((fiber) => {
        inFlight.push(fiber);
      }),
    );
  return {
    start,
    startThenSync: (write, syncKey, sync) =>
      Effect.suspend(() => {
        syncs.set(syncKey, { sync, asked: (syncs.get(syncKey)?.asked ?? 0) + 1 });
        return start(write);
      }),
    awaitAll: Effect.suspend(() => {
      const joining = [...inFlight];
      const owed = [...syncs];
      return Effect.forEach(joining, (fiber) => Fiber.join(fiber), { discard: true }).pipe(
        // Joined writes stay listed until all succeeded, so a failure is reported again;
        // writes started meanwhile (appended after them) stay listed for the next wait.
        Effect.tap(() => Effect.sync(() => inFlight.splice(0, joining.length))),
        Effect.zipRight(
          forEachPooled(
            owed,
            ([key, { sync, asked }]) =>
              sync.pipe(
                Effect.tap(() =>
                  Effect.sync(() => {
                    if (syncs.get(key)?.asked === asked) syncs.delete(key);
                  }),
                ),
              ),
            { workers: Number.POSITIVE_INFINITY, itemsPerWorker: 1 },
          ),
        ),
      );
    }),
    drain: Effect.suspend(() =>
      Effect.forEach([...inFlight], (fiber) => Fiber.await(fiber), { discard: true }),
    ),
  };
};

/**
 * A view of `inner` whose writes start only when a durable record is about to need
 * them (the next `awaitAll`), not at once. For a pull: its writes of the working copy
 * then run with no fsync of a 40 MB pack alongside, which keeps their synchronous fast
 * path (the node adapter leaves it while an fsync is in flight, see fsCallbacks.ts) —
 * measured: a cold pull of 10,000 notes ~1.1 s instead of ~2.5 s. Writes never awaited
 * are never made; nothing durable named them. A commit keeps starting its writes at
 * once: they overlap its merge and upload.
 */
export const deferUntilAwaited = (inner: PendingWrites): PendingWrites => {
  const queued: Array<Effect.Effect<void>> = [];
  const startQueued = Effect.suspend(() =>
    Effect.forEach(queued.splice(0), (start) => start, { discard: true }),
  );
  return {
    start: (write) => Effect.sync(() => void queued.push(inner.start(write))),
    startThenSync: (write, syncKey, sync) =>
      Effect.sync(() => void queued.push(inner.startThenSync(write, syncKey, sync))),
    awaitAll: Effect.zipRight(startQueued, inner.awaitAll),
    drain: inner.drain,
  };
};
