/**
 * A publication, planned: the pack of a commit's merge on top of a remote state, what
 * must be durable locally before `current` may name it, and the swap of `current` that
 * publishes a batch of them (publishBatch.ts, staging.ts).
 */
import { Clock, Effect, Option } from "effect";
import { createHash } from "node:crypto";
import type { DomainError, FileIssue } from "../../../domain/errors.js";
import { packKey, type Manifest, type PackDescriptor } from "../../../domain/manifest.js";
import { encodePack, type PackHeader } from "../../../domain/pack.js";
import { diffTrees } from "../../../domain/treeDiff.js";
import type { Tree } from "../../../domain/tree.js";
import type { Author } from "../../Notebook.js";
import type { Prepared, Swap, Swapped } from "./publishBatch.js";
import { contended, noteContention, probeStaged, stagedSwap } from "./staging.js";
import { missedWritten, rememberWritten } from "./lastWritten.js";
import { recentPacks } from "./recentPacks.js";
import type { CopyCall } from "../shared/context.js";
import { reach } from "../shared/failpoints.js";
import { tidyAfterAnswer } from "../shared/afterAnswer.js";
import { saveIntent } from "../workingCopy/rewriteIntent.js";
import { localFailure, privateRootNamed } from "../shared/failures.js";
import { packFile, type BlobRef } from "../workingCopy/privateState.js";
import { alongside } from "../shared/pooled.js";
import { publishManifest, uploadPack, type RemoteRead, type RemoteView } from "./remote.js";
import { viewTree } from "../workingCopy/settle.js";
import type { Scan } from "../workingCopy/workingCopy.js";

const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");

/** A publication `current` accepted, before the working copy has changed. */
export interface Published {
  /** The manifest its batch wrote: its increment, then those of later members if any. */
  readonly manifest: Manifest;
  /** The remote state it was merged onto (its generation is one below its increment's). */
  readonly base: RemoteView;
  /** The accepted state: `base` with the pack applied, its blobs in the cached pack. */
  readonly view: RemoteView;
  readonly pack: { readonly bytes: Uint8Array; readonly sha: string };
}

/** `base` with a pack applied (the pack cached under `sha`). */
const applied = (
  base: RemoteView,
  generation: number,
  head: string,
  sha: string,
  pack: { readonly header: PackHeader; readonly blobStart: number },
): RemoteView => {
  const tree = new Map<string, BlobRef>(pack.header.kind === "checkpoint" ? [] : base.tree);
  for (const path of pack.header.deletes) tree.delete(path);
  for (const put of pack.header.puts)
    tree.set(put.path, {
      id: put.id,
      pack: sha,
      offset: pack.blobStart + put.offset,
      size: put.size,
    });
  return { generation, head, tree };
};

/**
 * What must be durable locally before `current` may accept a publication: the pack in
 * the object cache and the rewrite intent naming the publication, so that a process
 * killed right after the swap is recovered against the state it published.
 */
const prepareLocally = (
  call: CopyCall,
  scan: Scan,
  merged: Tree,
  view: RemoteView,
  pack: { readonly bytes: Uint8Array; readonly sha: string },
): Effect.Effect<void, DomainError> =>
  // Both in parallel: the intent is used only once `current` names its publication, and
  // the swap waits for both, so neither needs the other on disk first.
  alongside(
    call.fs
      .writeFileAtomic(packFile(call.copyDir, pack.sha), pack.bytes, {
        mode: 0o600,
        durable: true,
      })
      .pipe(
        // The process's other copies link to it rather than write it again.
        Effect.tap(() =>
          recentPacks.cachedAt(call.store.identity, pack.sha, packFile(call.copyDir, pack.sha)),
        ),
        // Before the swap: "the published pack" read as a commit that had landed.
        Effect.mapError((error) =>
          localFailure(
            error,
            `caching the pack to publish in the ${privateRootNamed}; nothing was published`,
          ),
        ),
      ),
    Option.match(call.state, {
      onNone: () => Effect.void,
      onSome: (state) => saveIntent(call, state, scan, merged, view, view.head),
    }),
  ).pipe(Effect.asVoid);

/** What an attempt concluded without publishing. */
export type Conclusion =
  | {
      readonly kind: "conflict";
      readonly remote: RemoteRead;
      readonly merged: Tree;
      readonly conflicts: ReadonlyArray<FileIssue>;
    }
  | { readonly kind: "nothing" | "unverified"; readonly remote: RemoteRead; readonly merged: Tree };

/** An attempt's conclusion as its batch member. */
export const concluded = (conclusion: Conclusion): Prepared<Conclusion> => ({
  _tag: "Concluded",
  conclusion,
});

/** A publication prepared on top of a remote state, ready to upload and swap in. */
export interface Planned {
  /** The manifest that publishes it: `remote`'s with its increment added. */
  readonly next: Manifest;
  /** The remote state with the pack applied. */
  readonly view: RemoteView;
  readonly pack: { readonly bytes: Uint8Array; readonly sha: string };
  /** Uploads the pack and makes the local records durable (before any swap). */
  readonly upload: Effect.Effect<void, DomainError>;
}

/** A publication planned in one attempt: the remote state it merged onto and its merge. */
export interface PlannedAttempt {
  readonly remote: RemoteRead;
  readonly merged: Tree;
  readonly plan: Planned;
}

/**
 * Prepares one publication on top of `remote`: the pack (an increment, or the first
 * checkpoint when `current` is absent) and the manifest naming it. The pack is
 * remembered among the recent packs at once: the members of its batch after it merge
 * onto it (publishBatch.ts).
 */
export const planPublication = (
  call: CopyCall,
  remote: RemoteRead,
  scan: Scan,
  merged: Tree,
  author: Author,
  message: string,
): Effect.Effect<Planned, DomainError> =>
  Effect.gen(function* () {
    const base = remote.view;
    const first = Option.isNone(remote.manifest);
    const generation = base.generation + 1;
    const publicationId = yield* call.ids.uuidv7;
    const now = yield* Clock.currentTimeMillis;
    const files = new Map<string, Uint8Array | undefined>();
    const remoteIds = viewTree(base);
    const paths = first ? [...merged.keys()] : diffTrees(remoteIds, merged);
    for (const path of paths) {
      const id = merged.get(path);
      files.set(path, id === undefined ? undefined : yield* call.blobs.load(id));
    }
    const kind = first ? "checkpoint" : "increment";
    const { bytes, header, blobStart } = encodePack({
      kind,
      generation,
      publicationId,
      baseGeneration: base.generation,
      publication: {
        message,
        time: new Date(now).toISOString(),
        author: { name: author.name, version: author.version },
      },
      files,
    });
    const key = packKey(kind, generation, publicationId);
    const sha = sha256(bytes);
    const view = applied(base, generation, publicationId, sha, { header, blobStart });
    const descriptor: PackDescriptor = {
      key,
      generation,
      size: bytes.length,
      sha256: sha,
      publicationId,
    };
    const next: Manifest = Option.match(remote.manifest, {
      onNone: () => ({
        version: 1,
        generation,
        head: publicationId,
        checkpoint: descriptor,
        increments: [],
        retained: [],
      }),
      onSome: (m) => ({
        ...m,
        generation,
        head: publicationId,
        increments: [...m.increments, descriptor],
      }),
    });
    recentPacks.remember(call.store.identity, sha, bytes);
    // What must be done before `current` may name the pack: the pack uploaded, and the
    // pack cached and the intent written locally. The store stages the manifest's write
    // meanwhile (putAfter), so only its commit follows them.
    const upload = alongside(
      uploadPack(call.store, key, bytes, {
        size: String(bytes.length),
        sha256: sha,
        kind,
        generation: String(generation),
      }),
      prepareLocally(call, scan, merged, view, { bytes, sha }),
    ).pipe(Effect.zipRight(reach(call.options.failpoint, "after-pack-upload")));
    return { next, view, pack: { bytes, sha }, upload };
  });

/** The debug record of each accepted swap of `current` (annotated with its publications). */
export const swapLog = "swapped current";

/**
 * The swap of `current` for a batch (publishBatch.ts): `next` conditional on `from`'s
 * ETag, once `after` has succeeded — staged for other writers to include, and
 * including theirs, while this process contends for the store (staging.ts). Remembers
 * what it wrote (lastWritten.ts), or, when a swap that started from what this process
 * last wrote lost, that someone else writes too; a lost race makes the next commits
 * on the store stage.
 */
export const swapCurrent =
  (store: CopyCall["store"], nowMs: number): Swap =>
  (next, from, after, members) => {
    const baseGeneration = Option.match(from.manifest, {
      onNone: () => 0,
      onSome: (m) => m.generation,
    });
    // One record per accepted swap (the fleet benchmark counts swaps per commit by it).
    const remember = (written: Manifest, etag: Option.Option<string>) =>
      Effect.logDebug(swapLog).pipe(
        Effect.annotateLogs("publications", written.generation - baseGeneration),
        Effect.zipRight(
          Effect.sync(() =>
            rememberWritten(
              store.identity,
              Option.map(etag, (tag) => ({ manifest: written, etag: tag })),
            ),
          ),
        ),
      );
    const lost = (): Swapped => {
      if (from.fromWritten) missedWritten(store.identity, nowMs);
      noteContention(store.identity, nowMs);
      return { _tag: "Lost" };
    };
    if (
      contended(store.identity, nowMs) &&
      Option.isSome(from.manifest) &&
      Option.isSome(from.etag)
    )
      return stagedSwap({
        store,
        base: from.manifest.value,
        etag: from.etag.value,
        next,
        members,
        after,
      }).pipe(
        Effect.flatMap((outcome): Effect.Effect<Swapped> => {
          switch (outcome._tag) {
            case "Accepted":
              return Effect.as(remember(outcome.written, outcome.etag), {
                _tag: "Accepted",
                etag: outcome.etag,
              });
            case "Included":
              return Effect.succeed(outcome);
            case "Lost":
              return Effect.sync(lost);
          }
        }),
      );
    // Whether others are staging: asked beside the swap, never waited for (staging.ts).
    const probe = Option.match(from.manifest, {
      onNone: () => Effect.void,
      onSome: (base) => tidyAfterAnswer(probeStaged(store, base.generation)),
    });
    return probe
      .pipe(Effect.zipRight(publishManifest(store, next, from.etag, next.head, after)))
      .pipe(
        Effect.flatMap((outcome): Effect.Effect<Swapped> =>
          outcome._tag === "LostRace"
            ? Effect.sync(lost)
            : Effect.as(remember(next, outcome.etag), { _tag: "Accepted", etag: outcome.etag }),
        ),
      );
  };
