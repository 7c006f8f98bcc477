/**
 * Checkpoints (SPEC §7, docs/storage.md): once the active tail of increments grows past
 * `checkpointPacks` (or its bytes past `checkpointBytes`), the writer whose publication
 * crossed the line compacts the stable prefix of the tail — everything before its own
 * increment — into one complete-state checkpoint and swaps it in with an ordinary
 * compare-and-swap of `current` that keeps the head and every newer increment and moves
 * the replaced chain into `retained`. Beside it, before the swap, it stores the history
 * segment of the publications it absorbs (SPEC §11, domain/history.ts). Writers are never blocked: a checkpoint that loses
 * or is overtaken is re-planned against the new manifest or discarded, never published
 * against a manifest it does not describe.
 */
import { createHash } from "node:crypto";
import { Duration, Effect, Option, Random } from "effect";
import type { DomainError } from "../../../domain/errors.js";
import {
  packKey,
  type Manifest,
  type PackChain,
  type PackDescriptor,
} from "../../../domain/manifest.js";
import { encodePack } from "../../../domain/pack.js";
import type { CopyCall } from "../shared/context.js";
import { reach } from "../shared/failpoints.js";
import type { NotebookOptions } from "../shared/notebookOptions.js";
import { rememberWritten } from "../commit/lastWritten.js";
import { publishManifest, readManifest, uploadPack, type RemoteView } from "../commit/remote.js";
import { segmentFor, type PreparedSegment } from "../history/segments.js";

/** The default tail byte threshold of a checkpoint (`--checkpoint-bytes`): 64 MiB. */
export const defaultCheckpointBytes = 64 * 1024 * 1024;

/** How many times a checkpoint re-plans after losing the race for `current`. */
const checkpointAttempts = 4;

/** Whether `manifest`'s active tail is past a checkpoint threshold. */
export const checkpointDue = (
  manifest: Manifest,
  options: Pick<NotebookOptions, "checkpointPacks" | "checkpointBytes">,
): boolean => {
  if (manifest.increments.length > options.checkpointPacks) return true;
  const bytes = manifest.increments.reduce((sum, d) => sum + d.size, 0);
  return bytes > (options.checkpointBytes ?? defaultCheckpointBytes);
};

/** A checkpoint pack built in memory, not yet uploaded. */
export interface PreparedCheckpoint {
  /** The state's generation: the one the publication that triggered it was based on. */
  readonly generation: number;
  /** That publication's id: the checkpoint is valid only while its increment is active. */
  readonly after: string;
  readonly key: string;
  readonly bytes: Uint8Array;
  readonly descriptor: PackDescriptor;
  /** The history segment stored beside it (history/segments.ts), uploaded first. */
  readonly history: PreparedSegment;
}

/**
 * Builds the checkpoint a publication calls for, if any: `published` is the manifest
 * that publication wrote (its increment last, at `base.generation + 1`) and `base` the
 * complete state it was merged onto. `None` when no threshold is crossed or nothing
 * precedes the publication in the tail. Loads every blob of `base`, so it runs before
 * the working copy is settled (while every cached pack is still present). Also builds
 * the history segment of the publications it absorbs (history/segments.ts): `None` as
 * well when a pack of that chain is gone.
 */
export const prepareCheckpoint = (
  call: CopyCall,
  published: Manifest,
  base: RemoteView,
): Effect.Effect<Option.Option<PreparedCheckpoint>, DomainError> =>
  Effect.gen(function* () {
    const own = published.increments[published.increments.length - 1];
    if (own === undefined || own.generation !== base.generation + 1) return Option.none();
    if (!checkpointDue(published, call.options)) return Option.none();
    if (base.generation <= published.checkpoint.generation) return Option.none();
    const files = new Map<string, Uint8Array>();
    yield* Effect.forEach(
      [...base.tree],
      ([path, ref]) => call.blobs.load(ref.id).pipe(Effect.map((bytes) => files.set(path, bytes))),
      { concurrency: 16, discard: true },
    );
    const publicationId = yield* call.ids.uuidv7;
    const { bytes } = encodePack({
      kind: "checkpoint",
      generation: base.generation,
      publicationId,
      baseGeneration: base.generation,
      files,
    });
    const key = packKey("checkpoint", base.generation, publicationId);
    const history = yield* segmentFor(call, published, base.generation, key);
    if (Option.isNone(history)) return Option.none();
    return Option.some({
      history: history.value,
      generation: base.generation,
      after: own.publicationId,
      key,
      bytes,
      descriptor: {
        key,
        generation: base.generation,
        size: bytes.length,
        sha256: createHash("sha256").update(bytes).digest("hex"),
        publicationId,
      },
    });
  });

/**
 * The manifest that swaps `checkpoint` into `m`, or why it must not: `m` must still
 * hold the triggering increment in its active tail (so its state at the checkpoint's
 * generation is the checkpoint's), must not already have a checkpoint that new, and
 * must still be past a threshold.
 */
export const planCheckpoint = (
  m: Manifest,
  checkpoint: Pick<PreparedCheckpoint, "generation" | "after" | "descriptor">,
  options: Pick<NotebookOptions, "checkpointPacks" | "checkpointBytes" | "retainedCheckpoints">,
):
  | { readonly _tag: "Next"; readonly next: Manifest }
  | { readonly _tag: "Discard"; readonly why: string } => {
  const c = checkpoint.generation;
  if (m.checkpoint.generation >= c)
    return { _tag: "Discard", why: "a checkpoint at least as new is active" };
  if (!m.increments.some((d) => d.generation === c + 1 && d.publicationId === checkpoint.after))
    return { _tag: "Discard", why: "the manifest no longer continues the checkpointed state" };
  if (!checkpointDue(m, options)) return { _tag: "Discard", why: "the tail is short again" };
  const replaced = m.increments.filter((d) => d.generation <= c);
  const kept = m.increments.filter((d) => d.generation > c);
  if (!kept.some((d) => d.publicationId === m.head))
    return { _tag: "Discard", why: "the head would leave the active chain" };
  const previous: PackChain = { checkpoint: m.checkpoint, increments: replaced };
  return {
    _tag: "Next",
    next: {
      version: 1,
      generation: m.generation + 1,
      head: m.head,
      checkpoint: checkpoint.descriptor,
      increments: kept,
      retained: [previous, ...m.retained].slice(0, options.retainedCheckpoints),
    },
  };
};

/** What became of a checkpoint. */
export type CheckpointOutcome =
  | { readonly _tag: "Published"; readonly manifest: Manifest }
  | { readonly _tag: "Discarded"; readonly why: string };

const pause = (attempt: number): Effect.Effect<void> =>
  Random.nextIntBetween(0, Math.min(1000, 10 * 2 ** attempt) + 1).pipe(
    Effect.flatMap((ms) => Effect.sleep(Duration.millis(ms))),
  );

/**
 * Uploads a prepared checkpoint and swaps it into `current` with a compare-and-swap,
 * re-planning against the re-read manifest after a lost race (a few times, with
 * backoff) and discarding it when it no longer fits. A lost response of the swap is
 * resolved by the checkpoint's own publication id. A discarded pack stays behind as an
 * orphan for cleanup. Fails only on store or integrity errors (callers ignore them).
 */
export const publishCheckpoint = (
  call: CopyCall,
  checkpoint: PreparedCheckpoint,
): Effect.Effect<CheckpointOutcome, DomainError> =>
  Effect.gen(function* () {
    // The segment first: once the checkpoint is in `current`, its history is in the store.
    yield* uploadPack(call.store, checkpoint.history.key, checkpoint.history.bytes, {
      kind: "history",
      generation: String(checkpoint.generation),
    });
    yield* uploadPack(call.store, checkpoint.key, checkpoint.bytes, {
      size: String(checkpoint.descriptor.size),
      sha256: checkpoint.descriptor.sha256,
      kind: "checkpoint",
      generation: String(checkpoint.generation),
    });
    yield* reach(call.options.failpoint, "before-checkpoint-cas");
    for (let attempt = 0; attempt < checkpointAttempts; attempt++) {
      if (attempt > 0) yield* pause(attempt - 1);
      const { manifest, etag } = yield* readManifest(call.store);
      if (Option.isNone(manifest)) return { _tag: "Discarded", why: "the manifest is gone" };
      const plan = planCheckpoint(manifest.value, checkpoint, call.options);
      if (plan._tag === "Discard") return { _tag: "Discarded", why: plan.why };
      const outcome = yield* publishManifest(
        call.store,
        plan.next,
        etag,
        checkpoint.descriptor.publicationId,
      );
      if (outcome._tag === "Accepted") {
        rememberWritten(
          call.store.identity,
          Option.map(outcome.etag, (written) => ({ manifest: plan.next, etag: written })),
        );
        return { _tag: "Published", manifest: plan.next };
      }
    }
    return { _tag: "Discarded", why: "lost the race for current too often" };
  });
