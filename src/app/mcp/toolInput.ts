/**
 * The strict decode of tool arguments (SPEC §2.1). The advertised JSON Schemas are
 * advisory; this decode is authoritative: unknown fields, `null`, wrong types, malformed
 * UTF-16, U+0000, byte bounds (JSON Schema `maxLength` counts code points, not bytes)
 * and relative paths are refused with `INVALID_REQUEST` before any work starts.
 */
import * as NodePath from "node:path";
import { Either, ParseResult, Schema } from "effect";
import { type DomainError, domainError } from "../../domain/errors.js";

/** The largest accepted `path`, in UTF-8 bytes. */
export const maxPathBytes = 4096;
/** The largest accepted `message`, in UTF-8 bytes. */
export const maxMessageBytes = 16_384;

const encoder = new TextEncoder();
const utf8Length = (text: string): number => encoder.encode(text).length;

// In a `u` regex a paired surrogate is one code point, so this matches only lone halves,
// which have no UTF-8 encoding.
const loneSurrogate = /\p{Surrogate}/u;
const isEncodable = (text: string): boolean =>
  !loneSurrogate.test(text) && !text.includes("\u0000");
// JavaScript's \s and Unicode's White_Space differ (U+0085 vs U+FEFF); blank means only
// characters of either.
const blank = /^[\s\p{White_Space}]*$/u;

/** The INVALID_REQUEST reasons this decode produces, each with the message it reports. */
const problems = {
  PATH_ENCODING: "path must be UTF-8 text without U+0000.",
  PATH_TOO_LONG: `path must be at most ${maxPathBytes.toLocaleString("en-US")} UTF-8 bytes.`,
  PATH_NOT_ABSOLUTE:
    "path must be absolute (or start with ~/); omit it or pass an empty string for the server's notebook directory.",
  MESSAGE_ENCODING: "message must be UTF-8 text without U+0000.",
  MESSAGE_BLANK: "message must not be empty or only white space.",
  MESSAGE_TOO_LONG: `message must be at most ${maxMessageBytes.toLocaleString("en-US")} UTF-8 bytes.`,
} as const;
type Problem = keyof typeof problems;

const flag = (problem: Problem) => ({ message: () => problem });

const PathArgument = Schema.String.pipe(
  Schema.filter(isEncodable, flag("PATH_ENCODING")),
  Schema.filter((path) => utf8Length(path) <= maxPathBytes, flag("PATH_TOO_LONG")),
  Schema.filter(
    (path) => path === "" || path.startsWith("~/") || NodePath.isAbsolute(path),
    flag("PATH_NOT_ABSOLUTE"),
  ),
);

const MessageArgument = Schema.String.pipe(
  Schema.filter(isEncodable, flag("MESSAGE_ENCODING")),
  Schema.filter((message) => !blank.test(message), flag("MESSAGE_BLANK")),
  Schema.filter((message) => utf8Length(message) <= maxMessageBytes, flag("MESSAGE_TOO_LONG")),
);

/** The arguments of notes_pull. */
export const PullArguments = Schema.Struct({
  path: Schema.optionalWith(PathArgument, { exact: true }),
});

/** The arguments of notes_commit. */
export const CommitArguments = Schema.Struct({
  message: MessageArgument,
  path: Schema.optionalWith(PathArgument, { exact: true }),
});

const isProblem = (text: string): text is Problem => Object.hasOwn(problems, text);

const fieldName = (path: ReadonlyArray<PropertyKey>): string => {
  const name = String(path[0] ?? "arguments");
  return JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name);
};

/** Turns the first decode issue into the INVALID_REQUEST the caller sees. */
const toDomainError = (error: ParseResult.ParseError, tool: string): DomainError => {
  const [issue] = ParseResult.ArrayFormatter.formatErrorSync(error);
  if (issue !== undefined && isProblem(issue.message)) {
    const problem = issue.message;
    const reason =
      problem === "PATH_ENCODING" || problem === "MESSAGE_ENCODING" ? "INVALID_ARGUMENT" : problem;
    return domainError({ code: "INVALID_REQUEST", reason, message: problems[problem] });
  }
  const field = fieldName(issue?.path ?? []);
  const message =
    issue?._tag === "Unexpected"
      ? `${tool} has no field ${field}; it accepts only ${tool === "notes_commit" ? "message and path" : "path"}.`
      : issue?._tag === "Missing"
        ? `${tool} needs the field ${field}.`
        : `${field} must be a string (null is not accepted).`;
  return domainError({ code: "INVALID_REQUEST", reason: "INVALID_ARGUMENT", message });
};

const decodeOptions = { onExcessProperty: "error", errors: "first" } as const;

/** Decodes notes_pull arguments (`undefined` means none were sent). */
export const decodePullArguments = (
  input: unknown,
): Either.Either<typeof PullArguments.Type, DomainError> =>
  Either.mapLeft(Schema.decodeUnknownEither(PullArguments, decodeOptions)(input ?? {}), (error) =>
    toDomainError(error, "notes_pull"),
  );

/** Decodes notes_commit arguments (`undefined` means none were sent). */
export const decodeCommitArguments = (
  input: unknown,
): Either.Either<typeof CommitArguments.Type, DomainError> =>
  Either.mapLeft(Schema.decodeUnknownEither(CommitArguments, decodeOptions)(input ?? {}), (error) =>
    toDomainError(error, "notes_commit"),
  );
