/**
 * Translation of port failures into domain errors, in one place, so every use case
 * reports store and file system trouble the same way.
 */
import { domainError, type DomainError, type EngineDetail } from "../../../domain/errors.js";
import type { FsError } from "../../../ports/FileSystem.js";
import type { StoreError } from "../../../ports/ObjectStore.js";

/**
 * A store failure with no proven result, as STORAGE_FAILURE. `PreconditionFailed`
 * never reaches here (callers handle lost races); `Corrupt` answers are integrity
 * failures.
 */
export const storeFailure = (error: StoreError, doing: string): DomainError => {
  switch (error.reason) {
    case "AccessDenied":
    case "BucketMissing":
      return domainError({
        code: "STORAGE_FAILURE",
        reason: "ACCESS_DENIED",
        message: `The store refused access while ${doing}: ${error.message}`,
      });
    case "Throttled":
      return domainError({
        code: "STORAGE_FAILURE",
        reason: "THROTTLED",
        message: `The store asked to slow down while ${doing}: ${error.message}`,
      });
    case "Ambiguous":
      return domainError({
        code: "STORAGE_FAILURE",
        reason: "TIMEOUT",
        message: `A store request timed out while ${doing}: ${error.message}`,
      });
    case "TlsFailed":
      return domainError({
        code: "STORAGE_FAILURE",
        reason: "TLS_FAILED",
        message: `The store's TLS handshake failed while ${doing}: ${error.message}`,
      });
    case "Corrupt":
      return domainError({
        code: "STORAGE_INTEGRITY",
        reason: "PACK_INVALID",
        message: `The store answered with malformed data while ${doing}: ${error.message}`,
      });
    case "NotFound":
    case "PreconditionFailed":
    case "Unavailable":
      return domainError({
        code: "STORAGE_FAILURE",
        reason: "STORE_UNAVAILABLE",
        message: `The store could not be used while ${doing}: ${error.message}`,
      });
  }
};

/** What a local failure's errno was, as an answer's `detail` says it; `undefined` when unclassified. */
export const detailOf = (error: FsError): EngineDetail | undefined => {
  switch (error.reason) {
    case "NoSpace":
      return "disk full";
    case "PermissionDenied":
      return "permission denied";
    case "ReadOnly":
      return "read-only file system";
    case "TooManyOpenFiles":
      return "too many open files";
    case "NameTooLong":
      return "name too long";
    // EFBIG: a write past the file size limit (ulimit -f) or the file system's largest
    // file. Reads past their bound are answered before they get here (blobs.ts, rewrite.ts).
    case "TooLarge":
      return "file too large";
    default:
      return undefined;
  }
};

/**
 * How a message names where private state lives, for a failure there: its path stays
 * out of answers, and without this a read-only or full private root read as a problem
 * of the (perfectly writable) working copy.
 */
export const privateRootNamed = "private root (--private-root)";

/**
 * A local file system failure as ENGINE_FAILED/LOCAL_IO, with `detail` when classified.
 * The path is not named: private state's paths stay out of answers (docs/logging.md).
 */
export const localFailure = (error: FsError, doing: string): DomainError =>
  failureNaming(error, `A local file operation failed while ${doing}.`);

/**
 * The reason of a local failure with `detail`: a permission or a read-only file system
 * fails every retry the same way, so the caller must have it fixed (LOCAL_ACCESS, not
 * retryable); other local causes may pass (LOCAL_IO).
 */
export const localReason = (detail: EngineDetail | undefined): "LOCAL_ACCESS" | "LOCAL_IO" =>
  detail === "permission denied" || detail === "read-only file system"
    ? "LOCAL_ACCESS"
    : "LOCAL_IO";

const failureNaming = (error: FsError, message: string): DomainError => {
  const detail = detailOf(error);
  return domainError({
    code: "ENGINE_FAILED",
    reason: localReason(detail),
    message,
    // Without the paths the host quoted: a private-state path's layout (copies/<hex>/…)
    // stays out of the log too (docs/logging.md); the errno and the operation stay.
    ...(detail === undefined
      ? { hostCause: `${error.reason}: ${error.message.replace(/'[^']*'/g, "'…'")}` }
      : { detail }),
  });
};

/** How many characters of a host path a message shows at most (its end: the names). */
const shownPathChars = 240;

/**
 * A host path as an error message shows it: whole when short, else its last
 * {@link shownPathChars} characters after `…` — a path may be 4,096 bytes long, and an
 * envelope's message stays short (docs/errors.md).
 */
export const pathForMessage = (path: string): string =>
  path.length <= shownPathChars ? path : `…${path.slice(-shownPathChars)}`;

/**
 * {@link localFailure} for a file or directory of the working copy, named: one unreadable
 * file among thousands is otherwise not to be found, and the copy is the caller's own.
 */
export const workingCopyFailure = (error: FsError, doing: string): DomainError =>
  error.path === ""
    ? localFailure(error, doing)
    : failureNaming(
        error,
        `A local file operation failed while ${doing}: ${pathForMessage(error.path)}.`,
      );
