/**
 * The one answer for a working copy that was never pulled, for every call that needs a
 * pulled copy (commit, log, status, diff, show, restore, revert).
 */
import { Effect, Option } from "effect";
import { domainError, type DomainError } from "../../../domain/errors.js";
import type { CopyState } from "../workingCopy/privateState.js";
import type { CopyCall } from "./context.js";

/** INVALID_REQUEST/NOT_PULLED: what a call on a copy never pulled fails with. */
export const notPulledError: DomainError = domainError({
  code: "INVALID_REQUEST",
  reason: "NOT_PULLED",
  message: "This working copy was never pulled; call notes_pull first.",
});

/** The state of the copy `call` holds; fails with {@link notPulledError} when it has none. */
export const pulledState = (call: CopyCall): Effect.Effect<CopyState, DomainError> =>
  Option.match(call.state, {
    onSome: Effect.succeed,
    onNone: () => Effect.fail(notPulledError),
  });
