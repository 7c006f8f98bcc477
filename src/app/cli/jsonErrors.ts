/**
 * The errors that stop a `--json` command before it runs — a usage error, a failed
 * start — as the one JSON line it prints on stdout instead of the text line on stderr
 * (docs/history.md, "Errors with --json"). Loaded only on those paths.
 */
import { cliStartErrorJson } from "../../domain/cliErrorJson.js";
import { type DomainError, domainError } from "../../domain/errors.js";
import type { RedactOptions } from "../../domain/redact.js";
import type { StartupError } from "../layers.js";
import { localReason } from "../usecases/shared/failures.js";

const usageError = (message: string): DomainError =>
  domainError({ code: "INVALID_REQUEST", reason: "INVALID_ARGUMENT", message });

/** A command line the parser refused (exit 2). */
export const usageErrorJson = (message: string, redaction: RedactOptions): string =>
  cliStartErrorJson(usageError(message), redaction);

/**
 * A process that could not start: a configuration naming something unusable is a usage
 * error (exit 2, as in text); a store that failed its probe, the probe's own error; a
 * local failure preparing directories, ENGINE_FAILED/LOCAL_IO — LOCAL_ACCESS (not
 * retryable) for a permission or a read-only file system — with its `detail`.
 */
export const startupErrorJson = (error: StartupError, redaction: RedactOptions): string =>
  cliStartErrorJson(
    error.kind === "config"
      ? usageError(error.message)
      : error.kind === "store" && error.error !== undefined
        ? error.error
        : error.kind === "store"
          ? domainError({
              code: "STORAGE_FAILURE",
              reason: "STORE_UNAVAILABLE",
              message: error.message,
            })
          : domainError({
              code: "ENGINE_FAILED",
              reason: localReason(error.detail),
              message: error.message,
              ...(error.detail === undefined ? {} : { detail: error.detail }),
            }),
    redaction,
  );
