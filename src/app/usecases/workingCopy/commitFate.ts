/**
 * The fate of a commit whose process stopped between writing its intent (naming its
 * publication, rewriteIntent.ts) and settling the working copy: learnt as the copy's
 * next commit learns it (recoverFirst in commit/commit.ts). Its staged record, if it is
 * still in the store, is withdrawn first, so that no other writer's swap can take it
 * after `current` was read; `current` then says, for good, whether it landed.
 */
import { Effect, Either, Option } from "effect";
import type { CopyCall } from "../shared/context.js";
import { readManifest } from "../commit/remote.js";
import { withdrawStaged } from "../commit/staging.js";
import { landedGeneration, type Intent } from "./rewriteIntent.js";

/**
 * Whether the publication `intent` names landed: `Some(true)` when `current` names it,
 * `Some(false)` when it does not (and, its staged record withdrawn, never will), `None`
 * when the store could not be read (a warning; the caller must then assume nothing) or is
 * not the copy's (another store's session: logged at debug). Never fails.
 */
export const commitLanded = (
  call: CopyCall,
  intent: Intent,
): Effect.Effect<Option.Option<boolean>> =>
  Effect.gen(function* () {
    if (intent.publication === null) return Option.some(false);
    // Another store's session (a reaper on a different store): only that store can say,
    // and it is not this process's to ask. Kept, as docs/logging.md says, and quietly: a
    // warning that "the store" could not be read misled at every start.
    if (call.options.otherStoreSession === true) {
      yield* Effect.logDebug(
        "kept an ended session of another store: only that store can tell whether its interrupted commit landed",
      ).pipe(Effect.annotateLogs("notebookDirectory", call.dir));
      return Option.none();
    }
    // Interruptible even where the caller is not (a reaper's session is): a store that
    // does not answer must not hold up the end of the process that asked. Nothing was
    // changed yet when it is interrupted (a withdrawal is done again by the next try).
    const read = yield* Effect.interruptible(
      withdrawStaged(call.store, intent.publication, intent.generation).pipe(
        Effect.zipRight(Effect.either(readManifest(call.store))),
      ),
    );
    if (Either.isLeft(read)) {
      yield* Effect.logWarning(
        "could not learn from the store whether an interrupted commit landed",
        read.left,
      );
      return Option.none();
    }
    return Option.some(Option.isSome(landedGeneration(Option.some(intent), read.right.manifest)));
  });
