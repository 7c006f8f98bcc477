/**
 * The arguments of the history calls (log, diff, show, restore, revert), checked before
 * any I/O, the same for the CLI, MCP and the library: a generation or a limit that is
 * not a whole number in range, or a file that is not a notebook path, is
 * INVALID_REQUEST/INVALID_ARGUMENT naming what is wrong — never an empty answer that
 * looks like "nothing changed there" (docs/history.md "Arguments").
 */
import { Effect, Either } from "effect";
import { domainError, type DomainError } from "../../../domain/errors.js";
import type { LogRequest } from "../../../domain/history.js";
import { normalizeNotebookPath } from "../../../domain/paths.js";

const invalid = (message: string): DomainError =>
  domainError({ code: "INVALID_REQUEST", reason: "INVALID_ARGUMENT", message });

/** The largest generation or limit a call may name: beyond it numbers lose precision. */
const largest = Number.MAX_SAFE_INTEGER;

/** Fails unless `value` is a whole number from `min` to `max`; `what` names it. */
const wholeNumber = (
  value: number,
  what: string,
  min: number,
  max: number,
): Effect.Effect<number, DomainError> =>
  Number.isSafeInteger(value) && value >= min && value <= max
    ? Effect.succeed(value)
    : Effect.fail(
        invalid(
          `${what} must be a whole number from ${min.toLocaleString("en-US")} to ${max.toLocaleString("en-US")} (got ${String(value)}).`,
        ),
      );

/** A publication's generation: a whole number from 1. */
export const checkedGeneration = (generation: number): Effect.Effect<number, DomainError> =>
  wholeNumber(generation, "The generation", 1, largest);

/** The most publications one log lists. */
export const maxLogLimit = 1_000_000;

/** How many publications a log lists: 1 to {@link maxLogLimit}. */
export const checkedLimit = (limit: number): Effect.Effect<number, DomainError> =>
  wholeNumber(limit, "The limit", 1, maxLogLimit);

/** How a refused file shows in the message: quoted, cut at 64 characters (it may be huge). */
const echo = (file: string): string =>
  JSON.stringify(file.length > 64 ? `${file.slice(0, 64)}…` : file);

/**
 * A file argument as the notebook path it names. Only what cannot be ambiguous is
 * repaired — leading `./` and trailing `/`, as a shell's completion writes them — then
 * the path must be a valid notebook path (SPEC §4): `../x`, `/x`, `a//b` or `a/./b` name
 * nothing in a notebook and are refused, with the rule they break. `.` or `./` (what the
 * repair leaves is empty or `.`) names the copy's top: refused as that, not as the
 * reserved name the repair would leave, which reads like quire's own mistake.
 */
export const checkedFile = (file: string): Effect.Effect<string, DomainError> => {
  const trimmed = file.replace(/^(\.\/+)+/, "").replace(/\/+$/, "");
  if (file !== "" && !file.startsWith("/") && (trimmed === "" || trimmed === "."))
    return Effect.fail(
      invalid(
        `${echo(file)} names the working copy's top, not a file in it: name a file or a directory below the top, as notes_log lists them (log, diff and show cover the whole copy when no file is given).`,
      ),
    );
  const normalized = normalizeNotebookPath(trimmed);
  return Either.isRight(normalized)
    ? Effect.succeed(normalized.right)
    : Effect.fail(
        invalid(
          `${echo(file)} is not a notebook path: ${normalized.left.message}. Name files relative to the working copy's top, as notes_log lists them.`,
        ),
      );
};

/** Every file argument checked ({@link checkedFile}), in order, duplicates dropped. */
export const checkedFiles = (
  files: ReadonlyArray<string>,
): Effect.Effect<ReadonlyArray<string>, DomainError> =>
  Effect.forEach(files, checkedFile).pipe(Effect.map((paths) => [...new Set(paths)]));

/** A log request with its limit, file and `sinceGeneration` (0 or more) checked. */
export const checkedLog = <R extends LogRequest>(request: R): Effect.Effect<R, DomainError> =>
  Effect.gen(function* () {
    const limit = yield* checkedLimit(request.limit);
    const file = request.file === undefined ? undefined : yield* checkedFile(request.file);
    const since =
      request.sinceGeneration === undefined
        ? undefined
        : yield* wholeNumber(request.sinceGeneration, "The first generation", 0, largest);
    return {
      ...request,
      limit,
      ...(file === undefined ? {} : { file }),
      ...(since === undefined ? {} : { sinceGeneration: since }),
    };
  });

/** The files a restore names: at least one, each checked ({@link checkedFiles}). */
export const checkedRestored = (
  files: ReadonlyArray<string>,
): Effect.Effect<ReadonlyArray<string>, DomainError> =>
  files.length === 0
    ? Effect.fail(invalid("Name at least one file to restore (a directory restores its files)."))
    : checkedFiles(files);
