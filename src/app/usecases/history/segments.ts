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
} from "../../../domain/history.js";
import type { Manifest } from "../../../domain/manifest.js";
import { storeFailure } from "../shared/failures.js";
import type { RemoteContext } from "../commit/remote.js";
import { chainRecords } from "./records.js";

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
    const previousKey = historyKey(published.checkpoint.key);
    const previous = absorbed.value.fromStart
      ? Option.none<HistorySegment>()
      : yield* readSegment(ctx, previousKey);
    const segment = nextSegment(
      through,
      absorbed.value.records,
      Option.isSome(previous)
        ? { _tag: "Segment", key: previousKey, segment: previous.value }
        : {
            _tag: "None",
            unrecordedThrough: absorbed.value.fromStart ? 0 : published.checkpoint.generation,
          },
    );
    return Option.some({ key: historyKey(checkpointKey), bytes: encodeHistorySegment(segment) });
  });
