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
