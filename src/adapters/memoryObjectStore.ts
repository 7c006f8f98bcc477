/**
 * The in-memory object store: a process-local map with the real conditional-write
 * semantics of the port. It backs the `memory:` store selection and every test that
 * does not need a real store.
 */
import { randomUUID } from "node:crypto";
import { Effect, Layer, Option } from "effect";
import {
  ObjectStore,
  putAfterInSequence,
  StoreError,
  type ObjectInfo,
  type ObjectMetadata,
  type ObjectStoreService,
  type PutCondition,
  type StoredObject,
} from "../ports/ObjectStore.js";
import { compareKeys } from "./keyOrder.js";

/** Configuration of the in-memory store. */
export interface MemoryObjectStoreConfig {
  /** The store's identity; defaults to `memory:<random uuid>`, unique per store. */
  readonly identity?: string;
}

interface Entry {
  readonly body: Uint8Array;
  readonly etag: string;
}

const preconditionFailed = (message: string): StoreError =>
  new StoreError({ reason: "PreconditionFailed", message });

/**
 * Builds a fresh, empty in-memory store. Every operation is atomic (it runs without
 * yielding), bodies are copied on the way in and out (no aliasing), and every write
 * gets an ETag never used before by this store, so a stale ETag never matches again —
 * even after the key is deleted and recreated with identical bytes. Metadata is
 * accepted and discarded (the port never returns it). Never fails except with
 * `PreconditionFailed` on a lost condition.
 */
export const make = (config: MemoryObjectStoreConfig = {}): ObjectStoreService => {
  const objects = new Map<string, Entry>();
  const identity = config.identity ?? `memory:${randomUUID()}`;
  // A random salt keeps ETags of two memory stores apart, so an ETag leaking from one
  // store into another never matches by accident.
  const salt = randomUUID().slice(0, 8);
  let writes = 0;

  const get = (key: string): Effect.Effect<Option.Option<StoredObject>, StoreError> =>
    Effect.sync(() =>
      Option.fromNullable(objects.get(key)).pipe(
        Option.map((e) => ({ body: e.body.slice(), etag: e.etag })),
      ),
    );

  const head = (key: string): Effect.Effect<Option.Option<ObjectInfo>, StoreError> =>
    Effect.sync(() =>
      Option.fromNullable(objects.get(key)).pipe(
        Option.map((e) => ({ key, size: e.body.length, etag: e.etag })),
      ),
    );

  const put = (
    key: string,
    body: Uint8Array,
    condition: PutCondition,
    _metadata?: ObjectMetadata,
  ): Effect.Effect<{ readonly etag: string }, StoreError> =>
    Effect.suspend(() => {
      const existing = objects.get(key);
      switch (condition._tag) {
        case "IfNoneMatch":
          if (existing !== undefined) return Effect.fail(preconditionFailed("the key exists"));
          break;
        case "IfMatch":
          if (existing === undefined) return Effect.fail(preconditionFailed("the key is absent"));
          if (existing.etag !== condition.etag)
            return Effect.fail(preconditionFailed("the ETag does not match"));
          break;
        case "Unconditional":
          break;
      }
      writes += 1;
      const etag = `m${salt}-${writes}`;
      objects.set(key, { body: body.slice(), etag });
      return Effect.succeed({ etag });
    });

  const del = (key: string): Effect.Effect<void, StoreError> =>
    Effect.sync(() => {
      objects.delete(key);
    });

  const list = (prefix: string): Effect.Effect<ReadonlyArray<ObjectInfo>, StoreError> =>
    Effect.sync(() =>
      [...objects.entries()]
        .filter(([key]) => key.startsWith(prefix))
        .map(([key, e]) => ({ key, size: e.body.length, etag: e.etag }))
        .sort((a, b) => compareKeys(a.key, b.key)),
    );

  // Nothing to stage: the request itself is the write.
  const putAfter = putAfterInSequence(put);

  return { identity, get, head, put, putAfter, delete: del, list };
};

/** A layer providing a fresh, empty in-memory {@link ObjectStore} each time it is built. */
export const layer = (config: MemoryObjectStoreConfig = {}): Layer.Layer<ObjectStore> =>
  Layer.effect(
    ObjectStore,
    Effect.sync(() => make(config)),
  );
