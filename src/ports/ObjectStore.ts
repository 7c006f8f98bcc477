/**
 * The object store port: a flat key space below the store's own prefix, with the
 * conditional writes the publication protocol (SPEC §7) is built on.
 *
 * Keys are relative to the adapter's configured prefix (`current`,
 * `packs/increments/5-<uuid>.pack`, `probe/<uuid>`); adapters add the prefix.
 */
import { Context, Data, Effect, type Option } from "effect";

/**
 * The closed set of reasons a store request can fail with. Adapters map every
 * vendor error (AWS SDK, minio, node errno) into exactly one of these in a single
 * `mapError`.
 *
 * - `PreconditionFailed`: a conditional write lost (`If-None-Match: *` on an existing
 *   key, `If-Match` with a stale ETag or on a missing key). Proven: nothing changed.
 * - `NotFound`: the key (or, for `BucketMissing`, the bucket) does not exist where
 *   existence was required.
 * - `Ambiguous`: the request may or may not have taken effect (timeout or reset after
 *   the request was sent, a dropped response, a write answered without its ETag).
 * - `AccessDenied`: credentials missing or refused.
 * - `BucketMissing`: the configured bucket does not exist.
 * - `Unavailable`: the store could not be reached or failed before acting (proven no effect).
 * - `Throttled`: the store asked us to slow down (no effect).
 * - `Corrupt`: the store answered with something malformed (bad ETag, truncated body).
 * - `TlsFailed`: the TLS handshake with the endpoint failed (an `https://` endpoint on a
 *   plain-HTTP port, an untrusted or mismatched certificate): a configuration error,
 *   and no request was sent (no effect), so retrying cannot help. A TLS failure that
 *   may have ended a connection after a write was sent is `Ambiguous` instead.
 */
export type StoreErrorReason =
  | "PreconditionFailed"
  | "NotFound"
  | "Ambiguous"
  | "AccessDenied"
  | "BucketMissing"
  | "Unavailable"
  | "Throttled"
  | "Corrupt"
  | "TlsFailed";

/** Every reason of {@link StoreErrorReason}, for exhaustive tests and docs. */
export const storeErrorReasons: ReadonlyArray<StoreErrorReason> = [
  "PreconditionFailed",
  "NotFound",
  "Ambiguous",
  "AccessDenied",
  "BucketMissing",
  "Unavailable",
  "Throttled",
  "Corrupt",
  "TlsFailed",
];

/**
 * The only error an ObjectStore method fails with. `message` is already redacted by
 * the adapter: it never carries credentials, endpoints with user-info or full keys.
 */
export class StoreError extends Data.TaggedError("StoreError")<{
  readonly reason: StoreErrorReason;
  readonly message: string;
  /**
   * Set on an `Ambiguous` write that the store answered with success but without the
   * written object's ETag, as opposed to a write whose answer was lost: the startup
   * probe refuses a store that does this for every write, rather than report it as a
   * retryable timeout.
   */
  readonly answeredWithoutEtag?: true;
}> {}

/** The write condition of {@link ObjectStoreService.put}. */
export type PutCondition =
  | { readonly _tag: "Unconditional" }
  /** Create only: fails with `PreconditionFailed` if the key exists. */
  | { readonly _tag: "IfNoneMatch" }
  /** Replace only: fails with `PreconditionFailed` unless the key's current ETag equals `etag`. */
  | { readonly _tag: "IfMatch"; readonly etag: string };

/** How {@link ObjectStoreService.delete} may delete. */
export interface DeleteOptions {
  /** The key is unique and done with: no trace of it needs to stay (see `delete`). */
  readonly forever?: boolean;
}

/** A stored object with its entity tag (opaque, compared only for equality). */
export interface StoredObject {
  readonly body: Uint8Array;
  readonly etag: string;
  /**
   * The file on this host `body` was read from, which a caller may hard-link instead of
   * writing its own copy. Only a store whose objects are local files gives one.
   */
  readonly localFile?: LocalFile;
}

/**
 * A store's file: never changed in place (a new version of a key is a new file), but
 * `path` may be gone by the time it is used, or, once the key is deleted and written
 * again, name another file. So a caller that links `path` must check that its link is
 * the file read — the same inode, size and modification time — and otherwise fall back
 * to the object's `body`.
 */
export interface LocalFile {
  readonly path: string;
  readonly ino: number;
  readonly size: number;
  readonly mtimeMs: number;
}

/** The metadata of a stored object. */
export interface ObjectInfo {
  readonly key: string;
  readonly size: number;
  readonly etag: string;
}

/** Free-form string metadata attached to an upload (size, sha256, kind, generation). */
export type ObjectMetadata = Readonly<Record<string, string>>;

/** The operations of an object store. Every method is safe to call concurrently. */
export interface ObjectStoreService {
  /**
   * A stable, redacted identity of the store and prefix (e.g. `file:/abs/dir`,
   * `s3://bucket/prefix`), used to key private state. Contains no credentials.
   */
  readonly identity: string;
  /** Reads an object; `None` when it does not exist. */
  readonly get: (key: string) => Effect.Effect<Option.Option<StoredObject>, StoreError>;
  /** Reads an object's metadata without its body; `None` when it does not exist. */
  readonly head: (key: string) => Effect.Effect<Option.Option<ObjectInfo>, StoreError>;
  /**
   * Writes an object under `condition` and returns its new ETag. A lost condition is
   * `StoreError{reason: "PreconditionFailed"}` and leaves the object unchanged.
   */
  readonly put: (
    key: string,
    body: Uint8Array,
    condition: PutCondition,
    metadata?: ObjectMetadata,
  ) => Effect.Effect<{ readonly etag: string }, StoreError>;
  /**
   * {@link put} that takes effect only once `after` has succeeded: the condition is
   * checked then, and if `after` fails the put fails with its error and changes
   * nothing. Meanwhile the store may stage the body (the file store writes and syncs its
   * temp file alongside `after`), so a write that must follow another one — `current`
   * after the pack it names — costs less than issuing it afterwards. A store that cannot
   * stage runs `after`, then the put.
   */
  readonly putAfter: <E>(
    key: string,
    body: Uint8Array,
    condition: PutCondition,
    after: Effect.Effect<void, E>,
  ) => Effect.Effect<{ readonly etag: string }, StoreError | E>;
  /**
   * Deletes an object; deleting a missing key succeeds. With `forever`, the caller
   * promises never to make an `IfMatch` write on `key` with an ETag it read before this
   * call (the key names something unique: a pack, a probe), so the store may remove
   * every trace of the key — including what it keeps so that ETags are never reused —
   * instead of leaving a deletion marker behind.
   */
  readonly delete: (key: string, options?: DeleteOptions) => Effect.Effect<void, StoreError>;
  /**
   * Lists the objects whose key starts with `prefix`, in key order. Used only by
   * cleanup and tests, never to decide what is current.
   */
  readonly list: (prefix: string) => Effect.Effect<ReadonlyArray<ObjectInfo>, StoreError>;
}

/**
 * `putAfter` for a store that cannot stage a write (or a wrapper that wants the put to
 * be an ordinary request of its own): `after`, then `put`.
 */
export const putAfterInSequence =
  (put: ObjectStoreService["put"]): ObjectStoreService["putAfter"] =>
  (key, body, condition, after) =>
    Effect.zipRight(after, put(key, body, condition));

/** The ObjectStore port. */
export class ObjectStore extends Context.Tag("quire/ObjectStore")<
  ObjectStore,
  ObjectStoreService
>() {}
