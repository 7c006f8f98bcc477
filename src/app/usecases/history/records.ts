/**
 * The publication records of one pack chain (SPEC §11): a checkpoint and the increments
 * after it are replayed in order, and every publication's files are counted against the
 * state just before it (insertions and deletions as SPEC §6.4 counts them). Used by the
 * log for the chains `current` names, and by a checkpoint for the history segment it
 * stores beside itself (maintenance/checkpoint.ts).
 *
 * Cost: the chain's packs (the copy's cache first, then the store) and one line count per
 * file a publication touched — what the chain holds, never the whole history.
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

/** The record of one publication's pack, counted against `state` (path → content id). */
const recordOf = (
  ctx: RemoteContext,
  header: PackHeader,
  state: ReadonlyMap<string, string>,
): Effect.Effect<PublicationRecord, DomainError> =>
  Effect.gen(function* () {
    const changes: Array<{ path: string; before?: string; after?: string }> = [];
    for (const path of header.deletes) {
      const before = state.get(path);
      // A delete of a path the state lacks changes nothing (never written by quire).
      if (before !== undefined) changes.push({ path, before });
    }
    for (const put of header.puts) {
      const before = header.kind === "checkpoint" ? undefined : state.get(put.path);
      changes.push({ path: put.path, ...(before === undefined ? {} : { before }), after: put.id });
    }
    const files = yield* Effect.forEach(
      changes,
      ({ path, before, after }): Effect.Effect<FileRecord, DomainError> =>
        Effect.gen(function* () {
          const counts =
            before === after
              ? { insertions: 0, deletions: 0 }
              : countChanges(
                  before === undefined ? undefined : yield* textOf(ctx, before),
                  after === undefined ? undefined : yield* textOf(ctx, after),
                );
          const change =
            before === undefined ? "added" : after === undefined ? "deleted" : "modified";
          return { path, change, ...counts };
        }),
      { concurrency: 8 },
    );
    const publication = header.publication;
    return {
      generation: header.generation,
      publicationId: header.publicationId,
      time: publication?.time ?? "",
      author: publication?.author ?? { name: "", version: "" },
      message: publication?.message ?? "",
      files: files.sort((a, b) => compareCodeUnits(a.path, b.path)),
    };
  });

/** The publications of one chain, oldest first. */
export interface ChainRecords {
  readonly records: ReadonlyArray<PublicationRecord>;
  /** The chain's checkpoint is the notebook's first publication: nothing precedes it. */
  readonly fromStart: boolean;
}

/**
 * The records of the publications in the chain `checkpoint` + `increments` (oldest
 * first): every increment, and the checkpoint itself when it was a publication (the
 * notebook's first). `None` when one of its packs is no longer in the store. Fails on
 * store, cache or integrity errors.
 */
export const chainRecords = (
  ctx: RemoteContext,
  checkpoint: PackDescriptor,
  increments: ReadonlyArray<PackDescriptor>,
): Effect.Effect<Option.Option<ChainRecords>, DomainError> =>
  Effect.gen(function* () {
    const packs = yield* readPacks(ctx, [checkpoint, ...increments]);
    const headers: PackHeader[] = [];
    for (const pack of packs) {
      if (pack === undefined) return Option.none();
      headers.push(pack.header);
    }
    const state = new Map<string, string>();
    const records: PublicationRecord[] = [];
    for (const header of headers) {
      if (header.publication !== undefined) records.push(yield* recordOf(ctx, header, state));
      if (header.kind === "checkpoint") state.clear();
      for (const path of header.deletes) state.delete(path);
      for (const put of header.puts) state.set(put.path, put.id);
    }
    return Option.some({ records, fromStart: headers[0]?.publication !== undefined });
  });
