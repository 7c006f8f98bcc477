/**
 * An error as the CLI's `--json` prints it (docs/history.md "Errors with --json"): one
 * line on stdout, so a script reads every outcome from one place and tells them apart by
 * the exit status and `code` — never a JSON answer on success and text on stderr for a
 * failure. The object is the library's (and the MCP tools') error object, in the CLI's
 * words.
 */
import { errorEnvelope } from "./envelope.js";
import type { DomainError } from "./errors.js";
import { inCliWords } from "./cliReport.js";
import type { PathSets } from "./pathSets.js";
import type { RedactOptions } from "./redact.js";

/** A domain error of a command that ran, as `--json` prints it: the whole error object. */
export const cliErrorJson = (
  error: DomainError,
  diagnosticId: string,
  sets: PathSets,
  redaction: RedactOptions = {},
): string => {
  const structured = errorEnvelope(error, diagnosticId, sets, redaction).structured;
  return `${JSON.stringify({ ...structured, message: inCliWords(structured.message) })}\n`;
};

/**
 * An error that stopped the command before it ran (a usage error, a store that failed its
 * probe), as `--json` prints it: the error object without `diagnosticId`, `readOnly` and
 * `writable`, which only a run has (no log record carries an id, no path sets were read).
 */
export const cliStartErrorJson = (error: DomainError, redaction: RedactOptions = {}): string => {
  const structured = errorEnvelope(error, "", { writable: [], readOnly: [] }, redaction).structured;
  return `${JSON.stringify({
    code: structured.code,
    reason: structured.reason,
    action: structured.action,
    retryable: structured.retryable,
    message: inCliWords(structured.message),
    ...(structured.detail === undefined ? {} : { detail: structured.detail }),
    files: structured.files,
  })}\n`;
};
