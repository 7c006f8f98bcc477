// A wrapping ObjectStoreService that counts requests, optionally adds latency to each,
// and tracks "rounds": a request that starts while no other request of this store is
// in flight opens a new round, so the number of rounds is the number of sequential
// round trips an operation needed (parallel requests share one round).
import { Duration, Effect } from "effect";

const keyClass = (key) =>
  key === "current"
    ? "current"
    : key.startsWith("packs/")
      ? "pack"
      : key.startsWith("probe/")
        ? "probe"
        : "other";

/**
 * Wraps `inner` (an ObjectStoreService). Options: `latencyMs` added before each request
 * is forwarded. Returns `{ store, stats, reset(), snapshot() }`; `stats.currentPutTimes` /
 * `stats.currentPutLost` hold performance.now() stamps of `current` write attempts and
 * of those that lost their condition.
 */
export const instrument = (inner, { latencyMs = 0 } = {}) => {
  const fresh = () => ({
    requests: 0,
    rounds: 0,
    byOp: {},
    msByOp: {},
    currentPuts: 0,
    currentPutsLost: 0,
    currentPutTimes: [],
    currentPutLostTimes: [],
  });
  let stats = fresh();
  let inFlight = 0;
  const delay = latencyMs > 0 ? Effect.sleep(Duration.millis(latencyMs)) : Effect.void;

  /** Counts the start of a request; returns the function that counts its end. */
  const begin = (op, key) => {
    if (inFlight === 0) stats.rounds++;
    inFlight++;
    stats.requests++;
    const name = `${op} ${keyClass(key)}`;
    stats.byOp[name] = (stats.byOp[name] ?? 0) + 1;
    const start = performance.now();
    const counted = stats;
    return () => {
      inFlight--;
      counted.msByOp[name] = (counted.msByOp[name] ?? 0) + performance.now() - start;
    };
  };

  const wrap = (op, key, run) =>
    Effect.suspend(() => {
      const end = begin(op, key);
      return delay.pipe(Effect.zipRight(Effect.suspend(run)), Effect.ensuring(Effect.sync(end)));
    });

  /** Counts a write of `current` and, when it lost its condition, the loss. */
  const trackCurrent = (key, write) => {
    if (key !== "current") return write;
    return Effect.suspend(() => {
      stats.currentPuts++;
      stats.currentPutTimes.push(performance.now());
      return write.pipe(
        Effect.tapError((error) =>
          Effect.sync(() => {
            if (error?.reason === "PreconditionFailed") {
              stats.currentPutsLost++;
              stats.currentPutLostTimes.push(performance.now());
            }
          }),
        ),
      );
    });
  };

  const store = {
    identity: inner.identity,
    get: (key) => wrap("get", key, () => inner.get(key)),
    head: (key) => wrap("head", key, () => inner.head(key)),
    delete: (key, options) => wrap("delete", key, () => inner.delete(key, options)),
    list: (prefix) => wrap("list", prefix, () => inner.list(prefix)),
    put: (key, body, condition, metadata) =>
      wrap("put", key, () => trackCurrent(key, inner.put(key, body, condition, metadata))),
    // The request counts (and its latency is added) from when `after` is done, as the
    // put issued after it that it replaces; the inner store stages the body meanwhile.
    putAfter: (key, body, condition, after) =>
      Effect.suspend(() => {
        let end = () => undefined;
        const gate = after.pipe(
          Effect.zipRight(
            Effect.sync(() => {
              end = begin("put", key);
            }),
          ),
          Effect.zipRight(delay),
        );
        return trackCurrent(key, inner.putAfter(key, body, condition, gate)).pipe(
          Effect.ensuring(Effect.sync(() => end())),
        );
      }),
  };
  return {
    store,
    get stats() {
      return stats;
    },
    reset: () => {
      stats = fresh();
    },
    snapshot: () => ({
      requests: stats.requests,
      rounds: stats.rounds,
      byOp: { ...stats.byOp },
      msByOp: { ...stats.msByOp },
      currentPuts: stats.currentPuts,
      currentPutsLost: stats.currentPutsLost,
    }),
  };
};
