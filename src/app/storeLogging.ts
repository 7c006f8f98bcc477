/**
 * Debug-level log records of every object-store request (module `store`): the
 * operation, how long it took and its outcome. Keys are never logged (the redactor
 * would scrub them anyway); the condition kind of a write is.
 */
import { Duration, Effect } from "effect";
import type { ObjectStoreService, StoreError } from "../ports/ObjectStore.js";

const logged = <A>(
  op: string,
  detail: string,
  request: Effect.Effect<A, StoreError>,
): Effect.Effect<A, StoreError> =>
  Effect.timed(request).pipe(
    Effect.tap(([elapsed]) =>
      Effect.logDebug("store request").pipe(
        Effect.annotateLogs({
          op,
          detail,
          outcome: "ok",
          durationMs: Math.round(Duration.toMillis(elapsed)),
        }),
      ),
    ),
    Effect.map(([, value]) => value),
    Effect.tapError((error) =>
      Effect.logDebug("store request failed").pipe(
        Effect.annotateLogs({ op, detail, outcome: error.reason }),
      ),
    ),
    Effect.annotateLogs("module", "store"),
  );

/** Wraps a store so each request leaves one debug record; behaviour is unchanged. */
export const withStoreLogging = (store: ObjectStoreService): ObjectStoreService => ({
  identity: store.identity,
  get: (key) => logged("get", "", store.get(key)),
  head: (key) => logged("head", "", store.head(key)),
  put: (key, body, condition, metadata) =>
    logged("put", `${condition._tag} ${body.length}B`, store.put(key, body, condition, metadata)),
  delete: (key, options) =>
    logged("delete", options?.forever === true ? "forever" : "", store.delete(key, options)),
  list: (prefix) => logged("list", "", store.list(prefix)),
});
