/**
 * History segments in the store (domain/history.ts): reading one, and building the one a
 * checkpoint stores beside itself before it is swapped in (maintenance/checkpoint.ts).
 */
import { Effect, Either, Option } from "effect";
import type { DomainError } from "../../../domain/errors.js";
import {
  decodeHistorySegment,
  encodeHistorySegment,
  historyKey,
  nextSegment,
  type HistorySegment,
  type PublicationRecord,
} from "../../../domain/history.js";
import type { Manifest } from "../../../domain/manifest.js";
import { storeFailure } from "../shared/failures.js";
import type { RemoteContext } from "../commit/remote.js";
import { chainRecords, type ChainRecords } from "./records.js";

/**
 * Reads the history segment stored under `key`: `None` when there is none, or when it
 * fails validation (logged: the log then ends there and says so; a checkpoint starts a
 * new chain of segments). Fails with STORAGE_FAILURE on store errors.
 */
export const readSegment = (
  ctx: RemoteContext,
  key: string,
): Effect.Effect<Option.Option<HistorySegment>, DomainError> =>
  ctx.store.get(key).pipe(
    Effect.mapError((error) => storeFailure(error, "reading the history")),
    Effect.flatMap((object) => {
      if (Option.isNone(object)) return Effect.succeedNone;
      const decoded = decodeHistorySegment(object.value.body);
      return Either.isRight(decoded)
        ? Effect.succeedSome(decoded.right)
        : Effect.logWarning("a history segment failed validation").pipe(
            Effect.annotateLogs({ key, problem: decoded.left }),
            Effect.as(Option.none<HistorySegment>()),
          );
    }),
  );

/** What precedes a new segment: the segment to link to, and records to carry over. */
interface Preceding {
  readonly previous: Parameters<typeof nextSegment>[2];
  /** Records of retained chains between that segment and the active chain (oldest first). */
  readonly bridged: ReadonlyArray<PublicationRecord>;
}

/**
 * The history before `published`'s active chain: the segment of its checkpoint, or —
 * when that checkpoint has none (made by a release before history segments, in a fleet
 * of mixed releases; or its segment failed validation) — the records of the retained
 * chain that checkpoint absorbed, read from its packs, and the segment of that chain's
 * own checkpoint, and so on through the retained chains (newest first), so that one
 * checkpoint without a segment does not end the history. Where the retained chains end,
 * or one of them does not reach the checkpoint after it, or a pack of it is gone, the
 * records stop: `unrecordedThrough` says up to which generation; so do they at a retained
 * pack that fails verification (logged). Reads packs only when a segment is missing.
 * Fails with STORAGE_FAILURE when the store cannot be read.
 */
const precedingHistory = (
  ctx: RemoteContext,
  published: Manifest,
): Effect.Effect<Preceding, DomainError> =>
  Effect.gen(function* () {
    let bridged: ReadonlyArray<PublicationRecord> = [];
    let newer = published.checkpoint;
    for (const chain of [...published.retained, undefined]) {
      const key = historyKey(newer.key);
      const found = yield* readSegment(ctx, key);
      if (Option.isSome(found))
        return { previous: { _tag: "Segment", key, segment: found.value }, bridged };
      const unrecorded = {
        previous: { _tag: "None", unrecordedThrough: newer.generation },
        bridged,
      } as const;
      const through = newer.generation;
      const absorbed = chain?.increments.filter((d) => d.generation <= through) ?? [];
      // The chain `newer` replaced holds every publication up to `newer`'s generation.
      const reaches =
        chain !== undefined &&
        chain.checkpoint.generation <= through &&
        (chain.checkpoint.generation === through || absorbed.at(-1)?.generation === through);
      if (chain === undefined || !reaches) return unrecorded;
      // A damaged retained pack ends the records here rather than failing every
      // checkpoint from now on (the checkpoint is what would replace it); a store that
      // cannot be read fails this checkpoint, which a later commit tries again.
      const records = yield* chainRecords(ctx, chain.checkpoint, absorbed).pipe(
        Effect.catchIf(
          (failure) => failure.code === "STORAGE_INTEGRITY",
          (failure) =>
            Effect.logWarning("a retained pack failed verification; history ends there").pipe(
              Effect.annotateLogs({ generation: chain.checkpoint.generation, failure }),
              Effect.as(Option.none<ChainRecords>()),
            ),
        ),
      );
      if (Option.isNone(records)) return unrecorded;
      bridged = [...records.value.records, ...bridged];
      if (records.value.fromStart)
        return { previous: { _tag: "None", unrecordedThrough: 0 }, bridged };
      newer = chain.checkpoint;
    }
    return { previous: { _tag: "None", unrecordedThrough: newer.generation }, bridged };
  });

/** A segment ready to upload under its key. */
export interface PreparedSegment {
  readonly key: string;
  readonly bytes: Uint8Array;
}

/**
 * The history segment of a checkpoint of `published` at generation `through`, stored
 * at `checkpointKey`: the records of the active chain's publications up to `through`,
 * after (or merged with) the segment of `published`'s own checkpoint. `None` when a
 * pack of that chain is gone from the store (then the checkpoint is not made). Reads the
 * chain's packs (the copy's cache first) and one segment.
 */
export const segmentFor = (
  ctx: RemoteContext,
  published: Manifest,
  through: number,
  checkpointKey: string,
): Effect.Effect<Option.Option<PreparedSegment>, DomainError> =>
  Effect.gen(function* () {
    const absorbed = yield* chainRecords(
      ctx,
      published.checkpoint,
      published.increments.filter((d) => d.generation <= through),
    );
    if (Option.isNone(absorbed)) return Option.none();
    const preceding = absorbed.value.fromStart
      ? { previous: { _tag: "None", unrecordedThrough: 0 } as const, bridged: [] }
      : yield* precedingHistory(ctx, published);
    const segment = nextSegment(
      through,
      [...preceding.bridged, ...absorbed.value.records],
      preceding.previous,
    );
    return Option.some({ key: historyKey(checkpointKey), bytes: encodeHistorySegment(segment) });
  });
