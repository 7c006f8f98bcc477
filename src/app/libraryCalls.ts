/**
 * The arguments of the library facade's calls, checked at the door: the facade is
 * called from plain JavaScript too, where a number may come for a message, `null` for
 * the options or a misspelt option name. Each such call answers
 * INVALID_REQUEST/INVALID_ARGUMENT naming the argument, like a malformed MCP call,
 * instead of throwing from inside a use case or silently ignoring an option. The
 * values' ranges and paths are the use cases' to check (usecases/history/requestChecks.ts).
 */
import { type Either, Schema } from "effect";
import type { DomainError } from "../domain/errors.js";
import { checkedShape } from "./usecases/shared/requestShapes.js";

const path = Schema.optional(Schema.String);
const files = Schema.Array(Schema.String);

/** `pull(path?)`, `status(path?)`. */
export const PathCall = Schema.Struct({ path });
/** `commit(message, path?)`. */
export const CommitCall = Schema.Struct({ message: Schema.String, path });
/** `log(options?)`. */
export const LogCall = Schema.Struct({
  path,
  limit: Schema.optional(Schema.Number),
  file: Schema.optional(Schema.String),
});
/** `diff(options?)`. */
export const DiffCall = Schema.Struct({ path, files: Schema.optional(files) });
/** `show(options)`. */
export const ShowCall = Schema.Struct({
  path,
  generation: Schema.Number,
  files: Schema.optional(files),
});
/** `restore(options)`. */
export const RestoreCall = Schema.Struct({
  path,
  generation: Schema.Number,
  files,
  force: Schema.optional(Schema.Boolean),
});
/** `revert(options)`. */
export const RevertCall = Schema.Struct({ path, generation: Schema.Number });

const whole = (min: number, max: number) =>
  Schema.optional(Schema.Number.pipe(Schema.int(), Schema.between(min, max)));

/**
 * `openNotebook(options)`: the settings take the ranges the CLI's flags take
 * (config.ts); the store, file system and path-set objects are checked by the code that
 * uses them.
 */
export const OpenOptions = Schema.Struct({
  store: Schema.Union(Schema.String, Schema.Object),
  remote: Schema.optional(
    Schema.Struct({
      endpoint: Schema.optional(Schema.String),
      region: Schema.optional(Schema.String),
      forcePathStyle: Schema.optional(Schema.Boolean),
    }),
  ),
  workspaceRoot: Schema.String,
  notebookDirectory: path,
  privateRoot: Schema.String,
  fileSystem: Schema.optional(Schema.Object),
  author: Schema.optional(Schema.Struct({ name: Schema.String, version: Schema.String })),
  commitRetries: whole(0, 100),
  checkpointPacks: whole(1, 1_000_000),
  checkpointBytes: whole(1, 999_999_999),
  retainedCheckpoints: whole(0, 64),
  allowMassDelete: Schema.optional(Schema.Boolean),
  pathSets: Schema.optional(Schema.Object),
  probe: Schema.optional(Schema.Boolean),
});

/**
 * `value` as the arguments of the facade's call `name`, or INVALID_REQUEST/
 * INVALID_ARGUMENT naming the first argument that is missing, of the wrong type or not
 * an option of the call (a misspelt option is refused, never silently ignored).
 */
export const checkCall = <A, I>(
  name: string,
  schema: Schema.Schema<A, I>,
  value: unknown,
): Either.Either<A, DomainError> => checkedShape(name, schema, value, "error");
