/**
 * The MCP result envelopes (SPEC §2.3, §2.4): the one text item and the structured
 * object of a success or a domain error. Pure; the MCP server only wraps them.
 */
import type {
  ChangedFile,
  DomainError,
  EngineDetail,
  ErrorAction,
  ErrorCode,
  ErrorReason,
  FileIssue,
  RecoveryReport,
} from "./errors.js";
import type { PathSets } from "./pathSets.js";
import { compareCodeUnits } from "./paths.js";
import { redact, type RedactOptions } from "./redact.js";
import { shownName } from "./shownText.js";
import type { FileStat, LineRange } from "./tree.js";

export type { PathSets } from "./pathSets.js";

/** What a successful pull or commit reports (structurally the app's `SyncReport`). */
export interface SuccessReport {
  /** The resolved absolute working-copy directory. */
  readonly path: string;
  /** The accepted remote generation after the operation. */
  readonly generation: number;
  /** Per-file line counts. */
  readonly files: ReadonlyArray<FileStat>;
  /**
   * Commit or pull: the generation of an earlier commit of the copy, stopped after the
   * notebook accepted its publication, that this call completed first. The CLI's report
   * names it; the MCP result keeps SPEC §2.3's shape without it (a client that lost the
   * earlier answer was told to pull to verify, and its pull or log shows the generation).
   */
  readonly interruptedCommit?: { readonly generation: number };
  /**
   * Files changed that `files` does not list (an answer relayed between `serve`
   * processes has a bound, app/share/protocol.ts): their number and line counts.
   */
  readonly unlisted?: UnlistedFiles;
}

/** The files a report counts but does not list. */
export interface UnlistedFiles {
  readonly files: number;
  readonly insertions: number;
  readonly deletions: number;
}

/**
 * The structured object of a success (SPEC §2.3). A type alias, not an interface, so it
 * is assignable to MCP's `structuredContent` record type.
 */
export type SuccessStructured = {
  readonly code: "OK";
  readonly path: string;
  readonly generation: number;
  readonly filesChanged: number;
  readonly insertions: number;
  readonly deletions: number;
  readonly files: ReadonlyArray<FileStat>;
  /**
   * Only when `files` does not list every changed file (an answer relayed by another
   * `serve` process has a bound): how many it leaves out. `filesChanged`, `insertions`
   * and `deletions` count them too.
   */
  readonly filesNotListed?: number;
  readonly readOnly: ReadonlyArray<string>;
  readonly writable: ReadonlyArray<string>;
};

/** The structured object of a domain error (SPEC §2.4); a type alias for the same reason. */
export type ErrorStructured = {
  readonly code: ErrorCode;
  readonly reason: ErrorReason;
  readonly action: ErrorAction;
  readonly diagnosticId: string;
  readonly retryable: boolean;
  readonly message: string;
  /** ENGINE_FAILED only, and only when the cause was classified. */
  readonly detail?: EngineDetail;
  readonly files: ReadonlyArray<FileIssue>;
  /**
   * Only on a CONTENT_CONFLICT after which the call had changed the working copy (a
   * conflicting quire revert): every file it changed, the conflicted ones included; or
   * on an ENGINE_FAILED that stopped quire restore or revert part way: what it had
   * changed.
   */
  readonly changed?: ReadonlyArray<ChangedFile>;
  /** With `changed`: files saved by someone during the call, left as they were. */
  readonly held?: ReadonlyArray<string>;
  /** RECOVERY_FAILURE only. */
  readonly recovery?: RecoveryReport;
  readonly readOnly: ReadonlyArray<string>;
  readonly writable: ReadonlyArray<string>;
};

/** A result's single text item and its structured object. */
export interface Envelope<S> {
  readonly text: string;
  readonly structured: S;
}

/**
 * The success envelope: `structured` per SPEC §2.3 (files sorted by path, totals
 * summed), `text` the working-copy directory, followed by the configured path sets:
 * `<dir> (writable: a, b)`, `<dir> (read-only: c)` or
 * `<dir> (writable: a, b; read-only: c; longest match decides)`.
 */
export const successEnvelope = (
  report: SuccessReport,
  sets: PathSets,
): Envelope<SuccessStructured> => {
  const files = sortedStats(report.files);
  const unlisted = report.unlisted;
  return {
    text: successText(report.path, sets),
    structured: {
      code: "OK",
      path: report.path,
      generation: report.generation,
      filesChanged: files.length + (unlisted?.files ?? 0),
      insertions: files.reduce((sum, file) => sum + file.insertions, unlisted?.insertions ?? 0),
      deletions: files.reduce((sum, file) => sum + file.deletions, unlisted?.deletions ?? 0),
      files,
      ...(unlisted === undefined || unlisted.files === 0 ? {} : { filesNotListed: unlisted.files }),
      readOnly: sets.readOnly,
      writable: sets.writable,
    },
  };
};

/** The text item of a success: the directory, with the path sets when configured. */
export const successText = (path: string, sets: PathSets): string => {
  const writable = sets.writable.join(", ");
  const readOnly = sets.readOnly.join(", ");
  if (sets.writable.length > 0 && sets.readOnly.length > 0) {
    return `${path} (writable: ${writable}; read-only: ${readOnly}; longest match decides)`;
  }
  if (sets.writable.length > 0) return `${path} (writable: ${writable})`;
  if (sets.readOnly.length > 0) return `${path} (read-only: ${readOnly})`;
  return path;
};

/**
 * The error envelope: `structured` carries every field of SPEC §2.4 (`detail` only for
 * ENGINE_FAILED when present, `recovery` only for RECOVERY_FAILURE), with `message`,
 * `detail` and the recovery stage redacted; `text` is the candid text
 * ({@link errorTextLines} joined by LF, no trailing newline).
 */
export const errorEnvelope = (
  error: DomainError,
  diagnosticId: string,
  sets: PathSets,
  redaction: RedactOptions = {},
): Envelope<ErrorStructured> => {
  const structured = errorStructured(error, diagnosticId, sets, redaction);
  return { text: candidLines(structured).join("\n"), structured };
};

/**
 * The candid text of a domain error, one line per element, so a client that drops the
 * structured object loses nothing:
 *
 * ```text
 * CODE · REASON
 * message
 * detail: disk full                                   (when present)
 * file: notes/a.md · TEXT_CONFLICT · lines 12-18, 30   (one per file; `line 5` for one line)
 * file: d · FILE_DIRECTORY · side local · movedTo d~local · keptAs d   (a file moved aside)
 * changed: notes/b.md · modified                     (one per changed file, when present)
 * held: notes/c.md                                   (one per held file, with changed)
 * action: EDIT_FILES
 * retryable: false
 * diagnosticId: 0011223344556677
 * recovery: stage S · remoteAccepted yes · resynchronized true   (when present)
 * readOnly: a, b                                     (when non-empty)
 * writable: c                                        (when non-empty)
 * ```
 */
export const errorTextLines = (
  error: DomainError,
  diagnosticId: string,
  sets: PathSets,
  redaction: RedactOptions = {},
): ReadonlyArray<string> => candidLines(errorStructured(error, diagnosticId, sets, redaction));

/** `lines 12-18, 30-31`, `line 5`, or `` for no range. */
export const formatRanges = (ranges: ReadonlyArray<LineRange>): string => {
  const [only, ...rest] = ranges;
  if (only === undefined) return "";
  if (rest.length === 0 && only.start === only.end) return `line ${only.start}`;
  return `lines ${ranges.map((range) => (range.start === range.end ? `${range.start}` : `${range.start}-${range.end}`)).join(", ")}`;
};

const errorStructured = (
  error: DomainError,
  diagnosticId: string,
  sets: PathSets,
  redaction: RedactOptions,
): ErrorStructured => ({
  code: error.code,
  reason: error.reason,
  action: error.action,
  diagnosticId,
  retryable: error.retryable,
  message: redact(error.message, redaction),
  // The closed detail set needs no redaction; it is re-checked so a hand-built error
  // cannot smuggle text through.
  ...(error.code === "ENGINE_FAILED" && error.detail !== undefined ? { detail: error.detail } : {}),
  files: error.files.map((file) => ({
    path: file.path,
    reason: file.reason,
    ranges: file.ranges.map((range) => ({ start: range.start, end: range.end })),
    ...(file.movedTo === undefined ? {} : { movedTo: file.movedTo }),
    ...(file.side === undefined ? {} : { side: file.side }),
    ...(file.keptAs === undefined ? {} : { keptAs: file.keptAs }),
  })),
  ...(error.changed === undefined
    ? {}
    : {
        changed: error.changed.map((file) => ({ path: file.path, change: file.change })),
        held: [...(error.held ?? [])],
      }),
  ...(error.code === "RECOVERY_FAILURE" && error.recovery !== undefined
    ? {
        recovery: {
          stage: redact(error.recovery.stage, redaction),
          remoteAccepted: error.recovery.remoteAccepted,
          resynchronized: error.recovery.resynchronized,
        },
      }
    : {}),
  readOnly: sets.readOnly,
  writable: sets.writable,
});

// Each file line is one line, whatever the names hold: a file's name is shown as
// shownName shows it (a newline in a name would otherwise make a line of its own, such as
// a forged `action:`). The message is repeated exactly (SPEC §2.4: a client that reads
// only the text loses nothing; what it echoes is quoted where it is made, and the CLI
// shows every line through terminalSafe). The structured object keeps the exact names.
const candidLines = (structured: ErrorStructured): ReadonlyArray<string> => [
  `${structured.code} · ${structured.reason}`,
  structured.message,
  ...(structured.detail === undefined ? [] : [`detail: ${structured.detail}`]),
  ...structured.files.map((file) => {
    const ranges = formatRanges(file.ranges);
    return [
      `file: ${shownName(file.path)}`,
      file.reason,
      ...(ranges === "" ? [] : [ranges]),
      ...(file.side === undefined ? [] : [`side ${file.side}`]),
      ...(file.movedTo === undefined ? [] : [`movedTo ${shownName(file.movedTo)}`]),
      ...(file.keptAs === undefined ? [] : [`keptAs ${shownName(file.keptAs)}`]),
    ].join(" · ");
  }),
  ...(structured.changed ?? []).map((file) => `changed: ${shownName(file.path)} · ${file.change}`),
  ...(structured.held ?? []).map((path) => `held: ${shownName(path)}`),
  `action: ${structured.action}`,
  `retryable: ${structured.retryable}`,
  `diagnosticId: ${structured.diagnosticId}`,
  ...(structured.recovery === undefined
    ? []
    : [
        `recovery: stage ${structured.recovery.stage} · remoteAccepted ${structured.recovery.remoteAccepted} · resynchronized ${structured.recovery.resynchronized}`,
      ]),
  ...(structured.readOnly.length === 0 ? [] : [`readOnly: ${structured.readOnly.join(", ")}`]),
  ...(structured.writable.length === 0 ? [] : [`writable: ${structured.writable.join(", ")}`]),
];

const sortedStats = (files: ReadonlyArray<FileStat>): ReadonlyArray<FileStat> =>
  [...files]
    .sort((a, b) => compareCodeUnits(a.path, b.path))
    .map((file) => ({ path: file.path, insertions: file.insertions, deletions: file.deletions }));
