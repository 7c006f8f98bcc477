/**
 * The domain error taxonomy (SPEC §3): closed sets of codes, reasons, actions and
 * file reasons, defined once here and documented in docs/errors.md.
 *
 * STUB — the full table is being written; the shapes below are the contract.
 */
import { Data } from "effect";
import type { LineRange } from "./tree.js";

/** A stable error category. */
export type ErrorCode =
  | "INVALID_REQUEST"
  | "INVALID_CONTENT"
  | "CONTENT_CONFLICT"
  | "READ_ONLY_PATH"
  | "REMOTE_BUSY"
  | "STORAGE_FAILURE"
  | "STORAGE_INTEGRITY"
  | "RECOVERY_FAILURE"
  | "ENGINE_FAILED"
  | "INCOMPATIBLE_STORE";

/** A stable token one level below the code. */
export type ErrorReason = string;
/** A stable token naming the caller's next step. */
export type ErrorAction = string;
/** A stable per-file reason. */
export type FileReason = string;

/** One affected file of an error. */
export interface FileIssue {
  readonly path: string;
  readonly reason: FileReason;
  readonly ranges: ReadonlyArray<LineRange>;
}

/** The recovery report of a RECOVERY_FAILURE. */
export interface RecoveryReport {
  readonly stage: string;
  readonly remoteAccepted: "yes" | "no" | "unknown";
  readonly resynchronized: boolean;
}

/** A domain error as every surface reports it. */
export class DomainError extends Data.TaggedError("DomainError")<{
  readonly code: ErrorCode;
  readonly reason: ErrorReason;
  readonly action: ErrorAction;
  readonly retryable: boolean;
  readonly message: string;
  readonly files: ReadonlyArray<FileIssue>;
  readonly detail?: string;
  readonly recovery?: RecoveryReport;
}> {}
