/**
 * A commit's last steps once `current` accepted its publication: the working copy
 * settled on the accepted state, the answer's line counts, and store maintenance
 * (checkpoint, cleanup) that never fails the commit. A failure between acceptance and
 * the settled copy is never OK and never a plain error (publishedButUnsettled).
 */
import { Cause, Effect, Option } from "effect";
import { domainError, type DomainError } from "../../../domain/errors.js";
import { allDescriptors, type Manifest } from "../../../domain/manifest.js";
import { type FileChange, diffTrees, fileChanges, withoutHeld } from "../../../domain/treeDiff.js";
import type { FileStat, Tree } from "../../../domain/tree.js";
import {
  prepareCheckpoint,
  publishCheckpoint,
  type PreparedCheckpoint,
} from "../maintenance/checkpoint.js";
import { cleanup } from "../maintenance/cleanup.js";
import { takeSeen } from "./staging.js";
import type { CopyCall } from "../shared/context.js";
import { reach } from "../shared/failpoints.js";
import { clearIntent } from "../workingCopy/rewriteIntent.js";
import { conflictError, synchronise } from "../pull/pull.js";
import { diffStats, scanTree, settle, viewTree } from "../workingCopy/settle.js";
import type { Scan } from "../workingCopy/workingCopy.js";
import type { Published, PlannedAttempt } from "./plan.js";

/** The successful result of a commit. */
export interface Committed {
  readonly generation: number;
  /** What the publication added over the remote state it was based on (empty for a no-op). */
  readonly files: ReadonlyArray<FileStat>;
  /** What the commit wrote into the working copy from others' publications (merged in). */
  readonly incoming: ReadonlyArray<FileChange>;
  /**
   * Set when the call first completed an earlier commit of this copy that had stopped
   * after `current` accepted its publication (recoverFirst in commit.ts): that
   * publication's generation. Its files are not in `files`, which are this call's own.
   */
  readonly interruptedCommit?: { readonly generation: number };
}

/**
 * What failed after the publication, for the person: the store (reading the accepted
 * state and its packs back) or this machine. Calling a store timeout "a local step" sent
 * people looking for a disk or permission problem that was not there.
 */
const whatFailed = (failure: DomainError): string =>
  failure.code === "STORAGE_FAILURE" || failure.code === "STORAGE_INTEGRITY"
    ? "reading the notebook back from the store failed"
    : "a local step failed";

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
  Effect.logError(`the publication was accepted, then ${whatFailed(failure)}`, failure).pipe(
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
            ? `Your changes were published, then ${whatFailed(failure)}; the working copy was resynchronised. Call notes_pull to check it.`
            : `Your changes were published, then ${whatFailed(failure)}; call notes_pull to bring the working copy up to date.`,
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
export const complete = (
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
    const settled = yield* settle(call, scan, merged, ready.view, "yes", true, "afterAnswer");
    yield* maintain(call, ready.checkpoint);
    return {
      generation: ready.view.generation,
      files: ready.files,
      incoming: withoutHeld(fileChanges(scanTree(scan), merged), settled.held),
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
export const completeIncluded = (
  call: CopyCall,
  planned: PlannedAttempt,
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
      return yield* Effect.fail(conflictError(synchronised.conflicts, { _tag: "Published" }));
    return {
      generation,
      files,
      incoming: synchronised.incoming(),
    };
  });
