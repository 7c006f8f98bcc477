/**
 * Cleanup (SPEC §7): after a successful checkpoint, best-effort deletion of packs that
 * no manifest reader can need any more — those not referenced by `current` whose
 * generation is at or below the oldest checkpoint it still names (active or retained):
 * increments that checkpoint absorbed, chains no longer retained, and orphans of lost
 * or discarded attempts; and staged records nobody can use any more (deadStaged). The
 * store is LISTed only here (and by staging writers, commit/staging.ts), and only to
 * find candidates: what may be deleted is decided by `current`, re-read before every
 * batch.
 *
 * Why this is safe against writers in flight: a pack uploaded for a compare-and-swap
 * against manifest M has a generation above M's active checkpoint (an increment: M's
 * generation + 1; a checkpoint: newer than M's). If that generation is at or below the
 * oldest checkpoint of a later `current`, `current` has moved past M and the swap must
 * lose (ETags never repeat). A reader whose pack vanished re-reads `current` and
 * continues.
 */
import { Effect, Option } from "effect";
import type { DomainError } from "../../../domain/errors.js";
import { allDescriptors, type Manifest } from "../../../domain/manifest.js";
import type { ObjectStoreService } from "../../../ports/ObjectStore.js";
import { storeFailure } from "../shared/failures.js";
import { readManifest } from "../commit/remote.js";
import { stagedBaseOf, stagingPrefix } from "../../../domain/staging.js";

/** How many deletions happen between two re-reads of `current`. */
const batchSize = 64;

const packKeyPattern =
  /^packs\/(?:checkpoints|increments)\/([1-9][0-9]{0,15})-[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.pack$/;

/** The generation a pack key names, or `undefined` for a key that is not a pack key. */
export const packGeneration = (key: string): number | undefined => {
  const match = packKeyPattern.exec(key);
  return match === null || match[1] === undefined ? undefined : Number(match[1]);
};

/**
 * The oldest generation `manifest` still names (its oldest chain's checkpoint): an
 * unreferenced pack at or below it is unreachable.
 */
export const cutoffOf = (manifest: Manifest): number =>
  Math.min(...allDescriptors(manifest).map((d) => d.generation));

/** The keys of `candidates` that `manifest` allows deleting: unreferenced, at or below its cutoff. */
export const deletable = (
  manifest: Manifest,
  candidates: ReadonlyArray<string>,
): ReadonlyArray<string> => {
  const cutoff = cutoffOf(manifest);
  const referenced = new Set(allDescriptors(manifest).map((d) => d.key));
  return candidates.filter((key) => {
    const generation = packGeneration(key);
    return generation !== undefined && generation <= cutoff && !referenced.has(key);
  });
};

/** What a cleanup did. */
export interface CleanupReport {
  readonly listed: number;
  readonly deleted: number;
}

/**
 * Deletes unreachable packs in batches, re-reading `current` before each batch and
 * deleting only what that manifest allows. Stops quietly when `current` is gone. Fails
 * on a store error (the caller logs and ignores it: cleanup never fails a commit).
 */
export const cleanup = (store: ObjectStoreService): Effect.Effect<CleanupReport, DomainError> =>
  Effect.gen(function* () {
    const listing = yield* store
      .list("packs/")
      .pipe(Effect.mapError((error) => storeFailure(error, "listing packs for cleanup")));
    const keys = listing.map((info) => info.key);
    const first = yield* readManifest(store);
    if (Option.isNone(first.manifest)) return { listed: keys.length, deleted: 0 };
    // The cutoff only ever grows, so the first read already bounds the candidates.
    const candidates = deletable(first.manifest.value, keys);
    let deleted = 0;
    for (let at = 0; at < candidates.length; at += batchSize) {
      const { manifest } = at === 0 ? first : yield* readManifest(store);
      if (Option.isNone(manifest)) break;
      const batch = deletable(manifest.value, candidates.slice(at, at + batchSize));
      yield* Effect.forEach(
        batch,
        (key) =>
          // Pack keys are unique and never written conditionally: nothing needs to stay.
          store
            .delete(key, { forever: true })
            .pipe(Effect.mapError((error) => storeFailure(error, "deleting an old pack"))),
        { concurrency: 8, discard: true },
      );
      deleted += batch.length;
    }
    const staged = yield* deadStaged(store, first.manifest.value.generation);
    return { listed: keys.length + staged.listed, deleted: deleted + staged.deleted };
  });

/**
 * Deletes the staged records (commit/staging.ts) made on a state older than
 * `generation`: only a swap of the very state a record was staged on may accept it, and
 * `current` has moved past it, so nobody can use them. Their writers delete their own
 * once they know their fate; these are what a killed writer left.
 */
const deadStaged = (
  store: ObjectStoreService,
  generation: number,
): Effect.Effect<CleanupReport, DomainError> =>
  Effect.gen(function* () {
    const listing = yield* store
      .list(stagingPrefix)
      .pipe(Effect.mapError((error) => storeFailure(error, "listing staged records for cleanup")));
    const dead = listing
      .map((info) => info.key)
      .filter((key) => {
        const base = stagedBaseOf(key);
        return base !== undefined && base < generation;
      });
    yield* Effect.forEach(
      dead,
      (key) =>
        store
          .delete(key, { forever: true })
          .pipe(Effect.mapError((error) => storeFailure(error, "deleting a staged record"))),
      { concurrency: 8, discard: true },
    );
    return { listed: listing.length, deleted: dead.length };
  });
