/**
 * `quire log` (SPEC §11): the publications of the notebook, newest first — those of the
 * chain `current` names, replayed from its packs, then those the checkpoints' history
 * segments recorded (domain/history.ts), segment after segment, until the limit is
 * reached. A store written before history segments existed still lists what its
 * retained chains hold.
 */
import { Effect, Option } from "effect";
import type { DomainError } from "../../../domain/errors.js";
import {
  atOrBelowAny,
  historyKey,
  type HistoryLog,
  type HistorySegment,
  type LogRequest,
  type PublicationRecord,
} from "../../../domain/history.js";
import type { Manifest, PackChain } from "../../../domain/manifest.js";
import {
  historyPackMissing,
  notContinuing,
  readManifest,
  type RemoteContext,
} from "../commit/remote.js";
import { chainPublications, countRecord, type UncountedRecord } from "./records.js";
import { readSegment } from "./segments.js";

/** A record as the log finds it: from a segment (counted) or replayed from a chain (not yet). */
type Found = PublicationRecord | UncountedRecord;

const touches = (record: Found, file: string | undefined): boolean =>
  file === undefined || record.files.some((f) => atOrBelowAny(f.path, [file]));

/** `record` with its line counts: those of a chain's records are computed now. */
const counted = (
  ctx: RemoteContext,
  record: Found,
): Effect.Effect<PublicationRecord, DomainError> =>
  "_tag" in record ? countRecord(ctx, record) : Effect.succeed(record);

/**
 * The records of the retained chains still in the store, newest first (a store from
 * before history segments), and how far back nothing is recorded then.
 */
const retainedRecords = (
  ctx: RemoteContext,
  retained: ReadonlyArray<PackChain>,
  activeCheckpoint: number,
): Effect.Effect<
  { readonly records: ReadonlyArray<UncountedRecord>; readonly unrecordedThrough: number },
  DomainError
> =>
  Effect.gen(function* () {
    const records: UncountedRecord[] = [];
    let unrecordedThrough = activeCheckpoint;
    for (const chain of retained) {
      const found = yield* chainPublications(ctx, chain.checkpoint, chain.increments);
      if (Option.isNone(found)) break;
      records.push(...[...found.value.records].reverse());
      unrecordedThrough = found.value.fromStart ? 0 : chain.checkpoint.generation;
      if (found.value.fromStart) break;
    }
    return { records, unrecordedThrough };
  });

/** Lists the publications of `manifest` (see {@link historyLog}); `None`: a pack is gone. */
const logOf = (
  ctx: RemoteContext,
  manifest: Manifest,
  request: LogRequest,
): Effect.Effect<Option.Option<HistoryLog>, DomainError> =>
  Effect.gen(function* () {
    // Counted once the list is complete: only the records listed pay for reading their
    // contents, however long the active chain (up to --checkpoint-packs publications).
    const listed: Found[] = [];
    // Newest first; only records older than every one seen so far count (a retained
    // chain or a segment never repeats a newer source's, but a damaged store might).
    let oldest = Number.POSITIVE_INFINITY;
    const since = request.sinceGeneration ?? 0;
    // Done when the limit is reached or every publication newer than `since` was seen.
    const done = () => listed.length >= request.limit || oldest <= since + 1;
    const add = (records: ReadonlyArray<Found>) => {
      for (const record of records) {
        if (listed.length >= request.limit) return;
        if (record.generation >= oldest) continue;
        oldest = record.generation;
        if (record.generation <= since) return;
        if (touches(record, request.file)) listed.push(record);
      }
    };
    const result = (unrecordedThrough: number): Effect.Effect<HistoryLog, DomainError> => {
      const through = Math.min(unrecordedThrough, oldest - 1, manifest.generation);
      return Effect.forEach(listed, (record) => counted(ctx, record)).pipe(
        Effect.map((publications) => ({
          generation: manifest.generation,
          publications,
          ...(listed.length < request.limit && through > since
            ? { unrecordedThrough: through }
            : {}),
        })),
      );
    };
    const active = yield* chainPublications(ctx, manifest.checkpoint, manifest.increments);
    // A pack of the active chain gone: `current` moved on meanwhile (the caller re-reads).
    if (Option.isNone(active)) return Option.none();
    add([...active.value.records].reverse());
    if (active.value.fromStart || done()) return Option.some(yield* result(0));
    let next: string | null = historyKey(manifest.checkpoint.key);
    let first = true;
    // Each segment must be older than the one that named it (a damaged or hostile chain
    // that loops back, or points forward, ends the log there instead of never ending).
    let through = manifest.checkpoint.generation + 1;
    while (next !== null && !done()) {
      const segment: Option.Option<HistorySegment> = yield* readSegment(ctx, next);
      if (Option.isSome(segment) && segment.value.through >= through) {
        yield* Effect.logWarning(
          "a history segment does not precede the one naming it; the log ends there",
        ).pipe(Effect.annotateLogs({ key: next }));
        return Option.some(yield* result(oldest - 1));
      }
      if (Option.isSome(segment)) through = segment.value.through;
      if (Option.isNone(segment)) {
        if (!first) return Option.some(yield* result(oldest - 1));
        // No segment for the active checkpoint: a store from before history segments.
        const older = yield* retainedRecords(
          ctx,
          manifest.retained,
          manifest.checkpoint.generation,
        );
        add(older.records);
        return Option.some(yield* result(older.unrecordedThrough));
      }
      add([...segment.value.records].reverse());
      if (segment.value.previous === null)
        return Option.some(yield* result(segment.value.unrecordedThrough));
      next = segment.value.previous;
      first = false;
    }
    return Option.some(yield* result(0));
  });

/**
 * The publications of the notebook, newest first, at most `request.limit`, only those
 * touching `request.file` when given. Reads `current`, the active chain's packs (the
 * copy's cache first) and as many history segments as the limit needs. Fails with
 * STORAGE_FAILURE on store errors and STORAGE_INTEGRITY when `current` or a pack fails
 * validation. With `copy` (the generation and head a working copy has seen), a `current`
 * that does not continue that history is STORAGE_INTEGRITY/MANIFEST_INVALID
 * ({@link notContinuing}), as status and pull answer: listing it would describe a history
 * the copy is not on (a store rolled back, or replaced by another notebook's).
 */
export const historyLog = (
  ctx: RemoteContext,
  request: LogRequest,
  copy?: { readonly generation: number; readonly head: string },
): Effect.Effect<HistoryLog, DomainError> =>
  Effect.gen(function* () {
    for (let attempt = 0; ; attempt++) {
      const { manifest } = yield* readManifest(ctx.store);
      const diverged = copy === undefined ? undefined : notContinuing(manifest, copy);
      if (diverged !== undefined) return yield* Effect.fail(diverged);
      if (Option.isNone(manifest)) return { generation: 0, publications: [] };
      const log = yield* logOf(ctx, manifest.value, request);
      if (Option.isSome(log)) return log.value;
      // The chain's packs were pruned between the read and the fetch: `current` moved.
      if (attempt >= 3) return yield* Effect.fail(historyPackMissing);
    }
  });
