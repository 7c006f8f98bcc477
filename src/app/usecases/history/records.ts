/**
 * The publication records of one pack chain (SPEC §11): a checkpoint and the increments
 * after it are replayed in order, and every publication's files are counted against the
 * state just before it (insertions and deletions as SPEC §6.4 counts them). Used by the
 * log for the chains `current` names, and by a checkpoint for the history segment it
 * stores beside itself (maintenance/checkpoint.ts).
 *
 * Cost: the chain's packs (the copy's cache first, then the store), and one line count
 * per file of each record counted — a log counts only the records it lists, a
 * checkpoint's segment every record of the chain it absorbs: what the chain holds, never
 * the whole history.
 */
import { Effect, Option } from "effect";
import { countChanges } from "../../../domain/diffstat.js";
import type { DomainError } from "../../../domain/errors.js";
import type { FileRecord, PublicationRecord } from "../../../domain/history.js";
import type { PackDescriptor } from "../../../domain/manifest.js";
import type { PackHeader } from "../../../domain/pack.js";
import { compareCodeUnits } from "../../../domain/paths.js";
import { readPacks, type RemoteContext } from "../commit/remote.js";
import { storedText } from "./storedText.js";

/** The text of a stored content (its id); empty for anything that is not notebook text. */
const textOf = (ctx: RemoteContext, id: string): Effect.Effect<string, DomainError> =>
  storedText(ctx, id).pipe(Effect.map((text) => text ?? ""));

/** A file a publication changed, with its content ids before and after (absent: none). */
export interface UncountedFile {
  readonly path: string;
  readonly change: FileRecord["change"];
  readonly before?: string;
  readonly after?: string;
}

/**
 * A publication replayed from its chain whose line counts are not computed yet: what
 * reading both contents of every file it changed would cost is paid only for the
 * records an answer lists ({@link countRecord}).
 */
export interface UncountedRecord extends Omit<PublicationRecord, "files"> {
  readonly _tag: "Uncounted";
  /** Sorted by path. */
  readonly files: ReadonlyArray<UncountedFile>;
}

/** The record of one publication's pack, its files against `state` (path → content id). */
const uncountedOf = (header: PackHeader, state: ReadonlyMap<string, string>): UncountedRecord => {
  const files: UncountedFile[] = [];
  for (const path of header.deletes) {
    const before = state.get(path);
    // A delete of a path the state lacks changes nothing (never written by quire).
    if (before !== undefined) files.push({ path, change: "deleted", before });
  }
  for (const put of header.puts) {
    const before = header.kind === "checkpoint" ? undefined : state.get(put.path);
    files.push(
      before === undefined
        ? { path: put.path, change: "added", after: put.id }
        : { path: put.path, change: "modified", before, after: put.id },
    );
  }
  const publication = header.publication;
  return {
    _tag: "Uncounted",
    generation: header.generation,
    publicationId: header.publicationId,
    time: publication?.time ?? "",
    author: publication?.author ?? { name: "", version: "" },
    message: publication?.message ?? "",
    files: files.sort((a, b) => compareCodeUnits(a.path, b.path)),
  };
};

/**
 * The record of `uncounted` with each file's insertions and deletions (SPEC §6.4),
 * reading both of its contents (the copy's blobs: the chain's packs were read).
 */
export const countRecord = (
  ctx: RemoteContext,
  uncounted: UncountedRecord,
): Effect.Effect<PublicationRecord, DomainError> =>
  Effect.forEach(
    uncounted.files,
    ({ path, change, before, after }): Effect.Effect<FileRecord, DomainError> =>
      Effect.gen(function* () {
        const counts =
          before === after
            ? { insertions: 0, deletions: 0 }
            : countChanges(
                before === undefined ? undefined : yield* textOf(ctx, before),
                after === undefined ? undefined : yield* textOf(ctx, after),
              );
        return { path, change, ...counts };
      }),
    { concurrency: 8 },
  ).pipe(
    Effect.map((files) => ({
      generation: uncounted.generation,
      publicationId: uncounted.publicationId,
      time: uncounted.time,
      author: uncounted.author,
      message: uncounted.message,
      files,
    })),
  );

/** The publications of one chain, oldest first. */
export interface ChainRecords<R = PublicationRecord> {
  readonly records: ReadonlyArray<R>;
  /** The chain's checkpoint is the notebook's first publication: nothing precedes it. */
  readonly fromStart: boolean;
}

/**
 * The publications in the chain `checkpoint` + `increments` (oldest first), their line
 * counts not computed: every increment, and the checkpoint itself when it was a
 * publication (the notebook's first). `None` when one of its packs is no longer in the
 * store. Fails on store, cache or integrity errors.
 */
export const chainPublications = (
  ctx: RemoteContext,
  checkpoint: PackDescriptor,
  increments: ReadonlyArray<PackDescriptor>,
): Effect.Effect<Option.Option<ChainRecords<UncountedRecord>>, DomainError> =>
  Effect.gen(function* () {
    const packs = yield* readPacks(ctx, [checkpoint, ...increments]);
    const headers: PackHeader[] = [];
    for (const pack of packs) {
      if (pack === undefined) return Option.none();
      headers.push(pack.header);
    }
    const state = new Map<string, string>();
    const records: UncountedRecord[] = [];
    for (const header of headers) {
      if (header.publication !== undefined) records.push(uncountedOf(header, state));
      if (header.kind === "checkpoint") state.clear();
      for (const path of header.deletes) state.delete(path);
      for (const put of header.puts) state.set(put.path, put.id);
    }
    return Option.some({ records, fromStart: headers[0]?.publication !== undefined });
  });

/**
 * The records of the publications in the chain `checkpoint` + `increments` (oldest
 * first), counted ({@link chainPublications}, {@link countRecord}). `None` when one of
 * its packs is no longer in the store. Fails on store, cache or integrity errors.
 */
export const chainRecords = (
  ctx: RemoteContext,
  checkpoint: PackDescriptor,
  increments: ReadonlyArray<PackDescriptor>,
): Effect.Effect<Option.Option<ChainRecords>, DomainError> =>
  chainPublications(ctx, checkpoint, increments).pipe(
    Effect.flatMap(
      Option.match({
        onNone: () => Effect.succeedNone,
        onSome: ({ records, fromStart }) =>
          Effect.forEach(records, (record) => countRecord(ctx, record)).pipe(
            Effect.map((counted) => Option.some({ records: counted, fromStart })),
          ),
      }),
    ),
  );
