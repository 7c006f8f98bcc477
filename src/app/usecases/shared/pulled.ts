/**
 * The one answer for a working copy that was never pulled, for every call that needs a
 * pulled copy (commit, log, status, diff, show, restore, revert).
 */
import { Effect, Option } from "effect";
import { domainError, type DomainError } from "../../../domain/errors.js";
import type { CopyState } from "../workingCopy/privateState.js";
import { refuseNestedCopies } from "../workingCopy/nesting.js";
import { refuseCopyOfOtherStore } from "../workingCopy/storeOfCopy.js";
import type { CopyCall } from "./context.js";

/** INVALID_REQUEST/NOT_PULLED: what a call on a copy never pulled fails with. */
export const notPulledError: DomainError = domainError({
  code: "INVALID_REQUEST",
  reason: "NOT_PULLED",
  message: "This working copy was never pulled; call notes_pull first.",
});

/**
 * The state of the copy `call` holds; fails with {@link notPulledError} when it has none,
 * or NESTED_WORKING_COPY naming the copy it lies in or holds (a subdirectory of a copy is
 * no copy of its own, and "pull first" would send the caller to a pull that is refused).
 */
export const pulledState = (call: CopyCall): Effect.Effect<CopyState, DomainError> =>
  // First, whether the directory was last pulled from another store: a copy this store
  // never pulled would be taken over, and one it knows may since have been pulled afresh
  // from the other (moved aside and pulled again), its notes then that store's.
  refuseCopyOfOtherStore(call.fs, call.options.privateRoot, call.dir, call.store.identity).pipe(
    Effect.zipRight(
      Option.match(call.state, {
        onSome: Effect.succeed,
        onNone: () =>
          refuseNestedCopies(
            call.fs,
            call.options.privateRoot,
            call.dir,
            call.tree,
            call.store.identity,
          ).pipe(Effect.zipRight(Effect.fail(notPulledError))),
      }),
    ),
  );
