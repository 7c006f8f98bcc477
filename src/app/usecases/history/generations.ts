/**
 * One publication's content (SPEC §11): where the packs of the publication at a
 * generation are — the chain of `current` (active or retained) that holds it — and the
 * state of the notebook just before and just after it, replayed from that chain's
 * checkpoint. For `quire show`, `restore` and `revert`. Content is available only while
 * the chain is retained (`--retained-checkpoints`); older generations are
 * INVALID_REQUEST/GENERATION_PRUNED (their record stays in the log).
 */
import { Effect, Option } from "effect";
import { domainError, type DomainError } from "../../../domain/errors.js";
import type { Manifest, PackChain, PackDescriptor } from "../../../domain/manifest.js";
import type { PackHeader } from "../../../domain/pack.js";
import {
  historyPackMissing,
  notContinuing,
  readManifest,
  readPacks,
  type ReadPack,
  type RemoteContext,
  sameEtag,
} from "../commit/remote.js";
import { historyLog } from "./log.js";

/** A publication's header and the notebook (path → content id) before and after it. */
export interface PublicationStates {
  readonly header: PackHeader;
  readonly before: ReadonlyMap<string, string>;
  readonly after: ReadonlyMap<string, string>;
}

/** Where the publication at `generation` is in `manifest`. */
type Located =
  | {
      readonly _tag: "Found";
      readonly checkpoint: PackDescriptor;
      readonly increments: ReadonlyArray<PackDescriptor>;
      /** The generation of the state found (see packedAtOrBefore). */
      readonly generation: number;
    }
  | {
      readonly _tag: "Pruned";
      /**
       * Its pack is kept as the oldest chain's checkpoint (the whole notebook after it),
       * but the state before it went with the older chains: what it changed is gone,
       * the notebook as it left it is not.
       */
      readonly afterKept: boolean;
    }
  | { readonly _tag: "Unknown"; readonly why: string };

/** The pack chains `manifest` keeps: the active one, then the retained ones. */
const chainsOf = (manifest: Manifest): ReadonlyArray<PackChain> => [
  { checkpoint: manifest.checkpoint, increments: manifest.increments },
  ...manifest.retained,
];

/**
 * Where the publication at `asked` is in `manifest`. With `checkpoints`, where the
 * notebook's state at `asked` is: at the newest pack at or before it (packedAtOrBefore),
 * a chain's checkpoint included, so a checkpoint's generation is found too.
 */
const locate = (manifest: Manifest, asked: number, checkpoints: boolean): Located => {
  const packed = checkpoints ? packedAtOrBefore(manifest, asked) : asked;
  if (packed === undefined) return { _tag: "Pruned", afterKept: false };
  const generation = asked > manifest.generation ? asked : packed;
  if (generation > manifest.generation)
    return { _tag: "Unknown", why: `the notebook is at generation ${manifest.generation}` };
  const chains = chainsOf(manifest);
  let oldest = manifest.checkpoint.generation;
  for (const chain of chains) {
    oldest = Math.min(oldest, chain.checkpoint.generation);
    // The notebook's first publication is the first chain's checkpoint.
    if (chain.checkpoint.generation === generation && (generation === 1 || checkpoints))
      return { _tag: "Found", checkpoint: chain.checkpoint, increments: [], generation };
    const at = chain.increments.findIndex((d) => d.generation === generation);
    if (at >= 0)
      return {
        _tag: "Found",
        checkpoint: chain.checkpoint,
        increments: chain.increments.slice(0, at + 1),
        generation,
      };
  }
  if (generation < oldest) return { _tag: "Pruned", afterKept: false };
  if (generation === oldest && oldest > 1) return { _tag: "Pruned", afterKept: true };
  return { _tag: "Unknown", why: "it is a checkpoint's generation, not a publication" };
};

/**
 * The newest generation at or before `generation` that a pack of `manifest` holds (a
 * publication's increment, or a checkpoint's state), undefined when every pack is newer.
 * The notebook's state at `generation` is that generation's: only publications change
 * it, each one is an increment of a chain, and the chains kept join without a gap — a
 * checkpoint's swap, the generation a pull reports after the commit that made it, adds
 * a generation and no pack.
 */
const packedAtOrBefore = (manifest: Manifest, generation: number): number | undefined => {
  let found: number | undefined;
  for (const chain of chainsOf(manifest))
    for (const pack of [chain.checkpoint, ...chain.increments])
      if (pack.generation <= generation && (found === undefined || pack.generation > found))
        found = pack.generation;
  return found;
};

const pruned = (generation: number, afterKept = false): DomainError =>
  domainError({
    code: "INVALID_REQUEST",
    reason: "GENERATION_PRUNED",
    message: afterKept
      ? `What generation ${generation} changed is no longer in the store: the notebook as it was after it is kept (a checkpoint), but the state before it went with the older chains (only the last --retained-checkpoints chains keep theirs). quire restore --from ${generation} still brings files back as they were after it; quire log still lists its record.`
      : `The content of generation ${generation} is no longer in the store (only the last --retained-checkpoints chains keep theirs); quire log still lists its record.`,
  });

/**
 * Whether the log has a record of a publication at `generation`, or may have had one (a
 * store from before history segments): a generation whose packs are gone was either a
 * publication, whose record the log keeps, or a checkpoint's, which never was one. Reads
 * the log back to it, as `quire log` would list that far: only on this refusal's path.
 */
const recordedAsPublication = (
  ctx: RemoteContext,
  generation: number,
): Effect.Effect<boolean, DomainError> =>
  historyLog(ctx, { limit: Number.MAX_SAFE_INTEGER, sinceGeneration: generation - 1 }).pipe(
    Effect.map(
      (log) =>
        log.publications.some((record) => record.generation === generation) ||
        (log.unrecordedThrough ?? 0) >= generation,
    ),
  );

/**
 * The states around the publication at `generation`: INVALID_REQUEST/GENERATION_PRUNED
 * when its packs are gone, INVALID_ARGUMENT when no publication has that generation,
 * STORAGE_FAILURE / STORAGE_INTEGRITY on store errors and invalid packs. A pack missing
 * from the store makes it read `current` again (a cleanup removed the chain after the
 * first read: the generation is located anew, pruned by now or not); the same manifest
 * again is STORAGE_INTEGRITY/PACK_MISSING — damage, never reported as pruned. With
 * `copy` (the generation and head a working copy has seen, for a call that changes it),
 * a `current` that does not continue that history is STORAGE_INTEGRITY/MANIFEST_INVALID.
 */
export const publicationStates = (
  ctx: RemoteContext,
  generation: number,
  copy?: { readonly generation: number; readonly head: string },
): Effect.Effect<PublicationStates, DomainError> => statesAround(ctx, generation, copy, false);

/**
 * The notebook (path → content id) at `generation`, for `restore`: as publicationStates'
 * `after`, and also at a checkpoint's generation, which is no publication but is a state
 * the notebook was in — the generation a pull or status reports after the commit that
 * made the checkpoint, and so the one a person asks to go back to. Its content gone is
 * GENERATION_PRUNED, whether it was a publication's or a checkpoint's.
 */
export const notebookStateAt = (
  ctx: RemoteContext,
  generation: number,
  copy: { readonly generation: number; readonly head: string },
): Effect.Effect<ReadonlyMap<string, string>, DomainError> =>
  statesAround(ctx, generation, copy, true).pipe(Effect.map(({ after }) => after));

/** publicationStates, or with `checkpoints` notebookStateAt's states. */
const statesAround = (
  ctx: RemoteContext,
  generation: number,
  copy: { readonly generation: number; readonly head: string } | undefined,
  checkpoints: boolean,
): Effect.Effect<PublicationStates, DomainError> =>
  Effect.gen(function* () {
    let previousEtag: Option.Option<string> | undefined;
    for (;;) {
      const { manifest, etag } = yield* readManifest(ctx.store);
      const diverged = copy === undefined ? undefined : notContinuing(manifest, copy);
      if (diverged !== undefined) return yield* Effect.fail(diverged);
      if (previousEtag !== undefined && sameEtag(previousEtag, etag))
        return yield* Effect.fail(historyPackMissing);
      const located: Located = Option.isNone(manifest)
        ? { _tag: "Unknown", why: "nothing is published yet" }
        : locate(manifest.value, generation, checkpoints);
      const notAPublication = (why: string) =>
        Effect.fail(
          domainError({
            code: "INVALID_REQUEST",
            reason: "INVALID_ARGUMENT",
            message: `Generation ${generation} is not a publication (${why}); quire log lists the publications.`,
          }),
        );
      // A state asked for (checkpoints too) that is gone is pruned, whatever was at GEN.
      if (located._tag === "Pruned")
        return yield* checkpoints || (yield* recordedAsPublication(ctx, generation))
          ? Effect.fail(pruned(generation, !checkpoints && located.afterKept))
          : notAPublication("it was a checkpoint's generation, not a publication");
      if (located._tag === "Unknown") return yield* notAPublication(located.why);
      const read = yield* readPacks(ctx, [located.checkpoint, ...located.increments]);
      const packs = read.filter((pack) => pack !== undefined);
      if (packs.length < read.length) {
        previousEtag = etag;
        continue;
      }
      return yield* replayed(packs, located.generation);
    }
  });

/** The states around `generation`, the last of `packs` (its chain from its checkpoint). */
const replayed = (
  packs: ReadonlyArray<ReadPack>,
  generation: number,
): Effect.Effect<PublicationStates, DomainError> => {
  const state = new Map<string, string>();
  let before: ReadonlyMap<string, string> = state;
  let header: PackHeader | undefined;
  for (const [index, pack] of packs.entries()) {
    // Copied once, before the publication itself (the chain's length times the
    // notebook's size would be quadratic).
    if (index === packs.length - 1) before = new Map(state);
    header = pack.header;
    if (pack.header.kind === "checkpoint") state.clear();
    for (const path of pack.header.deletes) state.delete(path);
    for (const put of pack.header.puts) state.set(put.path, put.id);
  }
  if (header === undefined || header.generation !== generation)
    return Effect.fail(pruned(generation));
  return Effect.succeed({ header, before, after: state });
};
