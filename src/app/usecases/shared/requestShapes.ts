/**
 * The shapes of the Notebook service's requests, checked at its door (SPEC §10): the
 * service is part of the library API, and plain JavaScript may call it with no request,
 * `null`, a number for a message or no `files`. Such a call fails with
 * INVALID_REQUEST/INVALID_ARGUMENT naming the argument, as a malformed MCP call or a
 * facade call does, instead of dying inside a use case with a TypeError. The values'
 * ranges and paths are the use cases' to check (history/requestChecks.ts, the path
 * resolution); options the service does not know are ignored, as a typed caller may
 * pass a wider object (share.ts forwards its requests with their `op`).
 */
import { Effect, Either, identity, Option, ParseResult, Schema } from "effect";
import { domainError, type DomainError } from "../../../domain/errors.js";
import { describeIssue } from "../../../domain/schemaProblem.js";
import type { NotebookService } from "../../Notebook.js";

/**
 * An optional field that may also be given as `undefined` (plain JavaScript's way of
 * leaving it out), decoded as absent.
 */
const omittable = <A>(schema: Schema.Schema<A>) =>
  Schema.optionalToOptional(Schema.UndefinedOr(schema), schema, {
    decode: Option.filter((value): value is A => value !== undefined),
    encode: identity,
  });

const path = omittable(Schema.String);
const files = Schema.Array(Schema.String);

/** `pull` and `status`: `{ path? }`. */
export const PathRequest = Schema.Struct({ path });
/** `commit`: `{ path?, message, author: { name, version } }`. */
export const CommitShape = Schema.Struct({
  path,
  message: Schema.String,
  author: Schema.Struct({ name: Schema.String, version: Schema.String }),
});
/** `log`: `{ path?, limit, file?, sinceGeneration? }`. */
export const LogShape = Schema.Struct({
  path,
  limit: Schema.Number,
  file: omittable(Schema.String),
  sinceGeneration: omittable(Schema.Number),
});
/** `diff`: `{ path?, files }`. */
export const DiffShape = Schema.Struct({ path, files });
/** `show`: `{ path?, generation, files }`. */
export const ShowShape = Schema.Struct({ path, generation: Schema.Number, files });
/** `restore`: `{ path?, generation, files, force }`. */
export const RestoreShape = Schema.Struct({
  path,
  generation: Schema.Number,
  files,
  force: Schema.Boolean,
});
/** `revert`: `{ path?, generation }`. */
export const RevertShape = Schema.Struct({ path, generation: Schema.Number });
/** `discardIfPublished`: an optional path. */
export const OptionalPath = Schema.UndefinedOr(Schema.String);

/**
 * `value` as the arguments of call `name` by `schema`, or INVALID_REQUEST/
 * INVALID_ARGUMENT (`Invalid arguments to <name>: <problem>.`) naming the first argument
 * that is missing, of the wrong type, or — with `excess: "error"` — not an option of the
 * call. Never throws: reading the arguments runs the caller's code (a getter, a Proxy's
 * traps), and what it throws is a bad argument too.
 */
export const checkedShape = <A, I>(
  name: string,
  schema: Schema.Schema<A, I>,
  value: unknown,
  excess: "error" | "ignore",
): Either.Either<A, DomainError> => {
  const refused = (problem: string) =>
    domainError({
      code: "INVALID_REQUEST",
      reason: "INVALID_ARGUMENT",
      message: `Invalid arguments to ${name}: ${problem}.`,
    });
  try {
    return ParseResult.decodeUnknownEither(schema, { onExcessProperty: excess })(value).pipe(
      Either.mapLeft((issue) => refused(describeIssue(issue))),
    );
  } catch {
    return Either.left(refused("they could not be read (a getter or proxy threw)"));
  }
};

/**
 * The request of the service's call `Notebook.<method>` as `schema` reads it, checked
 * when the effect runs (never when it is made, so that calling the service cannot throw);
 * fails as {@link checkedShape} does.
 */
export const shaped = <A, I>(
  method: string,
  schema: Schema.Schema<A, I>,
  request: unknown,
): Effect.Effect<A, DomainError> =>
  Effect.suspend(() => checkedShape(`Notebook.${method}`, schema, request, "ignore"));

/**
 * `service` with every call's request checked first ({@link shaped}): a call from plain
 * JavaScript with a malformed request fails with INVALID_REQUEST/INVALID_ARGUMENT
 * before `service` sees it; a well-formed one is passed on as decoded (options the
 * service does not know left out). Nothing else changes.
 */
export const checkedRequests = (service: NotebookService): NotebookService => ({
  ...service,
  pull: (request) => shaped("pull", PathRequest, request).pipe(Effect.flatMap(service.pull)),
  commit: (request) => shaped("commit", CommitShape, request).pipe(Effect.flatMap(service.commit)),
  log: (request) => shaped("log", LogShape, request).pipe(Effect.flatMap(service.log)),
  status: (request) => shaped("status", PathRequest, request).pipe(Effect.flatMap(service.status)),
  diff: (request) => shaped("diff", DiffShape, request).pipe(Effect.flatMap(service.diff)),
  show: (request) => shaped("show", ShowShape, request).pipe(Effect.flatMap(service.show)),
  restore: (request) =>
    shaped("restore", RestoreShape, request).pipe(Effect.flatMap(service.restore)),
  revert: (request) => shaped("revert", RevertShape, request).pipe(Effect.flatMap(service.revert)),
  discardIfPublished: (path) =>
    shaped("discardIfPublished", OptionalPath, path).pipe(
      Effect.flatMap(service.discardIfPublished),
    ),
});
