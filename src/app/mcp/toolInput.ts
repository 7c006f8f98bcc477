/**
 * The strict decode of tool arguments (SPEC §2.1). The advertised JSON Schemas are
 * advisory; this decode is authoritative: arguments that are not a JSON object, unknown
 * fields (`__proto__` and `constructor` included), `null`, wrong types, malformed UTF-16,
 * U+0000, byte bounds (JSON Schema `maxLength` counts code points, not bytes) and
 * relative paths are refused with `INVALID_REQUEST` before any work starts.
 *
 * The shape is checked by hand, before any schema sees the value, so that no failure
 * message ever formats the value itself: arguments nested thousands deep, or a field
 * of megabytes, cost one type test, never a recursive walk.
 */
import * as NodePath from "node:path";
import { Either, ParseResult, Schema } from "effect";
import { isUtf8Text, textFault, textFaultMessage } from "../../domain/content.js";
import { type DomainError, domainError } from "../../domain/errors.js";
import { isJsonObject, jsonTypeOf } from "./jsonText.js";

/** The largest accepted `path`, in UTF-8 bytes. */
export const maxPathBytes = 4096;
/** The largest accepted `message`, in UTF-8 bytes. */
export const maxMessageBytes = 16_384;

const encoder = new TextEncoder();
const utf8Length = (text: string): number => encoder.encode(text).length;

const isEncodable = isUtf8Text;
// Blank means only characters of Unicode's White_Space property (SPEC §2.1) — not
// JavaScript's `\s`, which adds U+FEFF (a byte-order mark is not white space, so a
// message of only U+FEFF is kept) and lacks nothing White_Space has.
const blank = /^\p{White_Space}*$/u;

/**
 * The INVALID_REQUEST reasons the string checks produce, each with the message it reports
 * (an `_ENCODING` one only when the value has no fault {@link encodingMessage} can name).
 */
const problems = {
  PATH_ENCODING: "path must be UTF-8 text without U+0000.",
  PATH_TOO_LONG: `path must be at most ${maxPathBytes.toLocaleString("en-US")} UTF-8 bytes.`,
  PATH_NOT_ABSOLUTE:
    "path must be absolute (or start with ~/); omit it or pass an empty string for the server's notebook directory.",
  MESSAGE_ENCODING: "message must be UTF-8 text without U+0000.",
  MESSAGE_BLANK: "message must not be empty or only white space.",
  MESSAGE_TOO_LONG: `message must be at most ${maxMessageBytes.toLocaleString("en-US")} UTF-8 bytes.`,
  FILE_ENCODING: "file must be UTF-8 text without U+0000.",
  FILE_NOT_RELATIVE:
    "file must be a notebook path relative to the working copy's top (as results list them), at most 4,096 bytes.",
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

const FileArgument = Schema.String.pipe(
  Schema.filter(isEncodable, flag("FILE_ENCODING")),
  Schema.filter(
    (file) =>
      file !== "" &&
      // `~` is an ordinary notebook segment here (never expanded), as in the CLI's --file.
      !file.startsWith("/") &&
      utf8Length(file) <= maxPathBytes,
    flag("FILE_NOT_RELATIVE"),
  ),
);

const MessageArgument = Schema.String.pipe(
  Schema.filter(isEncodable, flag("MESSAGE_ENCODING")),
  Schema.filter((message) => !blank.test(message), flag("MESSAGE_BLANK")),
  Schema.filter((message) => utf8Length(message) <= maxMessageBytes, flag("MESSAGE_TOO_LONG")),
);

/** The arguments of notes_pull, as decoded. */
export interface PullArguments {
  readonly path?: string;
}

/** The arguments of notes_commit, as decoded. */
export interface CommitArguments {
  readonly message: string;
  readonly path?: string;
}

/**
 * How a decode error shows text the caller sent (a field name): the default cuts it at
 * 64 characters. A caller that redacts must redact *before* cutting (a secret cut in
 * half no longer matches), so it passes its own.
 */
export type Echo = (text: string) => string;

/** Cuts `text` at 64 UTF-16 code units, marking the cut. */
export const cutEcho: Echo = (text) => (text.length > 64 ? `${text.slice(0, 64)}…` : text);

const invalid = (message: string): DomainError =>
  domainError({ code: "INVALID_REQUEST", reason: "INVALID_ARGUMENT", message });

const isProblem = (text: string): text is Problem => Object.hasOwn(problems, text);

/** The field an `_ENCODING` problem is about. */
const encodingSubjects: Partial<Record<Problem, string>> = {
  PATH_ENCODING: "path",
  MESSAGE_ENCODING: "message",
  FILE_ENCODING: "file",
};

/**
 * The message of a problem with `value`: for an encoding one, the fault itself (a lone
 * surrogate or U+0000, and where), since the fixes differ and "without U+0000" alone
 * sends a caller with a broken escape looking for a character that is not there.
 */
const problemMessage = (problem: Problem, value: string): string => {
  const subject = encodingSubjects[problem];
  const fault = subject === undefined ? undefined : textFault(value);
  return subject === undefined || fault === undefined
    ? problems[problem]
    : `${textFaultMessage(subject, fault)}.`;
};

const checkString = (
  schema: Schema.Schema<string>,
  value: string,
): Either.Either<string, DomainError> =>
  Either.mapLeft(
    Schema.decodeUnknownEither(schema, { errors: "first" })(value),
    (error: ParseResult.ParseError) => {
      const [issue] = ParseResult.ArrayFormatter.formatErrorSync(error);
      const problem = issue?.message ?? "";
      // Every filter names its problem; anything else would be a bug in this file.
      if (!isProblem(problem)) return invalid("A field has an invalid value.");
      // Only problems named like an error reason are reported under their own name.
      const reason =
        problem === "PATH_ENCODING" ||
        problem === "MESSAGE_ENCODING" ||
        problem === "FILE_ENCODING" ||
        problem === "FILE_NOT_RELATIVE"
          ? "INVALID_ARGUMENT"
          : problem;
      return domainError({
        code: "INVALID_REQUEST",
        reason,
        message: problemMessage(problem, value),
      });
    },
  );

interface Field {
  readonly name: "path" | "message" | "file";
  readonly required: boolean;
  readonly schema: Schema.Schema<string>;
}

/**
 * The shared decode: `input` must be absent (`undefined`: no arguments) or a JSON object
 * whose own keys are all `fields`; required fields must be present; each present field
 * must be a string; then each must pass its checks. The first problem found, in that
 * order (shape before values), is the error.
 */
const decodeFields = (
  tool: "notes_pull" | "notes_commit" | "notes_log",
  fields: ReadonlyArray<Field>,
  input: unknown,
  echo: Echo,
): Either.Either<Partial<Record<Field["name"], string>>, DomainError> => {
  const accepted = fields.map((field) => field.name).join(" and ");
  if (input === undefined) input = {};
  if (!isJsonObject(input)) {
    return Either.left(
      invalid(`${tool} arguments must be a JSON object (${accepted}), not ${jsonTypeOf(input)}.`),
    );
  }
  for (const key of Object.keys(input)) {
    if (!fields.some((field) => field.name === key)) {
      return Either.left(
        invalid(`${tool} has no field ${JSON.stringify(echo(key))}; it accepts only ${accepted}.`),
      );
    }
  }
  // The shape first (every field present when required, and a string), then the values:
  // a call with a wrong type is refused as malformed even when another field is too long.
  const present: Array<readonly [Field, string]> = [];
  for (const field of fields) {
    if (!Object.hasOwn(input, field.name)) {
      if (field.required) return Either.left(invalid(`${tool} needs the field "${field.name}".`));
      continue;
    }
    const value = input[field.name];
    if (typeof value !== "string") {
      return Either.left(invalid(`"${field.name}" must be a string, not ${jsonTypeOf(value)}.`));
    }
    present.push([field, value]);
  }
  const decoded: Partial<Record<Field["name"], string>> = {};
  for (const [field, value] of present) {
    const checked = checkString(field.schema, value);
    if (Either.isLeft(checked)) return Either.left(checked.left);
    decoded[field.name] = checked.right;
  }
  return Either.right(decoded);
};

const pathField: Field = { name: "path", required: false, schema: PathArgument };
const messageField: Field = { name: "message", required: true, schema: MessageArgument };

/** Decodes notes_pull arguments (`undefined` means none were sent). */
export const decodePullArguments = (
  input: unknown,
  echo: Echo = cutEcho,
): Either.Either<PullArguments, DomainError> =>
  Either.map(decodeFields("notes_pull", [pathField], input, echo), ({ path }) =>
    path === undefined ? {} : { path },
  );

/** Decodes notes_commit arguments (`undefined` means none were sent). */
export const decodeCommitArguments = (
  input: unknown,
  echo: Echo = cutEcho,
): Either.Either<CommitArguments, DomainError> =>
  Either.flatMap(
    decodeFields("notes_commit", [messageField, pathField], input, echo),
    ({ message, path }) =>
      message === undefined
        ? Either.left(invalid(`notes_commit needs the field "message".`))
        : Either.right(path === undefined ? { message } : { message, path }),
  );

/** The arguments of notes_log (`serve --history-tool`), as decoded. */
export interface LogArguments {
  readonly path?: string;
  readonly file?: string;
  readonly limit?: number;
  readonly sinceGeneration?: number;
}

/** The most publications one notes_log call lists. */
export const maxLogLimit = 1000;

/**
 * The bounds of notes_log's whole-number fields, advertised as the schema's `minimum` and
 * `maximum` too, so that the schema allows exactly the numbers this decode accepts.
 */
export const logIntegers = {
  limit: { min: 1, max: maxLogLimit },
  sinceGeneration: { min: 0, max: Number.MAX_SAFE_INTEGER },
} as const;

const fileField: Field = { name: "file", required: false, schema: FileArgument };

/**
 * Decodes notes_log arguments (`undefined` means none were sent): a JSON object of at
 * most `path`, `file` (strings, checked like notes_pull's path and as a notebook path)
 * and `limit` (1 to {@link maxLogLimit}), `sinceGeneration` (≥ 0), whole numbers.
 */
export const decodeLogArguments = (
  input: unknown,
  echo: Echo = cutEcho,
): Either.Either<LogArguments, DomainError> => {
  const accepted = "path, file, limit and sinceGeneration";
  if (input === undefined) input = {};
  if (!isJsonObject(input))
    return Either.left(
      invalid(`notes_log arguments must be a JSON object (${accepted}), not ${jsonTypeOf(input)}.`),
    );
  const strings: Record<string, unknown> = {};
  const numbers: { limit?: number; sinceGeneration?: number } = {};
  for (const key of Object.keys(input)) {
    if (key === "limit" || key === "sinceGeneration") {
      const value = input[key];
      const { min, max } = logIntegers[key];
      // A number too large for a double (1e309) parses as Infinity: out of range, not a
      // fraction.
      if (typeof value === "number" && !Number.isFinite(value))
        return Either.left(
          invalid(`"${key}" must be from ${min} to ${max.toLocaleString("en-US")}.`),
        );
      if (typeof value !== "number" || !Number.isInteger(value))
        return Either.left(
          invalid(
            `"${key}" must be a whole number, not ${jsonTypeOf(value)}${typeof value === "number" ? " with a fraction" : ""}.`,
          ),
        );
      if (value < min || value > max)
        return Either.left(
          invalid(`"${key}" must be from ${min} to ${max.toLocaleString("en-US")}.`),
        );
      numbers[key] = value;
    } else if (key === "path" || key === "file") strings[key] = input[key];
    else
      return Either.left(
        invalid(
          `notes_log has no field ${JSON.stringify(echo(key))}; it accepts only ${accepted}.`,
        ),
      );
  }
  return Either.map(
    decodeFields("notes_log", [pathField, fileField], strings, echo),
    ({ path, file }) => ({
      ...(path === undefined ? {} : { path }),
      ...(file === undefined ? {} : { file: file.replace(/\/+$/, "") }),
      ...numbers,
    }),
  );
};
