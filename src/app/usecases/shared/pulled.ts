/**
 * The one answer for a working copy that was never pulled, for every call that needs a
 * pulled copy (commit, log, status, diff, show, restore, revert).
 */
import { Effect, Option } from "effect";
import { domainError, type DomainError } from "../../../domain/errors.js";
import type { CopyState } from "../workingCopy/privateState.js";
import { containedCopy, enclosingCopy, insideCopyError } from "../workingCopy/nesting.js";
import type { CopyCall } from "./context.js";
import { pathForMessage } from "./failures.js";

/** INVALID_REQUEST/NOT_PULLED: what a call on a copy never pulled fails with. */
export const notPulledError: DomainError = domainError({
  code: "INVALID_REQUEST",
  reason: "NOT_PULLED",
  message: "This working copy was never pulled; call notes_pull first.",
});

/** NOT_PULLED, or NESTED_WORKING_COPY naming a copy below the directory (its parent named). */
const notPulledOrAbove = (call: CopyCall): Effect.Effect<never, DomainError> =>
  containedCopy(call.fs, call.options.privateRoot, call.dir, call.tree, call.store.identity).pipe(
    Effect.flatMap(
      Option.match({
        onNone: () => Effect.fail(notPulledError),
        onSome: (inner) =>
          Effect.fail(
            domainError({
              code: "INVALID_REQUEST",
              reason: "NESTED_WORKING_COPY",
              message: `This directory is not a working copy; it contains the working copy ${pathForMessage(`${call.dir}/${inner}`)}: call this on that copy instead.`,
            }),
          ),
      }),
    ),
  );

/**
 * The state of the copy `call` holds; fails with {@link notPulledError} when it has none,
 * or NESTED_WORKING_COPY naming the copy it lies in (a subdirectory of a copy is no copy
 * of its own, and "pull first" would send the caller to a pull that is refused).
 */
export const pulledState = (call: CopyCall): Effect.Effect<CopyState, DomainError> =>
  Option.match(call.state, {
    onSome: Effect.succeed,
    onNone: () =>
      enclosingCopy(
        call.fs,
        call.options.privateRoot,
        call.options.workspaceRoot,
        call.dir,
        call.store.identity,
      ).pipe(
        Effect.flatMap(
          Option.match({
            onNone: () => notPulledOrAbove(call),
            onSome: (outer) => Effect.fail(insideCopyError(outer)),
          }),
        ),
      ),
  });
