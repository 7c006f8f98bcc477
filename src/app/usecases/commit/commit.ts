/** The commit use case (SPEC §6.2): publish a working copy's edits with one compare-and-swap. */
import { Cause, Clock, Effect, Either, Option } from "effect";
import { domainError, type DomainError, type FileIssue } from "../../../domain/errors.js";
import { findMarkerBlocks } from "../../../domain/markers.js";
import {
  allDescriptors,
  packKey,
  type Manifest,
  type PackDescriptor,
} from "../../../domain/manifest.js";
import { encodePack, type PackHeader } from "../../../domain/pack.js";
import { diffTrees, type FileChange, fileChanges } from "../../../domain/treeDiff.js";
import { idsOf, type FileStat, type Tree } from "../../../domain/tree.js";
import { compareCodeUnits, utf8Length } from "../../../domain/paths.js";
import { noPathSets } from "../../../domain/pathSets.js";
import { createHash } from "node:crypto";
import type { Author } from "../../Notebook.js";
import { makeBlobSource } from "../workingCopy/blobs.js";
import {
  prepareCheckpoint,
  publishCheckpoint,
  type PreparedCheckpoint,
} from "../maintenance/checkpoint.js";
import { cleanup } from "../maintenance/cleanup.js";
import { backoff, busyError, placeWaitBudgetMs, type Setback } from "./contention.js";
import { inBatch, type Prepared, type Swap, type Swapped } from "./publishBatch.js";
import { contended, noteContention, probeStaged, stagedSwap, takeSeen } from "./staging.js";
import { lastWritten, missedWritten, rememberWritten } from "./lastWritten.js";
import { recentPacks } from "./recentPacks.js";
import type { CopyCall } from "../shared/context.js";
import { reach } from "../shared/failpoints.js";
import { tidyAfterAnswer } from "../shared/afterAnswer.js";
import { clearIntent, loadIntent, saveIntent } from "../workingCopy/rewriteIntent.js";
import { localFailure } from "../shared/failures.js";
import { refuseMassDelete } from "./massDelete.js";
import { loadText, runMerge } from "../pull/mergeRun.js";
import {
  loadStats,
  mergeBaseOf,
  packFile,
  type BlobRef,
  type CopyState,
} from "../workingCopy/privateState.js";
import { enforcePathSets } from "./pathSetGuard.js";
import { refuseInvalidAttributes } from "./attributesGuard.js";
import { alongside, forEachPooled } from "../shared/pooled.js";
import { conflictError, knownView, synchronise } from "../pull/pull.js";
import {
  publishManifest,
  readRemote,
  samePublication,
  uploadPack,
  type RemoteRead,
  type RemoteView,
} from "./remote.js";
import { diffStats, scanLearnt, scanTree, settle, viewTree } from "../workingCopy/settle.js";
import { scanWorkingCopy, type Scan } from "../workingCopy/workingCopy.js";

/** The most bytes a commit message may have. */
export const maxMessageBytes = 16_384;

/** Validates a commit message (SPEC §2.1): non-blank, no U+0000, at most 16,384 bytes. */
export const validateMessage = (message: string): Effect.Effect<void, DomainError> => {
  if (message.includes("\u0000")) {
    return Effect.fail(
      domainError({
        code: "INVALID_REQUEST",
        reason: "INVALID_ARGUMENT",
        message: "The message must not contain U+0000.",
      }),
    );
  }
  if (/^\p{White_Space}*$/u.test(message)) {
    return Effect.fail(
      domainError({
        code: "INVALID_REQUEST",
        reason: "MESSAGE_BLANK",
        message: "The message must contain visible text.",
      }),
    );
  }
  if (utf8Length(message) > maxMessageBytes) {
    return Effect.fail(
      domainError({
        code: "INVALID_REQUEST",
        reason: "MESSAGE_TOO_LONG",
        message: "The message is longer than 16,384 UTF-8 bytes.",
      }),
    );
  }
  return Effect.void;
};

/** Refuses complete marker blocks in any file the copy changed (SPEC §6.3). */
const refuseMarkers = (call: CopyCall, base: Tree, local: Tree): Effect.Effect<void, DomainError> =>
  Effect.gen(function* () {
    const changed = diffTrees(base, local).filter((path) => local.has(path));
    const found: FileIssue[] = [];
    yield* forEachPooled(
      changed,
      (path) =>
        loadText(call.blobs, local.get(path) ?? "").pipe(
          Effect.map((text) => {
            const ranges = findMarkerBlocks(text);
            if (ranges.length > 0) found.push({ path, reason: "MARKER_BLOCK", ranges });
          }),
        ),
      { workers: 8, itemsPerWorker: 1 },
    );
    if (found.length === 0) return;
    found.sort((a, b) => compareCodeUnits(a.path, b.path));
    return yield* Effect.fail(
      domainError({
        code: "CONTENT_CONFLICT",
        reason: "UNRESOLVED_MARKERS",
        message:
          "Conflict marker blocks are still in these files; resolve them, then call notes_commit again. Nothing was published.",
        files: found,
      }),
    );
  });

const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");

/** A publication `current` accepted, before the working copy has changed. */
interface Published {
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
        Effect.mapError((error) => localFailure(error, "caching the published pack")),
      ),
    Option.match(call.state, {
      onNone: () => Effect.void,
      onSome: (state) => saveIntent(call, state, scan, merged, view, view.head),
    }),
  ).pipe(Effect.asVoid);

/** What an attempt concluded without publishing. */
type Conclusion =
  | {
      readonly kind: "conflict";
      readonly remote: RemoteRead;
      readonly merged: Tree;
      readonly conflicts: ReadonlyArray<FileIssue>;
    }
  | { readonly kind: "nothing" | "unverified"; readonly remote: RemoteRead; readonly merged: Tree };

const concluded = (conclusion: Conclusion): Prepared<Conclusion> => ({
  _tag: "Concluded",
  conclusion,
});

/** A publication prepared on top of a remote state, ready to upload and swap in. */
interface Planned {
  /** The manifest that publishes it: `remote`'s with its increment added. */
  readonly next: Manifest;
  /** The remote state with the pack applied. */
  readonly view: RemoteView;
  readonly pack: { readonly bytes: Uint8Array; readonly sha: string };
  /** Uploads the pack and makes the local records durable (before any swap). */
  readonly upload: Effect.Effect<void, DomainError>;
}

/**
 * Prepares one publication on top of `remote`: the pack (an increment, or the first
 * checkpoint when `current` is absent) and the manifest naming it. The pack is
 * remembered among the recent packs at once: the members of its batch after it merge
 * onto it (publishBatch.ts).
 */
const planPublication = (
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
const swapCurrent =
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

/**
 * A failure after `current` accepted the publication but before the working copy was
 * touched: never OK and never a plain error (the changes are published). Tries one
 * resynchronisation (a pull-style merge, lossless: the copy's edits are in `current`)
 * and reports RECOVERY_FAILURE with remoteAccepted `yes`.
 */
const publishedButUnsettled = (
  call: CopyCall,
  failure: DomainError,
): Effect.Effect<never, DomainError> =>
  Effect.logError("the publication was accepted, then a local step failed", failure).pipe(
    Effect.zipRight(
      synchronise(call).pipe(
        Effect.map((done) => done.conflicts.length === 0),
        Effect.orElseSucceed(() => false),
      ),
    ),
    Effect.flatMap((resynchronized) =>
      Effect.fail(
        domainError({
          code: "RECOVERY_FAILURE",
          reason: "UNEXPECTED_FAILURE",
          message: resynchronized
            ? "Your changes were published, then a local step failed; the working copy was resynchronised. Call notes_pull to check it."
            : "Your changes were published, then a local step failed; call notes_pull to bring the working copy up to date.",
          recovery: { stage: "after-publication", remoteAccepted: "yes", resynchronized },
        }),
      ),
    ),
  );

/**
 * Store maintenance after a settled publication: publish the prepared checkpoint and,
 * once it is in, clean up old packs. Never fails and never fails the commit: every
 * failure is logged. Only an interruption (a crash, a cancelled call) propagates.
 */
const maintain = (
  call: CopyCall,
  checkpoint: Option.Option<PreparedCheckpoint>,
): Effect.Effect<void> =>
  Option.match(checkpoint, {
    onNone: () => Effect.void,
    onSome: (prepared) =>
      Effect.gen(function* () {
        const outcome = yield* publishCheckpoint(call, prepared);
        if (outcome._tag === "Discarded") {
          yield* Effect.logDebug("checkpoint discarded").pipe(
            Effect.annotateLogs("why", outcome.why),
          );
          return;
        }
        yield* Effect.logInfo("checkpoint published").pipe(
          Effect.annotateLogs("generation", outcome.manifest.generation),
        );
        yield* reach(call.options.failpoint, "before-cleanup");
        const report = yield* cleanup(call.store);
        yield* Effect.logDebug("cleanup done").pipe(
          Effect.annotateLogs({ listed: report.listed, deleted: report.deleted }),
        );
      }).pipe(
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.interrupt
            : Effect.logWarning("checkpoint or cleanup failed; the commit stands", cause),
        ),
      ),
  });

/**
 * Finishes an accepted publication: adopts its pack, takes the line counts, prepares a
 * checkpoint if one is due (while every cached blob is still present), settles the
 * working copy on the accepted tree, then runs store maintenance.
 */
const complete = (
  call: CopyCall,
  scan: Scan,
  merged: Tree,
  published: Published,
): Effect.Effect<Committed, DomainError> =>
  Effect.gen(function* () {
    const remoteIds = viewTree(published.base);
    const ready = yield* Effect.gen(function* () {
      yield* reach(call.options.failpoint, "after-cas");
      // The pack was cached before the swap; its blobs now serve the rewrite.
      call.blobs.addPack(published.pack.sha, published.pack.bytes);
      const view = published.view;
      // Line counts read the replaced contents, so they are taken before the rewrite.
      const files = yield* diffStats(call.blobs, diffTrees(remoteIds, merged), remoteIds, merged);
      const checkpoint = yield* prepareCheckpoint(call, published.manifest, published.base).pipe(
        Effect.catchAll((failure) =>
          Effect.logWarning("could not build a checkpoint; the commit stands", failure).pipe(
            Effect.as(Option.none<PreparedCheckpoint>()),
          ),
        ),
      );
      return { view, files, checkpoint };
    }).pipe(Effect.catchAll((failure) => publishedButUnsettled(call, failure)));
    // The call's last settle: its prune can wait for the answer (maintenance only
    // writes to the store).
    yield* settle(call, scan, merged, ready.view, "yes", true, "afterAnswer");
    yield* maintain(call, ready.checkpoint);
    return {
      generation: ready.view.generation,
      files: ready.files,
      incoming: fileChanges(scanTree(scan), merged),
    };
  });

/**
 * Finishes a publication another writer's swap accepted (staging.ts): it holds the
 * copy's changes at a generation of its own, after publications this copy has not
 * seen. The copy is brought up to `current` as a recovering one would be — its rewrite
 * intent names the publication, so the merge starts from the state it published
 * (rewriteIntent.ts) — and the answer reports the publication's own generation and
 * line counts. Conflicts can only come from a file a person saved during the call that
 * a later publication changed too: they are written as a pull writes them, and the
 * answer says the changes were published.
 */
const completeIncluded = (
  call: CopyCall,
  planned: { readonly remote: RemoteRead; readonly merged: Tree; readonly plan: Planned },
  manifest: Manifest,
): Effect.Effect<Committed, DomainError> =>
  Effect.gen(function* () {
    const remoteIds = viewTree(planned.remote.view);
    const head = planned.plan.view.head;
    // The pack was cached before the swap; its blobs serve the line counts.
    call.blobs.addPack(planned.plan.pack.sha, planned.plan.pack.bytes);
    const own = allDescriptors(manifest).find((d) => d.publicationId === head);
    // Included means `manifest` names it (staging.ts); anything else is not proven.
    if (own === undefined)
      return yield* Effect.fail(
        domainError({
          code: "STORAGE_FAILURE",
          reason: "PUBLICATION_UNKNOWN",
          message:
            "The store did not show this commit's publication where it was expected; pull to see whether it landed.",
        }),
      );
    const generation = own.generation;
    const files = yield* diffStats(
      call.blobs,
      diffTrees(remoteIds, planned.merged),
      remoteIds,
      planned.merged,
    ).pipe(Effect.catchAll((failure) => publishedButUnsettled(call, failure)));
    const synchronised = yield* synchronise(
      call,
      "afterAnswer",
      takeSeen(call.store.identity),
    ).pipe(Effect.catchAll((failure) => publishedButUnsettled(call, failure)));
    yield* clearIntent(call).pipe(
      Effect.catchAll((failure) => publishedButUnsettled(call, failure)),
    );
    if (synchronised.conflicts.length > 0)
      return yield* Effect.fail(
        domainError({
          code: "CONTENT_CONFLICT",
          reason: "MERGE_CONFLICT",
          message:
            "Your changes were published; a file saved during the call conflicts with a later publication. Resolve the conflict blocks, then call notes_commit again.",
          files: synchronised.conflicts,
        }),
      );
    return {
      generation,
      files,
      incoming: synchronised.incoming(),
    };
  });

/** The successful result of a commit. */
export interface Committed {
  readonly generation: number;
  /** What the publication added over the remote state it was based on (empty for a no-op). */
  readonly files: ReadonlyArray<FileStat>;
  /** What the commit wrote into the working copy from others' publications (merged in). */
  readonly incoming: ReadonlyArray<FileChange>;
}

/**
 * Commit (SPEC §6.2), in steps:
 * 1. requires a prior pull; resynchronises first a copy whose rewrite (or whose last
 *    commit, after its swap) was interrupted;
 * 2. scans; refuses marker blocks and path-set violations before any remote work;
 * 3. per attempt: reads `current` and merges; writes conflicts into the working copy
 *    without publishing; publishes nothing when the merge equals `current`; refuses a
 *    mass deletion (INVALID_REQUEST/MASS_DELETE, working copy untouched) unless
 *    allowed; uploads a pack and compare-and-swaps `current`;
 * 4. re-merges after each lost race (full-jitter backoff) up to `commitRetries` →
 *    REMOTE_BUSY; each attempt is a member of a batch of this process's commits on
 *    the store, published with one swap (publishBatch.ts), and a commit that gets no
 *    place in a batch within the retry budget is REMOTE_BUSY too;
 * 5. once acceptance is proven: settles the working copy, then runs store maintenance
 *    (checkpoint, cleanup) that never fails the commit. OK only after acceptance.
 */
export const commit = (
  call: CopyCall,
  message: string,
  author: Author,
): Effect.Effect<Committed, DomainError> =>
  Effect.gen(function* () {
    if (Option.isNone(call.state)) {
      return yield* Effect.fail(
        domainError({
          code: "INVALID_REQUEST",
          reason: "NOT_PULLED",
          message: "This working copy was never pulled; call notes_pull first.",
        }),
      );
    }
    let state: CopyState = call.state.value;
    // A rewrite that was interrupted, or an earlier commit that may have been accepted
    // without its copy being settled: resynchronise first (workingCopy/rewriteIntent.ts).
    const intent = yield* loadIntent(call, state);
    const unsettled = Option.isSome(intent) && intent.value.publication !== null;
    if (state.recoveryRequired || unsettled) {
      yield* Effect.logDebug("resynchronising before the commit").pipe(
        Effect.annotateLogs({ recoveryRequired: state.recoveryRequired, unsettled }),
      );
      const resynchronised = yield* synchronise(call);
      if (unsettled) yield* clearIntent(call);
      if (resynchronised.conflicts.length > 0)
        return yield* Effect.fail(conflictError(resynchronised.conflicts, "notes_commit"));
      state = resynchronised.state;
    }
    // After a resynchronisation the content source may point into cached packs that
    // settling it pruned, so the commit starts from a fresh one.
    const current: CopyCall = {
      ...call,
      state: Option.some(state),
      blobs: state === call.state.value ? call.blobs : makeBlobSource(call.fs, call.copyDir),
    };
    // The merge base: the baseline, but for files a person saved during an earlier call.
    const mergeBase = mergeBaseOf(state);
    current.blobs.addTree(state.baseline);
    if (mergeBase !== state.baseline) current.blobs.addTree(mergeBase);
    const stats = yield* loadStats(current.fs, current.copyDir, current.memo);
    const scan: Scan = yield* scanWorkingCopy(
      current.tree,
      stats.stamps,
      stats.recordedAtMs,
      current.blobs,
    );
    const base = knownView(current.state);
    const baseIds = idsOf(mergeBase);
    const local = scanTree(scan);
    yield* refuseMarkers(current, baseIds, local);
    yield* enforcePathSets(current, current.options.pathSets ?? noPathSets, scan, baseIds, local);
    yield* refuseInvalidAttributes(current.blobs, baseIds, local);
    let known = base;
    // Taken once per commit: staged, the commit that has waited longest swaps for all.
    const ticket = yield* current.ids.uuidv7;
    // Only the time spent waiting for a place in a batch counts against this budget.
    let placeWaitLeftMs = placeWaitBudgetMs(current.options.commitRetries);
    // An attempt that started from what this process last wrote (lastWritten.ts) or
    // from the tip of its batch (publishBatch.ts) and lost its swap, or came to any
    // conclusion but publishing, is retried at once after reading `current`, without
    // counting as an attempt. One whose batch another member aborted is retried at once
    // too, but counts: a store that keeps failing others' uploads ends it.
    let retryAtOnce = false;
    let readCurrent = false;
    let setback: Setback = "lost";
    for (let attempt = 0; attempt <= current.options.commitRetries; attempt++) {
      if (attempt > 0 && !retryAtOnce) yield* backoff(attempt - 1);
      retryAtOnce = false;
      // From reading `current` to its swap, as a member of a batch of this process.
      const waitStartedMs = yield* Clock.currentTimeMillis;
      let placeCameMs = waitStartedMs;
      let planned:
        { readonly remote: RemoteRead; readonly merged: Tree; readonly plan: Planned } | undefined;
      let onTip = false;
      const took = yield* inBatch(
        current.store.identity,
        placeWaitLeftMs,
        readCurrent,
      )((start) =>
        Effect.gen(function* () {
          placeCameMs = yield* Clock.currentTimeMillis;
          // Staging, writers publish on what `current` holds: what was just read of it
          // while staging, if anything (staging.ts) — a read like any other.
          const fromSeen =
            start._tag === "Own" && !readCurrent && contended(current.store.identity, placeCameMs);
          const startFrom =
            start._tag === "Tip"
              ? Option.some({ manifest: start.manifest, etag: start.etag })
              : readCurrent
                ? Option.none()
                : fromSeen
                  ? takeSeen(current.store.identity)
                  : lastWritten(current.store.identity, placeCameMs);
          const remote = yield* readRemote(current, known, startFrom, true);
          const fromWritten =
            !fromSeen &&
            Option.isSome(startFrom) &&
            Option.contains(remote.etag, startFrom.value.etag);
          if (start._tag === "Tip") {
            // The tip is not accepted yet: never a state to remember as seen.
            onTip = true;
            // Not on the tip (it is older than what this copy has seen, or a pack of it
            // was not at hand and `current` was read instead): try again from `current`.
            if (!fromWritten || !Option.contains(remote.manifest, start.manifest))
              return concluded({ kind: "unverified", remote, merged: local });
          }
          const remoteIds = viewTree(remote.view);
          // Nobody published since the baseline, and no file is held: the merge is the
          // working copy itself.
          const unchanged = state.held.size === 0 && samePublication(remote.view, base);
          const { merged, conflicts } = unchanged
            ? { merged: local, conflicts: [] }
            : yield* runMerge(baseIds, local, remoteIds, current.blobs);
          // What this process last wrote, or a batch's tip, is trusted only to publish on
          // (the swap checks it); any other conclusion is drawn from `current` itself.
          const unverified = concluded({ kind: "unverified", remote, merged });
          if (conflicts.length > 0)
            return fromWritten
              ? unverified
              : concluded({ kind: "conflict", remote, merged, conflicts });
          if (diffTrees(remoteIds, merged).length === 0)
            return fromWritten ? unverified : concluded({ kind: "nothing", remote, merged });
          const massDelete = yield* Effect.either(
            refuseMassDelete(remoteIds, merged, current.options.allowMassDelete ?? false),
          );
          if (Either.isLeft(massDelete))
            return fromWritten ? unverified : yield* Effect.fail(massDelete.left);
          const plan = yield* planPublication(current, remote, scan, merged, author, message);
          planned = { remote, merged, plan };
          return {
            _tag: "Publish",
            from: { manifest: remote.manifest, etag: remote.etag, fromWritten },
            next: plan.next,
            upload: plan.upload,
            member: { pack: plan.pack.bytes, ticket },
            swap: swapCurrent(current.store, placeCameMs),
          } as const;
        }),
      );
      if (Option.isNone(took)) {
        yield* Effect.logDebug("no place in a batch within the retry budget");
        setback = "noPlace";
        break;
      }
      placeWaitLeftMs -= placeCameMs - waitStartedMs;
      const outcome = took.value;
      if (outcome._tag === "Concluded") {
        const conclusion = outcome.conclusion;
        if (!onTip) known = conclusion.remote.view;
        // Settling on what `current` holds ends the call: its prune can wait for the answer.
        const settleOnRemote = (statsChanged: boolean) =>
          settle(
            current,
            scan,
            conclusion.merged,
            conclusion.remote.view,
            "no",
            statsChanged,
            "afterAnswer",
          );
        switch (conclusion.kind) {
          case "conflict":
            yield* settleOnRemote(true);
            return yield* Effect.fail(conflictError(conclusion.conflicts, "notes_commit"));
          case "nothing":
            yield* settleOnRemote(scanLearnt(scan, stats.stamps));
            return {
              generation: conclusion.remote.view.generation,
              files: [],
              incoming: fileChanges(scanTree(scan), conclusion.merged),
            };
          case "unverified":
            readCurrent = true;
            retryAtOnce = true;
            attempt--;
            continue;
        }
      }
      if (planned === undefined) return yield* Effect.die("a publishing member without a plan");
      if (!onTip) known = planned.remote.view;
      switch (outcome._tag) {
        case "Accepted":
          return yield* complete(current, scan, planned.merged, {
            manifest: outcome.manifest,
            base: planned.remote.view,
            view: planned.plan.view,
            pack: planned.plan.pack,
          });
        case "Included":
          return yield* completeIncluded(current, planned, outcome.manifest);
        case "Aborted":
          yield* Effect.logDebug("another member of the batch failed; trying again");
          retryAtOnce = true;
          setback = "aborted";
          break;
        case "Lost":
          setback = "lost";
          if (outcome.fromWritten) {
            retryAtOnce = true;
            attempt--;
          } else if (contended(current.store.identity, yield* Clock.currentTimeMillis)) {
            // Staging: the next round forms as soon as `current` moves; a backoff would
            // only make this writer miss it (staging.ts). It counts as an attempt.
            retryAtOnce = true;
          }
          yield* Effect.logDebug("lost the race for current; re-merging").pipe(
            Effect.annotateLogs("attempt", attempt + 1),
          );
          break;
      }
    }
    return yield* Effect.fail(busyError(setback));
  });
