/**
 * The answer to a rewrite of the working copy that stopped part way (settle.ts): the copy
 * was changed, so never LOCAL_IO (whose meaning is "before the working copy was
 * changed"); and when what stopped it is a local cause a person can fix (a full disk, a
 * directory without write permission), never CONTACT_OPERATOR either: nothing was
 * half-written (every write is atomic per file), the files not rewritten yet are as they
 * were, and the next pull, once the cause is fixed, completes the rewrite.
 */
import { domainError, type DomainError, type EngineDetail } from "../../../domain/errors.js";

/** What a person does about each classified local cause. */
const fixes: { readonly [D in EngineDetail]: string } = {
  "disk full": "free disk space (or raise the quota)",
  "permission denied":
    "give this user write permission there (for example chmod u+w on the directory)",
  "read-only file system": "make that file system writable",
  "too many open files": "close files other programs hold open, or raise the open-file limit",
  "name too long":
    "put the working copy at a shorter path, or on a file system that allows longer names",
  "file too large":
    "raise the file size limit (ulimit -f), or put the working copy on a file system that allows larger files",
};

/** The classified local cause of `failure`, when it has one a person can fix. */
export const fixableCause = (failure: DomainError): EngineDetail | undefined =>
  failure.code === "ENGINE_FAILED" &&
  (failure.reason === "LOCAL_IO" || failure.reason === "LOCAL_ACCESS")
    ? failure.detail
    : undefined;

/** `failure`'s message with its classified cause, and what to do about it. */
const causeOf = (failure: DomainError): string => {
  const detail = fixableCause(failure);
  const message = failure.message.replace(/\.$/, "");
  return detail === undefined
    ? `${message}.`
    : `${message} (${detail}). Fix that first: ${fixes[detail]}.`;
};

/**
 * A rewrite of a copy with private state (its intent and `recoveryRequired` written
 * first) that failed, and failed again when retried, for a cause a person can fix:
 * RECOVERY_FAILURE/UNEXPECTED_FAILURE (PULL_AGAIN, retryable), the cause named.
 */
export const stoppedRewrite = (failure: DomainError, remoteAccepted: "yes" | "no"): DomainError =>
  domainError({
    code: "RECOVERY_FAILURE",
    reason: "UNEXPECTED_FAILURE",
    message:
      (remoteAccepted === "yes" ? "Your changes were published. " : "") +
      `Rewriting the working copy stopped part way: ${causeOf(failure)} Nothing is lost: the files not rewritten yet are as they were, and the next notes_pull completes the rewrite; call it once the cause is fixed.`,
    recovery: { stage: "rewrite-working-copy", remoteAccepted, resynchronized: false },
  });

/**
 * A first pull (no private state yet) whose writing of the notebook into the copy
 * failed: some notes may be written, the others not. The record of what it was writing
 * (firstPull.ts) stays, so the next pull takes the notes written as the notebook's.
 * RECOVERY_FAILURE/UNEXPECTED_FAILURE (PULL_AGAIN, retryable), the cause named.
 */
export const stoppedFirstPull = (failure: DomainError): DomainError =>
  domainError({
    code: "RECOVERY_FAILURE",
    reason: "UNEXPECTED_FAILURE",
    message:
      `Writing the notebook into this working copy stopped part way: ${causeOf(failure)} ` +
      "Some or all of the notes may be written already; the next notes_pull completes the copy and takes the notes already written as the notebook's." +
      " Nothing was published.",
    recovery: { stage: "first-pull", remoteAccepted: "no", resynchronized: false },
  });
