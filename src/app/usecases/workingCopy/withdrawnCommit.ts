/**
 * A commit answered PUBLICATION_UNKNOWN whose staged record was withdrawn, remembered for
 * as long as it can still land (docs/storage.md, "Staged publications").
 *
 * Why: withdrawing a record does not stop a swap whose writer read it before the delete;
 * that swap can still accept it after this copy read `current` without it and moved on.
 * The copy's next commit (the same edits and more) would then meet its own publication
 * as someone else's change and conflict with its own earlier text. So the copy keeps the
 * publication (rewriteIntent.ts `rebasedIntent`: its id and what it wrote, compactly) in
 * `withdrawn.json`, and when `current` names it, settles on it as recovery settles on a
 * commit whose swap landed unseen.
 *
 * How long: a record is valid only for a swap of the very state it was staged on, and
 * that state is at most the `current` its copy read after the withdrawal (the
 * generation the remembered intent is written against). Once `current` is past that
 * generation without the publication, it can never land, and the file is dropped.
 */
import { join } from "node:path";
import { Effect, Option } from "effect";
import { encodeText } from "../../../domain/content.js";
import type { DomainError } from "../../../domain/errors.js";
import { allDescriptors, type Manifest } from "../../../domain/manifest.js";
import type { CopyCall } from "../shared/context.js";
import { samePublication } from "../commit/remote.js";
import type { CopyState } from "./privateState.js";
import { withdrawStaged } from "../commit/staging.js";
import {
  clearIntent,
  decodeIntentText,
  encodeIntentText,
  intentFile,
  loadIntent,
  rebasedIntent,
  type Intent,
} from "./rewriteIntent.js";

const withdrawnFile = (copyDir: string): string => join(copyDir, "withdrawn.json");

/** The remembered withdrawn commit if it belongs to `state`'s baseline (never fails). */
const loadWithdrawn = (call: CopyCall, state: CopyState): Effect.Effect<Option.Option<Intent>> =>
  call.fs.readFile(withdrawnFile(call.copyDir)).pipe(
    Effect.map((bytes) =>
      Option.filter(Option.fromNullable(decodeIntentText(bytes)), (intent) =>
        samePublication(intent, state),
      ),
    ),
    Effect.orElseSucceed(() => Option.none<Intent>()),
  );

/** The publication id of the remembered withdrawn commit that belongs to `state`, if any. */
export const withdrawnPublication = (
  call: CopyCall,
  state: CopyState,
): Effect.Effect<Option.Option<string>> =>
  loadWithdrawn(call, state).pipe(
    Effect.map(Option.flatMap((intent) => Option.fromNullable(intent.publication))),
  );

/** Whether `manifest` names the publication `id`, active or retained. */
export const namesPublication = (manifest: Manifest, id: string): boolean =>
  allDescriptors(manifest).some((d) => d.publicationId === id);

/**
 * Remembers `intent`'s commit, which `current` did not name once its staged record was
 * withdrawn, against the state the copy was settled on since (`after`). Durable before
 * the caller removes the intent itself, so that a process stopped in between still has
 * one of the two. Best effort: without it the copy may only meet a conflict with its own
 * text later (logged), never lose anything.
 */
export const rememberWithdrawn = (
  call: CopyCall,
  intent: Intent,
  before: CopyState,
  after: CopyState,
): Effect.Effect<void> =>
  call.fs
    .writeFileAtomic(
      withdrawnFile(call.copyDir),
      encodeText(encodeIntentText(rebasedIntent(intent, before.baseline, after))),
      { mode: 0o600, durable: true },
    )
    .pipe(
      Effect.catchAll((error) =>
        Effect.logWarning("could not remember a withdrawn commit's publication", error),
      ),
    );

/** Drops the remembered withdrawn commit (best effort: one that does not belong is never used). */
export const forgetWithdrawn = (call: CopyCall): Effect.Effect<void> =>
  call.fs.removeFile(withdrawnFile(call.copyDir)).pipe(Effect.ignore);

/**
 * Makes the remembered withdrawn commit that belongs to `state` the copy's intent again,
 * so that the next resynchronisation learns its fate as it learns an unsettled commit's
 * (recoverFirst in commit/commit.ts): settled on when `current` names it, remembered
 * again while it can still land, dropped once it cannot. Not over an intent that is
 * still in use (a rewrite to recover, or another unsettled commit) unless `replace`
 * (the caller knows that commit lost for good). Answers whether it did; never fails
 * (a failure leaves things as they were, logged).
 */
export const restoreWithdrawn = (
  call: CopyCall,
  state: CopyState,
  replace: boolean,
): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    const withdrawn = yield* loadWithdrawn(call, state);
    if (Option.isNone(withdrawn)) return false;
    if (!replace) {
      if (state.recoveryRequired) return false;
      const current = yield* loadIntent(call, state);
      if (Option.isSome(current) && current.value.publication !== null) return false;
    }
    const written = yield* call.fs
      .writeFileAtomic(intentFile(call.copyDir), encodeText(encodeIntentText(withdrawn.value)), {
        mode: 0o600,
        durable: true,
      })
      .pipe(
        Effect.as(true),
        Effect.catchAll((error) =>
          Effect.logWarning("could not restore a withdrawn commit's intent", error).pipe(
            Effect.as(false),
          ),
        ),
      );
    if (written) yield* forgetWithdrawn(call);
    return written;
  });

/** A commit of the copy not settled yet, found before a resynchronisation. */
export interface Unsettled {
  /** The commit's intent, when one belongs to the copy's baseline. */
  readonly intent: Option.Option<Intent>;
  /** It was a remembered withdrawn commit, restored for this call. */
  readonly restored: boolean;
}

/**
 * Before a resynchronisation reads `current`: restores the remembered withdrawn commit
 * ({@link restoreWithdrawn}) and withdraws the staged record of the unsettled commit,
 * if any, so that a swap taking it afterwards cannot follow that read unseen (only a
 * swap whose writer read the record before the delete still can: that is what
 * {@link afterResynchronising} remembers). Never fails.
 */
export const beforeResynchronising = (
  call: CopyCall,
  state: CopyState,
  replace: boolean,
): Effect.Effect<Unsettled> =>
  Effect.gen(function* () {
    const restored = yield* restoreWithdrawn(call, state, replace);
    const intent = Option.filter(
      yield* loadIntent(call, state),
      (found) => found.publication !== null,
    );
    if (Option.isSome(intent) && intent.value.publication !== null)
      yield* withdrawStaged(call.store, intent.value.publication, intent.value.generation);
    return { intent, restored };
  });

/**
 * After the resynchronisation settled the copy from `before` on `after` (`landed`: the
 * generation of the unsettled commit's publication when `current` named it, and the
 * copy settled on it): a commit that did not land is remembered while it still can
 * (`current` is still the state the copy read right after the withdrawal, or this is
 * that first read), and its intent removed. Never fails.
 */
export const afterResynchronising = (
  call: CopyCall,
  unsettled: Unsettled,
  before: CopyState,
  after: CopyState,
  landed: Option.Option<number>,
): Effect.Effect<void> =>
  Effect.gen(function* () {
    if (Option.isNone(unsettled.intent)) return;
    const intent = unsettled.intent.value;
    const mayLand =
      Option.isNone(landed) && (!unsettled.restored || after.generation === intent.generation);
    if (mayLand) yield* rememberWithdrawn(call, intent, before, after);
    yield* clearIntent(call);
  });

/**
 * `resynchronise` for a copy with `unsettled` found: when a remembered withdrawn commit
 * was restored and settling on it fails because a content it names can no longer be
 * loaded (STATE_INVALID: its cached pack pruned, and `current` no longer holding that
 * version — a checkpoint absorbed a later change of the file), the commit is dropped
 * and the copy resynchronised as if it had never been remembered (its landing then
 * reads as another writer's change: at worst a conflict with its own text, nothing
 * lost), rather than failing every call. Nothing was written when that fails: the
 * merge loads its contents before the copy is touched.
 */
export const resynchroniseUnsettled = <A>(
  call: CopyCall,
  unsettled: Unsettled,
  resynchronise: Effect.Effect<A, DomainError>,
): Effect.Effect<{ readonly done: A; readonly unsettled: Unsettled }, DomainError> =>
  resynchronise.pipe(
    Effect.map((done) => ({ done, unsettled })),
    Effect.catchIf(
      (error) =>
        unsettled.restored &&
        error.code === "STORAGE_INTEGRITY" &&
        error.reason === "STATE_INVALID",
      (error) =>
        Effect.logWarning(
          "could not settle on a withdrawn commit that landed; merging without it",
          error,
        ).pipe(
          Effect.zipRight(clearIntent(call)),
          Effect.zipRight(resynchronise),
          Effect.map((done) => ({ done, unsettled: { intent: Option.none(), restored: false } })),
        ),
    ),
  );
