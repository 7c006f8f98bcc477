/**
 * What `serve` processes sharing a file store say to each other (share.ts): a call to
 * run with the caller's own notebook settings, and its result. Both sides decode
 * strictly; the protocol `version` and the quire release must match exactly, because a
 * call is run by the other process's code.
 */
import * as NodePath from "node:path";
import { Either, ParseResult, Schema } from "effect";
import { normalizePathSets } from "../../domain/pathSets.js";
import { isAtOrBelow } from "../config/paths.js";
import {
  DomainError,
  engineDetails,
  errorActions,
  errorCodes,
  errorReasons,
  errorRows,
  type ErrorCode,
  type ErrorReason,
  type FileReason,
  fileReasons,
} from "../../domain/errors.js";
import type { SyncReport } from "../Notebook.js";
import type { NotebookOptions } from "../usecases/shared/notebookOptions.js";

/**
 * Bumped whenever a frame's shape changes (2: a file entry's movedTo, side, keptAs; 3:
 * the options' workspaceRootSpelt; 4: a report's `unlisted`).
 */
export const protocolVersion = 4;

/**
 * The most files a real answer is reckoned to list ({@link maxAnswerBytes}): a pull of a
 * new copy lists every file of the notebook, a commit every file it published.
 */
export const maxAnswerFiles = 100_000;

/**
 * The largest answer frame a caller reads, so a same-user process squatting on the
 * channel's name cannot make it buffer more: an error's message, path and fixed fields
 * (16 KiB, each string at most the path bound, JSON-escaped at worst: 6 bytes a byte, the
 * working copy's path, 4,096 bytes), and {@link maxAnswerFiles} entries of a path of 100
 * bytes (notebook paths are short: the benchmark's notes run to 40) with their keys and
 * counts (64 bytes). The product bounds no notebook's file count, so a real answer can be
 * larger: the sharing process then lists only the files that fit and counts the rest
 * ({@link encodeAnswer}), because the work was done there and a caller that dropped the
 * answer and ran the call again would report only what was left to do (a pull: nothing).
 * About 16 MiB.
 */
export const maxAnswerBytes = 16 * 1_024 + 6 * 4_096 + maxAnswerFiles * (100 + 64);

/**
 * The largest request frame a sharing process reads: what a real call can carry, each
 * string at its bound and JSON-escaped at worst (6 bytes a byte, `\u0001`): the six
 * file-system paths of the options (PATH_MAX, 4,096 bytes each), the call's path (the
 * MCP input's 4,096 bytes), a commit message (16,384) and author (name and version,
 * 256 each); 16 KiB for the keys, numbers, release and diagnosticId; and the path sets,
 * which come from the command line and environment: 1 MiB of entries (no control
 * characters, so 2 bytes a byte at worst), far beyond any real configuration. A call
 * whose frame is larger is not sent: it runs in its caller.
 */
export const maxRequestBytes =
  6 * (6 * 4_096 + 4_096 + 16_384 + 2 * 256) + 16 * 1_024 + 2 * 1_024 * 1_024;

const NonNegativeInt = Schema.Number.pipe(Schema.int(), Schema.nonNegative());
const AbsolutePath = Schema.String.pipe(
  Schema.filter((path) => NodePath.isAbsolute(path) && !path.includes("\u0000")),
);

/** The notebook settings a call runs with, in the bounds the configuration enforces. */
const Options = Schema.Struct({
  workspaceRoot: AbsolutePath,
  workspaceRootSpelt: Schema.optionalWith(AbsolutePath, { exact: true }),
  notebookDirectory: AbsolutePath,
  privateRoot: AbsolutePath,
  storeDirectory: Schema.optionalWith(AbsolutePath, { exact: true }),
  homeDirectory: AbsolutePath,
  commitRetries: NonNegativeInt.pipe(Schema.lessThanOrEqualTo(100)),
  checkpointPacks: NonNegativeInt.pipe(Schema.greaterThanOrEqualTo(1)),
  retainedCheckpoints: NonNegativeInt.pipe(Schema.lessThanOrEqualTo(64)),
  pathSets: Schema.optionalWith(
    Schema.Struct({
      readOnly: Schema.Array(Schema.String),
      writable: Schema.Array(Schema.String),
    }).pipe(
      // Only sets as configuration leaves them: normalised, sorted, disjoint.
      Schema.filter((sets) =>
        Either.match(normalizePathSets(sets), {
          onLeft: () => false,
          onRight: (normal) =>
            JSON.stringify(normal.readOnly) === JSON.stringify(sets.readOnly) &&
            JSON.stringify(normal.writable) === JSON.stringify(sets.writable),
        }),
      ),
    ),
    { exact: true },
  ),
  checkpointBytes: Schema.optionalWith(NonNegativeInt.pipe(Schema.greaterThanOrEqualTo(1)), {
    exact: true,
  }),
  allowMassDelete: Schema.optionalWith(Schema.Boolean, { exact: true }),
}).pipe(
  Schema.filter(
    (options) =>
      !isAtOrBelow(options.privateRoot, options.workspaceRoot) &&
      isAtOrBelow(options.notebookDirectory, options.workspaceRoot),
  ),
);

/** The options a call is sent with: everything but the test-only failpoint. */
type SentOptions = typeof Options.Type;

const sentOptions = (options: NotebookOptions): SentOptions => {
  const { failpoint: _unsent, ...sent } = options;
  return sent;
};

const encodeOptions = Schema.encodeEither(Options);

/**
 * A key naming a set of notebook settings: equal settings give equal keys whatever the
 * order their fields were built in, because the fields are written in the schema's
 * order — the order a decoded request's options already have, so
 * {@link requestOptionsKey} is the same key without encoding again. Settings outside
 * the protocol's bounds get a key no request can have.
 */
export const optionsKey = (options: NotebookOptions): string => {
  const sent = sentOptions(options);
  return Either.match(encodeOptions(sent), {
    onLeft: () => `unshareable ${JSON.stringify(sent)}`,
    onRight: (encoded) => JSON.stringify(encoded),
  });
};

/** {@link optionsKey} of a decoded request's options (decoding wrote them in order). */
export const requestOptionsKey = (request: ShareRequest): string => JSON.stringify(request.options);

const Operation = Schema.Union(
  Schema.Struct({
    op: Schema.Literal("pull"),
    path: Schema.optionalWith(Schema.String, { exact: true }),
  }),
  Schema.Struct({
    op: Schema.Literal("commit"),
    path: Schema.optionalWith(Schema.String, { exact: true }),
    message: Schema.String,
    author: Schema.Struct({ name: Schema.String, version: Schema.String }),
  }),
);

const Request = Schema.extend(
  Operation,
  Schema.Struct({
    version: Schema.Literal(protocolVersion),
    release: Schema.String,
    diagnosticId: Schema.optionalWith(Schema.String, { exact: true }),
    options: Options,
  }),
);

/** A call another process asks this one to run. */
export type ShareRequest = typeof Request.Type;

const isErrorCode = (value: string): value is ErrorCode => errorCodes.some((c) => c === value);
const isErrorReason = (value: string): value is ErrorReason =>
  errorReasons.some((r) => r === value);
const isFileReason = (value: string): value is FileReason => fileReasons.some((r) => r === value);

const LineRange = Schema.Struct({
  start: NonNegativeInt.pipe(Schema.greaterThanOrEqualTo(1)),
  end: NonNegativeInt,
}).pipe(Schema.filter((range) => range.start <= range.end));

const ErrorShape = Schema.Struct({
  code: Schema.String.pipe(Schema.filter(isErrorCode)),
  reason: Schema.String.pipe(Schema.filter(isErrorReason)),
  action: Schema.Literal(...errorActions),
  retryable: Schema.Boolean,
  message: Schema.String,
  files: Schema.Array(
    Schema.Struct({
      path: Schema.String,
      reason: Schema.String.pipe(Schema.filter(isFileReason)),
      ranges: Schema.Array(LineRange),
      // Where a conflict moved a file aside (errors.ts, fileIssueFields).
      movedTo: Schema.optionalWith(Schema.String, { exact: true }),
      side: Schema.optionalWith(Schema.Literal("local", "remote"), { exact: true }),
      keptAs: Schema.optionalWith(Schema.String, { exact: true }),
    }),
  ),
  detail: Schema.optionalWith(Schema.Literal(...engineDetails), { exact: true }),
  recovery: Schema.optionalWith(
    Schema.Struct({
      stage: Schema.String,
      remoteAccepted: Schema.Literal("yes", "no", "unknown"),
      resynchronized: Schema.Boolean,
    }),
    { exact: true },
  ),
}).pipe(
  // Exactly what `domainError` builds: the table's action and retryability for the
  // code's own reason, `detail` only on ENGINE_FAILED, `recovery` on RECOVERY_FAILURE.
  Schema.filter(
    (error) =>
      errorRows.some(
        (row) =>
          row.code === error.code &&
          row.reason === error.reason &&
          row.action === error.action &&
          row.retryable === error.retryable,
      ) &&
      (error.detail === undefined || error.code === "ENGINE_FAILED") &&
      (error.recovery === undefined) === (error.code !== "RECOVERY_FAILURE"),
  ),
);

const Answer = Schema.Union(
  Schema.Struct({
    ok: Schema.Struct({
      path: Schema.String,
      generation: NonNegativeInt,
      files: Schema.Array(
        Schema.Struct({
          path: Schema.String,
          insertions: NonNegativeInt,
          deletions: NonNegativeInt,
        }),
      ),
      unlisted: Schema.optionalWith(
        Schema.Struct({
          files: NonNegativeInt.pipe(Schema.greaterThanOrEqualTo(1)),
          insertions: NonNegativeInt,
          deletions: NonNegativeInt,
        }),
        { exact: true },
      ),
    }),
  }),
  Schema.Struct({ error: ErrorShape }),
  Schema.Struct({ refused: Schema.String }),
);

/**
 * A short account of why a frame did not decode: the path and kind of its first problem.
 * It never formats the offending value, which a hostile frame could nest deep enough to
 * overflow the stack or make huge.
 */
const briefly = (error: ParseResult.ParseError): string => {
  const path: Array<string> = [];
  let issue: ParseResult.ParseIssue = error.issue;
  for (let depth = 0; depth < 64; depth++) {
    switch (issue._tag) {
      case "Pointer":
        path.push(...(Array.isArray(issue.path) ? issue.path : [issue.path]).map(String));
        issue = issue.issue;
        continue;
      case "Refinement":
      case "Transformation":
        issue = issue.issue;
        continue;
      case "Composite": {
        const first: ParseResult.ParseIssue | undefined = Array.isArray(issue.issues)
          ? issue.issues[0]
          : issue.issues;
        if (first === undefined) break;
        issue = first;
        continue;
      }
    }
    break;
  }
  const where = path.length === 0 ? "frame" : path.join(".").slice(0, 200);
  const detail =
    issue._tag === "Type" && issue.message !== undefined ? `: ${issue.message.slice(0, 200)}` : "";
  return `${where}: ${issue._tag}${detail}`;
};

const decodeRequestFrame = Schema.decodeUnknownEither(Schema.parseJson(Request), {
  onExcessProperty: "error",
});
const decodeAnswerFrame = Schema.decodeUnknownEither(Schema.parseJson(Answer), {
  onExcessProperty: "error",
});

/** The request frame for a call with `options` (the test-only failpoint is never sent). */
export const encodeRequest = (
  operation: typeof Operation.Type,
  release: string,
  options: NotebookOptions,
  diagnosticId: string | undefined,
): string => {
  const request: ShareRequest = {
    ...operation,
    version: protocolVersion,
    release,
    ...(diagnosticId === undefined ? {} : { diagnosticId }),
    options: sentOptions(options),
  };
  return JSON.stringify(request);
};

/** Decodes a request frame; `Left` names what is wrong with it. */
export const decodeRequest = (frame: string): Either.Either<ShareRequest, string> =>
  Either.mapLeft(decodeRequestFrame(frame), briefly);

const bytesOf = (text: string): number => Buffer.byteLength(text);

/**
 * How many of `entries` fit, in order, in a frame of at most `maxBytes` whose other
 * parts take `fixedBytes`: each entry costs its JSON and a comma.
 */
const fitting = (entries: ReadonlyArray<unknown>, fixedBytes: number, maxBytes: number): number => {
  let used = fixedBytes;
  for (let index = 0; index < entries.length; index++) {
    used += bytesOf(JSON.stringify(entries[index])) + 1;
    if (used > maxBytes) return index;
  }
  return entries.length;
};

/** What an error's message says of the files an answer too long could not list. */
export const unlistedFilesNote = (count: number): string =>
  ` (${count} more files are not listed: the answer was too long.)`;

const errorFrame = (error: DomainError, files: DomainError["files"], message: string) => ({
  error: {
    code: error.code,
    reason: error.reason,
    action: error.action,
    retryable: error.retryable,
    message,
    files,
    ...(error.detail === undefined ? {} : { detail: error.detail }),
    ...(error.recovery === undefined ? {} : { recovery: error.recovery }),
  },
});

/**
 * The answer frame for a call's outcome, at most `maxBytes` long whenever its fixed
 * parts allow: the call ran here, so an answer its caller would drop (and run the call
 * again, reporting only what was left to do) is never sent. A report with more files than
 * fit lists the first (by path) and counts the rest in `unlisted` (their number and line
 * counts); an error lists the first of its files and its message says how many more there
 * are.
 */
export const encodeAnswer = (
  outcome: Either.Either<SyncReport, DomainError>,
  maxBytes: number = maxAnswerBytes,
): string =>
  Either.match(outcome, {
    // The protocol's fields only: what a commit merged into the copy (`incoming`) is
    // for the CLI's report, and the CLI never shares a process.
    onRight: (report) => {
      const frame = (files: SyncReport["files"], unlisted?: SyncReport["unlisted"]) =>
        JSON.stringify({
          ok: {
            path: report.path,
            generation: report.generation,
            files,
            ...(unlisted === undefined ? {} : { unlisted }),
          },
        });
      const whole = frame(report.files, report.unlisted);
      if (bytesOf(whole) <= maxBytes) return whole;
      const sum = (files: SyncReport["files"], earlier = report.unlisted) => ({
        files: files.length + (earlier?.files ?? 0),
        insertions: files.reduce(
          (total, file) => total + file.insertions,
          earlier?.insertions ?? 0,
        ),
        deletions: files.reduce((total, file) => total + file.deletions, earlier?.deletions ?? 0),
      });
      // The counts of every file bound those of the unlisted ones, digits included.
      const kept = fitting(report.files, bytesOf(frame([], sum(report.files))), maxBytes);
      if (kept === report.files.length) return whole;
      return frame(report.files.slice(0, kept), sum(report.files.slice(kept)));
    },
    onLeft: (error) => {
      const whole = JSON.stringify(errorFrame(error, error.files, error.message));
      if (bytesOf(whole) <= maxBytes) return whole;
      const fixed = bytesOf(
        JSON.stringify(
          errorFrame(error, [], error.message + unlistedFilesNote(error.files.length)),
        ),
      );
      const kept = fitting(error.files, fixed, maxBytes);
      if (kept === error.files.length) return whole;
      return JSON.stringify(
        errorFrame(
          error,
          error.files.slice(0, kept),
          error.message + unlistedFilesNote(error.files.length - kept),
        ),
      );
    },
  });

/** The answer frame refusing to run a call, saying why. */
export const encodeRefusal = (why: string): string => JSON.stringify({ refused: why });

/** What an answer says: the call's outcome, or that the call was refused and why. */
export type ShareAnswer =
  | { readonly _tag: "Outcome"; readonly outcome: Either.Either<SyncReport, DomainError> }
  | { readonly _tag: "Refused"; readonly why: string };

/** Decodes an answer frame; `Left` names what is wrong with the frame. */
export const decodeAnswer = (frame: string): Either.Either<ShareAnswer, string> =>
  Either.match(decodeAnswerFrame(frame), {
    onLeft: (error) => Either.left(briefly(error)),
    onRight: (answer): Either.Either<ShareAnswer, string> =>
      Either.right(
        "refused" in answer
          ? { _tag: "Refused", why: answer.refused }
          : {
              _tag: "Outcome",
              outcome:
                "ok" in answer
                  ? Either.right(answer.ok)
                  : Either.left(new DomainError(answer.error)),
            },
      ),
  });
