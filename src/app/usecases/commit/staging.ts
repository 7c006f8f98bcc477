/**
 * Publication across writers (SPEC §7, docs/storage.md "Staged publications"): when
 * writers of different processes contend for `current`, each swap accepts the staged
 * publications of the others along with its own, so the store accepts many
 * publications per compare-and-swap instead of one per read-and-write window.
 *
 * Why: one swap per commit cannot exceed one per window of `current` (tens of
 * milliseconds per request on S3), and under saturation the writer that just won is the
 * best placed to win again while the others starve. Here every contending writer
 * stages its batch under a key of its own (no contention), lists the records staged on
 * the same state, and the writer whose record sorts first (the oldest publication id:
 * the longest waiting) swaps `current` for all of them; the others watch `current` for
 * their publication ids, and take over when it does not come in time. A winner has no
 * lasting advantage: its next commit is staged like everyone else's and sorts after
 * those already waiting.
 *
 * What makes it safe:
 * - Only `current` decides. A record is included only by a swap of the very state it
 *   was staged on (generation and head), so once `current` has moved past that
 *   generation the record is dead, and its writer's fate is in `current`: its
 *   publication ids are there (accepted), or they never will be.
 * - Included records are those whose changes apply to the swap's result exactly as to
 *   their base: no path claimed by an earlier member, file against directory or case
 *   included (domain/staging.ts). Anything else is left out, and its own writer merges
 *   it properly on its next attempt and publishes or reports the conflict itself.
 * - A record is all or nothing: a writer's batch members merged onto one another.
 * - Each included publication keeps its id, message, time, author, puts and deletes; it
 *   is encoded again at the generation the swap gives it.
 *
 * Writers stage only while they contend (a lost race on the store within
 * {@link contendedForMs}): a writer alone keeps its two-request commit.
 */
import { Cause, Clock, Duration, Effect, Either, Exit, Option } from "effect";
import { domainError, type DomainError } from "../../../domain/errors.js";
import {
  allDescriptors,
  manifestKey,
  packKey,
  type Manifest,
  type PackDescriptor,
} from "../../../domain/manifest.js";
import {
  decodeStaged,
  encodeStaged,
  makeClaims,
  maxStagedPacks,
  repack,
  stagedBaseOf,
  stagingKey,
  stagingPrefix,
  stagingPrefixFor,
  touchedPaths,
  type Staged,
} from "../../../domain/staging.js";
import { decodePack } from "../../../domain/pack.js";
import type { ObjectStoreService, StoreError } from "../../../ports/ObjectStore.js";
import { makeRecentMap } from "../shared/recentMap.js";
import { tidyAfterAnswer } from "../shared/afterAnswer.js";
import type { SwapMember } from "./publishBatch.js";
import { forEachPooled } from "../shared/pooled.js";
import { publishManifest, readManifest, uploadPack } from "./remote.js";
import { recentPacks } from "./recentPacks.js";
import { createHash } from "node:crypto";

/** How long after a lost race on a store this process's commits on it stage. */
export const contendedForMs = 10_000;

/** The longest a staged writer waits for another's swap before it decides itself. */
const maxPatienceMs = 5_000;

/** Records larger than this are left to their writers (an includer reads them whole). */
const maxRecordBytes = 16 * 1024 * 1024;

/** The most publications one swap accepts from others' records (the manifest stays small). */
const maxIncludedPublications = 64;

const contendedUntil = makeRecentMap<number>(16);

/** A manifest read from `current` while watching it, with its ETag. */
export interface Seen {
  readonly manifest: Manifest;
  readonly etag: string;
}

const lastSeen = makeRecentMap<Seen>(16);

/**
 * What this process last read of `current` on `storeIdentity` while staging, once (a
 * commit starts from it instead of reading `current` again: the swap checks it).
 */
export const takeSeen = (storeIdentity: string): Option.Option<Seen> => {
  const seen = lastSeen.get(storeIdentity);
  lastSeen.delete(storeIdentity);
  return Option.fromNullable(seen);
};

/** Whether commits on `storeIdentity` stage now (a race was lost there recently). */
export const contended = (storeIdentity: string, nowMs: number): boolean =>
  (contendedUntil.get(storeIdentity) ?? 0) > nowMs;

/** Records contention on `storeIdentity` (a lost race, others' staged records): its commits stage for a while. */
export const noteContention = (storeIdentity: string, nowMs: number): void =>
  contendedUntil.set(storeIdentity, nowMs + contendedForMs);

/**
 * Whether others are staging on this store: if any record is staged on the state at
 * `baseGeneration` or a later one, or on one of the {@link recentBases} before it (its
 * writer may be about to stage again on a newer state), this process's next commits on
 * the store stage and include them. A writer that is not contending runs it alongside
 * its uploads: a writer that keeps winning with its short plain swap would otherwise
 * never learn that others wait, and they would starve. Records staged on an older state
 * than `baseGeneration` can never be accepted any more (`current` has moved past it):
 * they are deleted after the answer, best effort (a writer killed while staged leaves
 * one). Never fails: a failed listing tells nothing.
 */
export const probeStaged = (
  store: ObjectStoreService,
  baseGeneration: number,
): Effect.Effect<void> =>
  store.list(stagingPrefix).pipe(
    Effect.flatMap((listed) => {
      const bases = listed.map((info) => ({ key: info.key, base: stagedBaseOf(info.key) }));
      const dead = bases.filter((b) => b.base !== undefined && b.base < baseGeneration);
      const recent = bases.some(
        (b) => b.base !== undefined && b.base >= baseGeneration - recentBases,
      );
      return Clock.currentTimeMillis.pipe(
        Effect.tap((nowMs) => (recent ? noteContention(store.identity, nowMs) : undefined)),
        Effect.zipRight(
          forget(
            store,
            dead.map((b) => b.key),
          ),
        ),
      );
    }),
    Effect.ignore,
  );

/**
 * Deletes the staged records that hold the publication `publicationId`, on whatever
 * state at or after `fromGeneration` (the copy's baseline: its commit merged onto no
 * older state) they were staged: a copy's earlier commit whose fate its writer never
 * learned (killed while staged, or its own withdrawal failed). Left alive, such a
 * record can still land in another writer's swap while the copy's next commit — the
 * same edits and more, staged on the same state — is left out of that swap as
 * overlapping it, then conflicts with its own earlier text; and that commit would wait
 * for it as for an older writer. A record is named by its batch's first publication,
 * which is another copy's when this one was a later member of a batch of its process:
 * records named otherwise are read to find the publication among their packs. The
 * caller withdraws before it reads `current` to learn the earlier commit's fate, so
 * that a swap taking the record afterwards cannot follow that read unseen; only a swap
 * whose writer had read the record before the delete still can. Lists the whole of
 * `staging/` (the record's base is not recorded), which cleanup keeps short; it runs
 * only when an earlier commit was left unsettled. Never fails: best effort, as every
 * cleanup of `staging/`.
 */
export const withdrawStaged = (
  store: ObjectStoreService,
  publicationId: string,
  fromGeneration: number,
): Effect.Effect<void> =>
  store.list(stagingPrefix).pipe(
    Effect.flatMap((listed) =>
      forEachPooled(
        listed.filter((info) => {
          const base = stagedBaseOf(info.key);
          // Larger records are never included by others: left to their own writers.
          return base !== undefined && base >= fromGeneration && info.size <= maxRecordBytes;
        }),
        (info) =>
          (info.key.endsWith(`-${publicationId}`)
            ? Effect.succeed(true)
            : holdsPublication(store, info.key, publicationId)
          ).pipe(
            Effect.flatMap((holds) =>
              holds ? store.delete(info.key, { forever: true }) : Effect.void,
            ),
            Effect.ignore,
          ),
        { workers: 8, itemsPerWorker: 1 },
      ),
    ),
    Effect.ignore,
  );

/** The staged record at `key`, decoded; `None` when it is gone or malformed. */
const readStaged = (
  store: ObjectStoreService,
  key: string,
): Effect.Effect<Option.Option<Staged>, StoreError> =>
  store
    .get(key)
    .pipe(Effect.map(Option.flatMap((object) => Either.getRight(decodeStaged(object.body)))));

/** Whether the record at `key` holds a pack of the publication `publicationId`. */
const holdsPublication = (
  store: ObjectStoreService,
  key: string,
  publicationId: string,
): Effect.Effect<boolean, StoreError> =>
  readStaged(store, key).pipe(
    Effect.map(
      Option.exists((staged) =>
        staged.packs.some((p) => p.pack.header.publicationId === publicationId),
      ),
    ),
  );

/** How many states back a staged record still tells that its writer contends. */
const recentBases = 64;

/** How a staged swap ended. */
export type StagedOutcome =
  /** `written` (own publications, then those included) is `current` now. */
  | {
      readonly _tag: "Accepted";
      readonly written: Manifest;
      readonly etag: Option.Option<string>;
    }
  /** Another writer's swap accepted every own publication: `manifest` names them. */
  | { readonly _tag: "Included"; readonly manifest: Manifest }
  /** `current` moved on without them; nothing was published. */
  | { readonly _tag: "Lost" };

/** What a staged swap is given: the state it swaps from and the batch it publishes. */
export interface StagedSwapInput<E> {
  readonly store: ObjectStoreService;
  /** The accepted state the batch merged onto. */
  readonly base: Manifest;
  readonly etag: string;
  /** `base` with the batch's publications added. */
  readonly next: Manifest;
  /** The batch's members, in order: their packs (the increments `next` adds) and tickets. */
  readonly members: ReadonlyArray<SwapMember>;
  /** Uploads the batch's packs and makes its local records durable. */
  readonly after: Effect.Effect<void, E>;
}

const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");

/** The publications `next` adds to `base`: the batch's own. */
const ownDescriptors = (base: Manifest, next: Manifest): ReadonlyArray<PackDescriptor> =>
  next.increments.slice(base.increments.length);

/** Whether every id of `own` is accepted in `manifest`. */
const acceptedIn = (manifest: Manifest, own: ReadonlyArray<PackDescriptor>): boolean => {
  const ids = new Set(allDescriptors(manifest).map((d) => d.publicationId));
  return own.every((d) => ids.has(d.publicationId));
};

/** Best effort, after the answer: staged records nobody can use any more. */
const forget = (store: ObjectStoreService, keys: ReadonlyArray<string>): Effect.Effect<void> =>
  keys.length === 0
    ? Effect.void
    : tidyAfterAnswer(
        Effect.forEach(keys, (key) => store.delete(key, { forever: true }).pipe(Effect.ignore), {
          concurrency: 8,
          discard: true,
        }),
      );

/** Others' records staged on `base`, in key order (oldest first), decoded; bad ones skipped. */
const othersStaged = (
  store: ObjectStoreService,
  base: Manifest,
  keys: ReadonlyArray<string>,
): Effect.Effect<ReadonlyArray<{ readonly key: string; readonly staged: Staged }>> =>
  Effect.gen(function* () {
    const found: Array<{ readonly key: string; readonly staged: Staged }> = [];
    yield* forEachPooled(
      keys,
      (key) =>
        readStaged(store, key).pipe(
          Effect.map((read) => {
            if (Option.isNone(read)) return;
            const staged = read.value;
            if (staged.baseGeneration !== base.generation || staged.baseHead !== base.head) return;
            found.push({ key, staged });
          }),
          Effect.ignore,
        ),
      { workers: 8, itemsPerWorker: 1 },
    );
    return found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  });

/**
 * `next` extended with every staged record that applies cleanly after it, each
 * publication encoded at its new generation and uploaded; the keys of the records
 * included. A record whose upload fails is left out (its writer tries again itself).
 */
const extend = (
  store: ObjectStoreService,
  next: Manifest,
  own: ReadonlyArray<Uint8Array>,
  others: ReadonlyArray<{ readonly key: string; readonly staged: Staged }>,
): Effect.Effect<{ readonly manifest: Manifest; readonly included: ReadonlyArray<string> }> =>
  Effect.gen(function* () {
    const claims = makeClaims();
    for (const bytes of own) {
      const decoded = decodePack(bytes);
      if (Either.isRight(decoded)) claims.claim(touchedPaths(decoded.right.header));
    }
    const accepted = new Set(allDescriptors(next).map((d) => d.publicationId));
    let generation = next.generation;
    let count = 0;
    const chosen: Array<{
      readonly key: string;
      readonly packs: ReadonlyArray<{
        readonly bytes: Uint8Array;
        readonly descriptor: PackDescriptor;
      }>;
    }> = [];
    for (const { key, staged } of others) {
      if (count + staged.packs.length > maxIncludedPublications) break;
      const paths = staged.packs.flatMap((p) => touchedPaths(p.pack.header));
      if (!claims.clear(paths)) continue;
      if (staged.packs.some((p) => accepted.has(p.pack.header.publicationId))) continue;
      claims.claim(paths);
      const packs = staged.packs.map((staged) => {
        generation += 1;
        const { bytes } = repack(staged, generation);
        const id = staged.pack.header.publicationId;
        return {
          bytes,
          descriptor: {
            key: packKey("increment", generation, id),
            generation,
            size: bytes.length,
            sha256: sha256(bytes),
            publicationId: id,
          },
        };
      });
      count += packs.length;
      chosen.push({ key, packs });
    }
    if (chosen.length === 0) return { manifest: next, included: [] };
    const uploaded = yield* Effect.forEach(
      chosen,
      (record) =>
        Effect.forEach(
          record.packs,
          ({ bytes, descriptor }) =>
            uploadPack(store, descriptor.key, bytes, {
              size: String(bytes.length),
              sha256: descriptor.sha256,
              kind: "increment",
              generation: String(descriptor.generation),
            }).pipe(
              Effect.tap(() =>
                Effect.sync(() => recentPacks.remember(store.identity, descriptor.sha256, bytes)),
              ),
            ),
          { concurrency: "unbounded", discard: true },
        ).pipe(Effect.either),
      { concurrency: 8 },
    );
    // Generations must follow one by one: stop at the first record whose upload failed.
    const kept: typeof chosen = [];
    for (const [index, record] of chosen.entries()) {
      if (Either.isLeft(uploaded[index] ?? Either.left(undefined))) break;
      kept.push(record);
    }
    const descriptors = kept.flatMap((record) => record.packs.map((p) => p.descriptor));
    const last = descriptors[descriptors.length - 1];
    if (last === undefined) return { manifest: next, included: [] };
    return {
      manifest: {
        ...next,
        generation: last.generation,
        head: last.publicationId,
        increments: [...next.increments, ...descriptors],
      },
      included: kept.map((record) => record.key),
    };
  });

/**
 * Waits, at most `patienceMs`, for `current` to move past `base`'s generation (`etag`
 * is the ETag `base` was read with). Asks for `current`'s metadata again and again —
 * a quarter of a request's time (`latencyMs`) apart, at least 2 ms and at most 20 ms —
 * and reads it only once its ETag has changed: a fleet of writers watching one
 * manifest would otherwise spend its CPU decoding it. `Some` with what it read once
 * `current` has moved on (every replacement, a checkpoint's too, adds a generation);
 * `None` after the patience, or on a failure (the caller then swaps itself, which
 * decides).
 */
const watchCurrent = (
  store: ObjectStoreService,
  base: Manifest,
  etag: string,
  patienceMs: number,
  latencyMs: number,
): Effect.Effect<Option.Option<Manifest>> =>
  Effect.gen(function* () {
    const until = (yield* Clock.currentTimeMillis) + patienceMs;
    const pauseMs = Math.min(20, Math.max(2, Math.round(latencyMs / 4)));
    for (;;) {
      const info = yield* Effect.either(store.head(manifestKey));
      if (Either.isLeft(info) || Option.isNone(info.right)) return Option.none();
      if (info.right.value.etag !== etag) return yield* readMoved(store, base);
      if ((yield* Clock.currentTimeMillis) >= until) return Option.none();
      yield* Effect.sleep(Duration.millis(pauseMs));
    }
  });

/**
 * `current` read once its ETag showed that it changed: `Some` when it has moved past
 * `base`'s generation (remembered for the next attempt, which starts from it), `None`
 * when it has not or on a failure.
 */
const readMoved = (
  store: ObjectStoreService,
  base: Manifest,
): Effect.Effect<Option.Option<Manifest>> =>
  Effect.gen(function* () {
    const read = yield* Effect.either(readManifest(store));
    if (Either.isLeft(read)) return Option.none();
    const manifest = read.right.manifest;
    if (Option.isSome(manifest) && Option.isSome(read.right.etag))
      lastSeen.set(store.identity, { manifest: manifest.value, etag: read.right.etag.value });
    return Option.isSome(manifest) && manifest.value.generation > base.generation
      ? manifest
      : Option.none();
  });

/**
 * How many times a swapping writer lists the records staged on its base: at least
 * {@link minListings}, then while the listing grows, at most {@link maxListings}.
 */
const minListings = 3;
const maxListings = 5;
/** The most listings while waiting for the others of a round this writer's swap began. */
const maxWaitingListings = 16;

/**
 * How long after its own swap, in requests' times, a writer keeps gathering before it
 * swaps the state it wrote: the others learn of that state by watching `current`
 * (about one request), read it and the packs they lack (two), merge, upload their packs
 * (one) and stage (one). Measured with 8 and 32 writers and 60 ms per request: the
 * writer that had just swapped staged first on the new state, saw nobody after three
 * listings, and swapped alone, so every other writer's record was dead on arrival and
 * its whole attempt (merge, upload, staging, a lost swap) was spent for nothing, round
 * after round, until some ended REMOTE_BUSY.
 */
const followersLagRequests = 7;

/** When this process's staged swap last made `current`, per store: its generation and time. */
const swappedAt = makeRecentMap<{ readonly generation: number; readonly atMs: number }>(16);

/**
 * The records others staged on `base`, read while listing again: writers that read the
 * same `current` stage within a few requests of one another (the one that wrote it
 * knows it first and starts its next commit at once; the others learn it by watching),
 * so the writer about to swap lists {@link minListings} times, then again as long as
 * the listing grows, reading the records found meanwhile — unless a record that sorts
 * before its own appears (`outranked`: that writer swaps for all, and this one watches
 * instead of racing it). Measured with 8 writers and
 * 60 ms per request: one listing caught one or two of the seven others, and a writer
 * that stopped at the first listing that did not grow kept swapping alone right after
 * its own swap (the others still on their way), making every other writer lose.
 */
const gather = (
  store: ObjectStoreService,
  base: Manifest,
  key: string,
  firstKeys: ReadonlyArray<string>,
  untilMs: number,
): Effect.Effect<{
  readonly found: ReadonlyArray<{ readonly key: string; readonly staged: Staged }>;
  /** A record that sorts before this writer's appeared: its writer swaps for all. */
  readonly outranked: boolean;
}> =>
  Effect.gen(function* () {
    const seen = new Set([key, ...firstKeys]);
    let fresh: ReadonlyArray<string> = firstKeys;
    const found: Array<{ readonly key: string; readonly staged: Staged }> = [];
    for (let listing = 1; listing < maxWaitingListings; listing++) {
      const [read, relisted] = yield* Effect.all(
        [
          othersStaged(store, base, fresh),
          Effect.either(store.list(stagingPrefixFor(base.generation))),
        ],
        { concurrency: 2 },
      );
      found.push(...read);
      fresh = Either.isRight(relisted)
        ? relisted.right
            .filter((info) => !seen.has(info.key) && info.size <= maxRecordBytes)
            .map((info) => info.key)
        : [];
      for (const k of fresh) seen.add(k);
      if (fresh.some((k) => k < key)) return { found, outranked: true };
      // Until `untilMs` the others are still on their way: listing goes on regardless.
      const waited = (yield* Clock.currentTimeMillis) >= untilMs;
      if (waited && fresh.length === 0 && listing + 1 >= minListings) break;
      if (waited && listing + 1 >= maxListings) break;
    }
    if (fresh.length > 0) found.push(...(yield* othersStaged(store, base, fresh)));
    return {
      found: found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)),
      outranked: false,
    };
  });

/** PUBLICATION_UNKNOWN: a staged batch whose fate `current` did not tell in time. */
const unknownFate: DomainError = domainError({
  code: "STORAGE_FAILURE",
  reason: "PUBLICATION_UNKNOWN",
  message:
    "The store failed while this commit was staged for other writers to include; it may still land. Pull to see whether it did.",
});

/**
 * Publishes a batch as a contending writer: stages the batch on `base` while its uploads
 * and local records are made durable (`after`), and either swaps `current` for it and
 * every record staged on `base` that applies cleanly after it (when its record sorts
 * first, or the one that does made no swap in time), or finds its publications in
 * another writer's swap. `Lost` only once `current` has moved past `base` without them:
 * the record can no longer be accepted. Fails with `after`'s failure or a store failure
 * once `current` shows that the batch did not land (at once if nothing was staged); when
 * `current` does not tell in time, STORAGE_FAILURE/PUBLICATION_UNKNOWN (the copy's
 * rewrite intent settles it at its next call). A failure to list or read others'
 * records only makes the swap carry fewer publications.
 */
export const stagedSwap = <E>(
  input: StagedSwapInput<E>,
): Effect.Effect<StagedOutcome, DomainError | E> =>
  Effect.suspend(() => {
    // The record's key once its put may have been made: withdrawn if the round is cut off.
    let staging: string | undefined;
    return stagedRound(input, (key) => {
      staging = key;
    }).pipe(
      Effect.onExit((exit) =>
        staging === undefined || !cutOff(exit) ? Effect.void : withdrawCutOff(input.store, staging),
      ),
    );
  });

/**
 * Whether a round ended without an answer of its own: interrupted (a shutdown past its
 * grace) or died. Its batch's other members are then told PUBLICATION_UNKNOWN
 * (publishBatch.ts), as every answered failure after staging already withdrew its record.
 */
const cutOff = <A, E>(exit: Exit.Exit<A, E>): boolean =>
  Exit.isFailure(exit) && Option.isNone(Cause.failureOption(exit.cause));

/** The longest a cut-off round waits for its record's withdrawal (a shutdown is waiting). */
const withdrawCutOffMs = 2_000;

/**
 * Deletes the record of a round cut off before it learned its fate, best effort, within
 * {@link withdrawCutOffMs}. Why: the other members of its batch are answered
 * PUBLICATION_UNKNOWN right after, and a record left alive could still land in another
 * writer's swap while their copies' next commits (the same edits and more, staged on the
 * same state) are left out of that swap as overlapping it, and conflict with their own
 * earlier text.
 */
const withdrawCutOff = (store: ObjectStoreService, key: string): Effect.Effect<void> =>
  store.delete(key, { forever: true }).pipe(
    // A finalizer runs uninterruptibly, and a timeout cannot cut short what it cannot
    // interrupt: without this a store that never answers would hold the shutdown.
    Effect.interruptible,
    Effect.timeout(Duration.millis(withdrawCutOffMs)),
    Effect.ignore,
  );

/** {@link stagedSwap}'s round; `staging` is told the record's key before its put. */
const stagedRound = <E>(
  input: StagedSwapInput<E>,
  staging: (key: string) => void,
): Effect.Effect<StagedOutcome, DomainError | E> =>
  Effect.gen(function* () {
    const { store, base, next } = input;
    const own = ownDescriptors(base, next);
    const first = own[0];
    if (first === undefined || own.length > maxStagedPacks) {
      // Nothing to stage (never so for a batch, at most 32 members): a plain swap.
      const outcome = yield* publishManifest(
        store,
        next,
        Option.some(input.etag),
        next.head,
        input.after,
      );
      return outcome._tag === "Accepted"
        ? ({ _tag: "Accepted", written: next, etag: outcome.etag } as const)
        : ({ _tag: "Lost" } as const);
    }
    // Once staged, another writer may accept the batch at any moment: its packs must be
    // uploaded and the rewrite intents naming its publications durable first, or a
    // failure here would be answered as "nothing published" while it lands, and a copy
    // killed meanwhile would have no record of what it published.
    yield* input.after;
    const packs = input.members.map((member) => member.pack);
    const ticket = input.members.map((member) => member.ticket).reduce((a, b) => (a < b ? a : b));
    const key = stagingKey(base.generation, ticket, first.publicationId);
    staging(key);
    const startedMs = yield* Clock.currentTimeMillis;
    // Listing alongside staging: two writers staging at the same instant may each miss
    // the other and both swap; the compare-and-swap decides, and the loser finds its
    // fate in `current` like any other.
    // And a look at `current`'s ETag in the same round trip: a base that is no longer
    // `current` can take no swap, so its fate is read at once instead of after a
    // gathering and a lost swap (another writer may have included the record already).
    const [staged, listed, headed] = yield* Effect.all(
      [
        Effect.either(
          store.put(key, encodeStaged(base.generation, base.head, packs), {
            _tag: "Unconditional",
          }),
        ),
        Effect.either(store.list(stagingPrefixFor(base.generation))),
        Effect.either(store.head(manifestKey)),
      ],
      { concurrency: 3 },
    );
    // One request's time, the measure of every wait below.
    const latencyMs = (yield* Clock.currentTimeMillis) - startedMs;
    // Capped: a request that timed out must not make every wait a matter of minutes.
    const patienceMs = Math.min(10 * latencyMs + 100, maxPatienceMs);
    const mayBeStaged = Either.isRight(staged) || staged.left.reason === "Ambiguous";
    const keys = Either.isRight(listed)
      ? listed.right
          .filter((info) => info.key !== key && info.size <= maxRecordBytes)
          .map((info) => info.key)
      : [];
    if (keys.length > 0) noteContention(store.identity, startedMs);
    yield* Effect.logDebug("staged a batch").pipe(
      Effect.annotateLogs({
        staged: Either.isRight(staged) ? "yes" : staged.left.reason,
        others: keys.length,
        base: base.generation,
      }),
    );
    // `current` has moved past `base` (`seen`): the record is dead either way, and the
    // batch is in `seen` (included) or nowhere.
    const concluded = (
      seen: Manifest,
    ): Effect.Effect<
      { readonly _tag: "Included"; readonly manifest: Manifest } | { readonly _tag: "Lost" }
    > =>
      forget(store, [key]).pipe(
        Effect.as(
          acceptedIn(seen, own)
            ? ({ _tag: "Included", manifest: seen } as const)
            : ({ _tag: "Lost" } as const),
        ),
      );
    // Staged, the batch may land by another writer's swap even though this writer
    // failed to publish it: `current` tells, or the failure is PUBLICATION_UNKNOWN.
    const fateAfter = (failure: DomainError): Effect.Effect<StagedOutcome, DomainError> =>
      !mayBeStaged
        ? Effect.fail(failure)
        : watchCurrent(store, base, input.etag, patienceMs, latencyMs).pipe(
            Effect.flatMap((seen): Effect.Effect<StagedOutcome, DomainError> => {
              // Withdrawn before answering: a record left alive could land in another
              // writer's swap after the answer, while its writer's next commit (the same
              // edits and more, staged on the same state) is left out of that swap as
              // overlapping it, and then conflicts with its own earlier text.
              if (Option.isNone(seen))
                return input.store
                  .delete(key, { forever: true })
                  .pipe(Effect.ignore, Effect.zipRight(Effect.fail(unknownFate)));
              return concluded(seen.value).pipe(
                Effect.flatMap((fate) =>
                  fate._tag === "Included"
                    ? Effect.succeed<StagedOutcome>(fate)
                    : Effect.fail(failure),
                ),
              );
            }),
          );
    const moved =
      Either.isRight(headed) &&
      Option.isSome(headed.right) &&
      headed.right.value.etag !== input.etag;
    if (moved) {
      const seen = yield* readMoved(store, base);
      if (Option.isSome(seen)) return yield* concluded(seen.value);
    }
    if (mayBeStaged && !keys.every((other) => other > key)) {
      // The record sorting first swaps for all: a few more listings (gather), its
      // uploads, then `current`. Patience for well over that.
      const seen = yield* watchCurrent(store, base, input.etag, patienceMs, latencyMs);
      if (Option.isSome(seen)) return yield* concluded(seen.value);
    }
    // A writer whose own swap made `base` gathers until the others can have staged on it.
    const madeBase = swappedAt.get(store.identity);
    const untilMs =
      madeBase !== undefined && madeBase.generation === base.generation
        ? Math.min(madeBase.atMs + followersLagRequests * latencyMs, startedMs + patienceMs)
        : 0;
    const gathered = yield* gather(store, base, key, keys, untilMs);
    if (gathered.outranked && mayBeStaged) {
      // Another writer staged just after this one listed, with an older ticket: it swaps.
      const seen = yield* watchCurrent(store, base, input.etag, patienceMs, latencyMs);
      if (Option.isSome(seen)) return yield* concluded(seen.value);
    }
    const others = gathered.found;
    const extended = yield* extend(store, next, packs, others);
    yield* Effect.logDebug("swapping for staged batches").pipe(
      Effect.annotateLogs({
        readable: others.length,
        included: extended.included.length,
      }),
    );
    return yield* plainSwap(
      { ...input, after: Effect.void },
      extended.manifest,
      input.etag,
      own,
    ).pipe(
      Effect.tap((outcome) =>
        Effect.gen(function* () {
          if (outcome._tag === "Accepted")
            swappedAt.set(store.identity, {
              generation: outcome.written.generation,
              atMs: yield* Clock.currentTimeMillis,
            });
          yield* forget(store, outcome._tag === "Accepted" ? [key, ...extended.included] : [key]);
        }),
      ),
      Effect.catchAll(fateAfter),
    );
  });
/** Whether `manifest` holds `own` at the very generations `written` gave them. */
const sameGenerations = (manifest: Manifest, own: ReadonlyArray<PackDescriptor>): boolean => {
  const keys = new Set(allDescriptors(manifest).map((d) => d.key));
  return own.every((d) => keys.has(d.key));
};

/**
 * The swap of `written` on `etag`; on a lost race, what `current` says: the batch's
 * publications are there (another writer included them) or not (lost: every
 * replacement of `current`, a checkpoint's too, moves its generation past the base, so
 * the record can no longer be accepted). A lost response that a re-read resolved as
 * accepted is told apart from an inclusion by another writer by the generations the
 * batch's publications have: a writer that includes others puts its own first, so an
 * included batch never keeps the generations it was staged with.
 */
const plainSwap = <E>(
  input: StagedSwapInput<E>,
  written: Manifest,
  etag: string,
  own: ReadonlyArray<PackDescriptor>,
): Effect.Effect<StagedOutcome, DomainError | E> =>
  Effect.gen(function* () {
    for (let attempt = 0; ; attempt++) {
      const outcome = yield* publishManifest(
        input.store,
        written,
        Option.some(etag),
        input.next.head,
        attempt === 0 ? input.after : Effect.void,
      );
      if (outcome._tag === "Accepted") {
        // A re-read proved it: the manifest it found tells whose swap it was.
        const found = outcome.found;
        if (Option.isSome(outcome.etag) || found === undefined)
          return { _tag: "Accepted", written, etag: outcome.etag };
        return sameGenerations(found, own)
          ? { _tag: "Accepted", written, etag: Option.none() }
          : { _tag: "Included", manifest: found };
      }
      const read = yield* readManifest(input.store);
      if (Option.isNone(read.manifest)) return yield* Effect.fail(vanishedCurrent);
      const now = read.manifest.value;
      if (Option.isSome(read.etag))
        lastSeen.set(input.store.identity, { manifest: now, etag: read.etag.value });
      if (acceptedIn(now, own)) return { _tag: "Included", manifest: now };
      if (now.generation > input.base.generation) return { _tag: "Lost" };
      // The condition failed while `current` is still the base (a store answering a
      // conflicting request in flight with 409, say): the record is alive, so the batch
      // is not lost; swap again, and if that keeps failing let the caller decide from
      // `current` (fateAfter).
      if (attempt >= 2) return yield* Effect.fail(unmovedCurrent);
      yield* Effect.sleep(Duration.millis(10 * (attempt + 1)));
    }
  });

/** `current` vanished under a staged batch: never a conclusion drawn from it. */
const vanishedCurrent: DomainError = domainError({
  code: "STORAGE_FAILURE",
  reason: "PUBLICATION_UNKNOWN",
  message:
    "The notebook's current manifest vanished while this commit was staged; pull to see whether it landed.",
});

/** A swap refused again and again while `current` stayed the state it was made on. */
const unmovedCurrent: DomainError = domainError({
  code: "STORAGE_FAILURE",
  reason: "PUBLICATION_UNKNOWN",
  message:
    "The store kept refusing this commit's publication although nobody else published; pull to see whether it landed.",
});
