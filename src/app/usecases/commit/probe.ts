/**
 * The startup compatibility probe (SPEC §7): before anything is served, prove on the
 * real store that the conditional writes the publication protocol relies on are
 * honoured. A store that silently ignores `If-None-Match`/`If-Match` would let two
 * writers both "win" a compare-and-swap of `current` and lose publications, so such a
 * store is refused with `INCOMPATIBLE_STORE` instead of being used.
 */
import { Effect, Either, Option } from "effect";
import { domainError, type DomainError, type ReasonOf } from "../../../domain/errors.js";
import { IdGenerator } from "../../../ports/IdGenerator.js";
import {
  ObjectStore,
  type ObjectStoreService,
  type StoreError,
} from "../../../ports/ObjectStore.js";
import { storeFailure } from "../shared/failures.js";

const encoder = new TextEncoder();

/** Distinct bodies per step, so a replacement that did not happen is observable. */
const missingMatchBody = encoder.encode("quire probe 0: If-Match of a missing key must fail\n");
const firstBody = encoder.encode("quire probe 1: conditional create\n");
const secondBody = encoder.encode("quire probe 2: second create must be refused\n");
const wrongMatchBody = encoder.encode("quire probe 3: stale If-Match must be refused\n");
const rightMatchBody = encoder.encode("quire probe 4: right If-Match replaces\n");
const unansweredBody = encoder.encode("quire probe 5: is every write answered without its ETag?\n");

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean =>
  a.length === b.length && a.every((byte, index) => byte === b[index]);

const incompatible = (reason: ReasonOf<"INCOMPATIBLE_STORE">, message: string): DomainError =>
  domainError({ code: "INCOMPATIBLE_STORE", reason, message });

/**
 * Maps a store error met during the probe. Configuration problems get their own
 * reasons; a refused first create of a fresh key means conditional create is broken;
 * a store that could not be set up, answered garbage or could not be asked
 * (unreachable, throttled, ambiguous) is STORAGE_FAILURE: the process must not start
 * either way.
 */
const fromStoreError =
  (identity: string, step: string) =>
  (error: StoreError): DomainError => {
    const prefix = `store ${identity} failed the compatibility probe (${step})`;
    switch (error.reason) {
      case "AccessDenied":
        return incompatible("ACCESS_DENIED", `${prefix}: access denied: ${error.message}`);
      case "BucketMissing":
        return incompatible(
          "BUCKET_MISSING",
          `${prefix}: the bucket does not exist: ${error.message}`,
        );
      case "PreconditionFailed":
        return incompatible(
          "NO_CONDITIONAL_CREATE",
          `${prefix}: a conditional create of a fresh key was refused: ${error.message}`,
        );
      case "Corrupt":
        // A store that cannot even be set up (e.g. a file where its directory should be)
        // or answers garbage: unusable, reported as a storage failure with its cause.
        return domainError({
          code: "STORAGE_FAILURE",
          reason: "STORE_UNAVAILABLE",
          message: `${prefix}: ${error.message}`,
        });
      default:
        // Unreachable, throttled or ambiguous: not a broken promise, a store that could
        // not be asked — reported like any other storage failure.
        return storeFailure(error, `probing the store (${step})`);
    }
  };

/** A 32-hex ETag that is not `etag`, shaped like a real one so stores compare rather than reject it. */
const wrongEtagFor = (etag: string): string => {
  const candidate = "0123456789abcdef0123456789abcdef";
  return etag === candidate ? "fedcba9876543210fedcba9876543210" : candidate;
};

/**
 * Fails with `NO_CONDITIONAL_REPLACE` when the probe's first create, answered with
 * success but without the written object's ETag (`answeredWithoutEtag`), did take effect
 * and a conditional replace of it is answered the same way and takes effect too: a store
 * that answers writes without their ETag. The protocol replaces `current` with the ETag
 * its own write returned, so such a store can never be used; reporting it as a lost
 * response (`TIMEOUT`, retryable) would have the user retry forever. A write whose answer
 * was lost (a timeout, a reset) is not one: a store slower than the request timeout stays
 * a retryable failure. Succeeds otherwise — the create did not land, or the next write
 * was answered properly — and the caller reports the create's own failure; its own store
 * failures are ignored for the same reason.
 */
const refuseUnansweredWrites = (
  store: ObjectStoreService,
  key: string,
): Effect.Effect<void, DomainError> =>
  Effect.gen(function* () {
    const landed = yield* store.get(key);
    if (Option.isNone(landed) || !sameBytes(landed.value.body, firstBody)) return;
    const again = yield* Effect.either(
      store.put(key, unansweredBody, { _tag: "IfMatch", etag: landed.value.etag }),
    );
    if (Either.isRight(again) || again.left.answeredWithoutEtag !== true) return;
    const after = yield* store.get(key);
    if (Option.isSome(after) && sameBytes(after.value.body, unansweredBody)) {
      return yield* Effect.fail(
        incompatible(
          "NO_CONDITIONAL_REPLACE",
          `store ${store.identity} failed the compatibility probe: two writes that took effect were answered without the written object's ETag, which a conditional replace needs (${again.left.message})`,
        ),
      );
    }
  }).pipe(Effect.catchTag("StoreError", () => Effect.void));

/** The probe's steps on one fresh key; the caller deletes the key. */
const runSteps = (store: ObjectStoreService, key: string): Effect.Effect<void, DomainError> =>
  Effect.gen(function* () {
    const fail = (reason: ReasonOf<"INCOMPATIBLE_STORE">, what: string) =>
      Effect.fail(
        incompatible(reason, `store ${store.identity} failed the compatibility probe: ${what}`),
      );

    const created = yield* store.put(key, firstBody, { _tag: "IfNoneMatch" }).pipe(
      Effect.tapError((error) =>
        error.answeredWithoutEtag === true ? refuseUnansweredWrites(store, key) : Effect.void,
      ),
      Effect.mapError((error) =>
        error._tag === "StoreError"
          ? fromStoreError(store.identity, "conditional create")(error)
          : error,
      ),
    );

    const secondCreate = yield* store.put(key, secondBody, { _tag: "IfNoneMatch" }).pipe(
      Effect.as(true),
      Effect.catchIf(
        (error) => error.reason === "PreconditionFailed",
        () => Effect.succeed(false),
      ),
      Effect.mapError(fromStoreError(store.identity, "second conditional create")),
    );
    if (secondCreate) {
      return yield* fail(
        "NO_CONDITIONAL_CREATE",
        "a second If-None-Match: * create of the same key succeeded",
      );
    }

    const read = yield* store
      .get(key)
      .pipe(Effect.mapError(fromStoreError(store.identity, "read after write")));
    if (Option.isNone(read)) {
      return yield* fail("NO_READ_AFTER_WRITE", "a freshly created key could not be read back");
    }
    if (!sameBytes(read.value.body, firstBody)) {
      return yield* fail(
        "NO_READ_AFTER_WRITE",
        "a freshly created key read back with a different body",
      );
    }
    if (read.value.etag.length === 0 || read.value.etag !== created.etag) {
      return yield* fail(
        "NO_READ_AFTER_WRITE",
        "the ETag read back differs from the ETag the write returned",
      );
    }
    const etag = read.value.etag;

    const wrongMatch = yield* store
      .put(key, wrongMatchBody, { _tag: "IfMatch", etag: wrongEtagFor(etag) })
      .pipe(
        Effect.as(true),
        Effect.catchIf(
          (error) => error.reason === "PreconditionFailed",
          () => Effect.succeed(false),
        ),
        Effect.mapError(fromStoreError(store.identity, "replace with a wrong If-Match")),
      );
    if (wrongMatch) {
      return yield* fail(
        "NO_CONDITIONAL_REPLACE",
        "a replace with a wrong If-Match ETag succeeded",
      );
    }
    const afterWrong = yield* store
      .get(key)
      .pipe(Effect.mapError(fromStoreError(store.identity, "read after a refused replace")));
    if (
      Option.isNone(afterWrong) ||
      !sameBytes(afterWrong.value.body, firstBody) ||
      afterWrong.value.etag !== etag
    ) {
      return yield* fail("NO_CONDITIONAL_REPLACE", "a refused If-Match replace changed the object");
    }

    const replaced = yield* store.put(key, rightMatchBody, { _tag: "IfMatch", etag }).pipe(
      Effect.map(Option.some),
      Effect.catchIf(
        (error) => error.reason === "PreconditionFailed",
        () => Effect.succeed(Option.none<{ readonly etag: string }>()),
      ),
      Effect.mapError(fromStoreError(store.identity, "replace with the right If-Match")),
    );
    if (Option.isNone(replaced)) {
      return yield* fail(
        "NO_CONDITIONAL_REPLACE",
        "a replace with the current If-Match ETag was refused",
      );
    }
    const afterRight = yield* store
      .get(key)
      .pipe(Effect.mapError(fromStoreError(store.identity, "read after a replace")));
    if (
      Option.isNone(afterRight) ||
      !sameBytes(afterRight.value.body, rightMatchBody) ||
      afterRight.value.etag !== replaced.value.etag
    ) {
      return yield* fail(
        "NO_CONDITIONAL_REPLACE",
        "an accepted If-Match replace did not replace the object",
      );
    }
  });

/**
 * The probe's step on a second fresh key: a conditional replace of a key that does not
 * exist must fail and create nothing. A store that creates it (MinIO before
 * RELEASE.2025-09-06) would let a writer whose `current` vanished meanwhile "replace"
 * it from a stale base. The key never existed, so any ETag is a wrong one.
 */
const refusesReplaceOfMissing = (
  store: ObjectStoreService,
  key: string,
): Effect.Effect<void, DomainError> =>
  Effect.gen(function* () {
    const matched = yield* store
      .put(key, missingMatchBody, { _tag: "IfMatch", etag: wrongEtagFor("") })
      .pipe(
        Effect.as(true),
        Effect.catchIf(
          (error) => error.reason === "PreconditionFailed",
          () => Effect.succeed(false),
        ),
        Effect.mapError(fromStoreError(store.identity, "replace of a missing key")),
      );
    const after = yield* store
      .head(key)
      .pipe(Effect.mapError(fromStoreError(store.identity, "read after a refused replace")));
    if (matched || Option.isSome(after)) {
      return yield* Effect.fail(
        incompatible(
          "IF_MATCH_CREATES",
          `store ${store.identity} failed the compatibility probe: ${
            matched
              ? "a replace with If-Match of a key that does not exist succeeded"
              : "a refused If-Match replace of a key that does not exist created it"
          }`,
        ),
      );
    }
  });

/**
 * Proves the configured store honours conditional create, read-after-write with ETag
 * and conditional replace on one fresh key, and that a conditional replace of another
 * fresh key, which does not exist, fails without creating it. Both keys are
 * `probe/<uuidv7>`, checked at the same time (the second check adds no round trip),
 * and deleted afterwards, also when a step fails or the probe is interrupted. Of two
 * broken promises the first key's is reported, so a store that ignores every
 * condition is NO_CONDITIONAL_CREATE.
 *
 * Fails with `DomainError{code: "INCOMPATIBLE_STORE"}` and reason `IF_MATCH_CREATES`,
 * `NO_CONDITIONAL_CREATE`, `NO_READ_AFTER_WRITE` or `NO_CONDITIONAL_REPLACE` for a
 * store that breaks a promise, `ACCESS_DENIED` / `BUCKET_MISSING` for a
 * misconfiguration, and `STORAGE_FAILURE` (`STORE_UNAVAILABLE`, `THROTTLED`, `TIMEOUT`)
 * when the store could not be asked. A failed delete after every step succeeded is
 * reported the same way (the protocol's cleanup needs delete permission too).
 */
export const probeStore: Effect.Effect<void, DomainError, ObjectStore | IdGenerator> = Effect.gen(
  function* () {
    const store = yield* ObjectStore;
    const ids = yield* IdGenerator;
    const key = `probe/${yield* ids.uuidv7}`;
    const missingKey = `probe/${yield* ids.uuidv7}`;
    // A probe key is never written again: no trace of it needs to stay.
    const cleanup = Effect.all(
      [key, missingKey].map((probeKey) => store.delete(probeKey, { forever: true })),
      { concurrency: "unbounded", discard: true },
    );
    yield* Effect.all(
      [
        Effect.either(runSteps(store, key)),
        Effect.either(refusesReplaceOfMissing(store, missingKey)),
      ],
      { concurrency: "unbounded" },
    ).pipe(
      Effect.flatMap(([steps, missing]) => Effect.zipRight(steps, missing)),
      Effect.onError(() => Effect.ignore(cleanup)),
    );
    yield* cleanup.pipe(
      Effect.mapError(fromStoreError(store.identity, "delete of the probe keys")),
    );
  },
);
