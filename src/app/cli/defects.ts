/**
 * A defect (a bug) in a CLI command becomes the documented ENGINE_FAILED/INTERNAL error,
 * its cause logged under the run's diagnosticId, so the person gets the usual error text
 * and exit status instead of a stack trace.
 */
import { Cause, Effect } from "effect";
import { domainError, type DomainError } from "../../domain/errors.js";

/** `operation` with its defects turned into ENGINE_FAILED/INTERNAL (logged as `<command> failed unexpectedly`). */
export const defectsAsInternal = <A>(
  operation: Effect.Effect<A, DomainError>,
  command: string,
  diagnosticId: string,
): Effect.Effect<A, DomainError> =>
  operation.pipe(
    Effect.catchAllDefect((defect) =>
      Effect.logError(`${command} failed unexpectedly`, Cause.die(defect)).pipe(
        Effect.zipRight(
          Effect.fail(
            domainError({
              code: "ENGINE_FAILED",
              reason: "INTERNAL",
              message: `An unexpected internal error occurred; the log record with diagnosticId ${diagnosticId} has the cause.`,
            }),
          ),
        ),
      ),
    ),
  );
