/**
 * What `serve` processes sharing a file store say to each other (share.ts): a call to
 * run with the caller's own notebook settings, and its result. Both sides decode
 * strictly; the protocol `version` and the quire release must match exactly, because a
 * call is run by the other process's code.
 */
import { Either, ParseResult, Schema } from "effect";
import {
  DomainError,
  engineDetails,
  errorActions,
  errorCodes,
  errorReasons,
  type ErrorCode,
  type ErrorReason,
  type FileReason,
  fileReasons,
  isReasonOf,
} from "../../domain/errors.js";
import type { SyncReport } from "../Notebook.js";
import type { NotebookOptions } from "../usecases/notebookLayer.js";

/** Bumped whenever a frame's shape changes. */
export const protocolVersion = 1;

/** The largest frame either side accepts: a pull of a large notebook lists every file. */
export const maxFrameBytes = 256 * 1024 * 1024;

const NonNegativeInt = Schema.Number.pipe(Schema.int(), Schema.nonNegative());

const Options = Schema.Struct({
  workspaceRoot: Schema.String,
  notebookDirectory: Schema.String,
  privateRoot: Schema.String,
  homeDirectory: Schema.String,
  commitRetries: NonNegativeInt,
  checkpointPacks: NonNegativeInt,
  retainedCheckpoints: NonNegativeInt,
  pathSets: Schema.optionalWith(
    Schema.Struct({
      readOnly: Schema.Array(Schema.String),
      writable: Schema.Array(Schema.String),
    }),
    { exact: true },
  ),
  checkpointBytes: Schema.optionalWith(NonNegativeInt, { exact: true }),
  allowMassDelete: Schema.optionalWith(Schema.Boolean, { exact: true }),
});

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
      ranges: Schema.Array(Schema.Struct({ start: NonNegativeInt, end: NonNegativeInt })),
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
}).pipe(Schema.filter((error) => isReasonOf(error.code, error.reason)));

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
    }),
  }),
  Schema.Struct({ error: ErrorShape }),
  Schema.Struct({ refused: Schema.String }),
);

/** A short account of why a frame did not decode: its first few problems, by path. */
const briefly = (error: ParseResult.ParseError): string =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .slice(0, 3)
    .map((issue) => `${issue.path.map(String).join(".") || "frame"}: ${issue.message}`)
    .join("; ");

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
  const { failpoint: _unsent, ...sent } = options;
  const request: ShareRequest = {
    ...operation,
    version: protocolVersion,
    release,
    ...(diagnosticId === undefined ? {} : { diagnosticId }),
    options: sent,
  };
  return JSON.stringify(request);
};

/** Decodes a request frame; `Left` names what is wrong with it. */
export const decodeRequest = (frame: string): Either.Either<ShareRequest, string> =>
  Either.mapLeft(decodeRequestFrame(frame), briefly);

/** The answer frame for a call's outcome. */
export const encodeAnswer = (outcome: Either.Either<SyncReport, DomainError>): string =>
  JSON.stringify(
    Either.match(outcome, {
      onRight: (report) => ({ ok: report }),
      onLeft: (error) => ({
        error: {
          code: error.code,
          reason: error.reason,
          action: error.action,
          retryable: error.retryable,
          message: error.message,
          files: error.files,
          ...(error.detail === undefined ? {} : { detail: error.detail }),
          ...(error.recovery === undefined ? {} : { recovery: error.recovery }),
        },
      }),
    }),
  );

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
