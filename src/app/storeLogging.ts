/**
 * Debug-level log records of every object-store request (module `store`): the
 * operation, how long it took and its outcome. Keys are never logged (the redactor
 * would scrub them anyway); the condition kind of a write is.
 */
import { Duration, Effect } from "effect";
import { StoreError, type ObjectStoreService } from "../ports/ObjectStore.js";

const logged = <A, E>(
  op: string,
  detail: string,
  request: Effect.Effect<A, E>,
): Effect.Effect<A, E> =>
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
        // A `putAfter` also fails when what it waited for failed (not a store error).
        Effect.annotateLogs({
          op,
          detail,
          outcome: error instanceof StoreError ? error.reason : "not attempted",
        }),
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
  // Forwarded, so the store can stage the write while `after` runs.
  putAfter: (key, body, condition, after) =>
    logged(
      "put",
      `${condition._tag} ${body.length}B after`,
      store.putAfter(key, body, condition, after),
    ),
  delete: (key, options) =>
    logged("delete", options?.forever === true ? "forever" : "", store.delete(key, options)),
  list: (prefix) => logged("list", "", store.list(prefix)),
});
