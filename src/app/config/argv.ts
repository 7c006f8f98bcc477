/**
 * Splits a command line into the command, its positional arguments and its options,
 * with no knowledge of what the values mean. Options may appear anywhere (before or
 * after PATH, even before the command); `--` ends option parsing.
 */
import { Either } from "effect";
import { ConfigError } from "./error.js";

/** How one option is spelled and whether it takes a value. */
export interface OptionSpec {
  /** The long name without `--`. */
  readonly name: string;
  /** A one-letter short alias without `-`, if any. */
  readonly short?: string;
  /** Whether the option takes a value (`--name value` or `--name=value`). */
  readonly takesValue: boolean;
  /**
   * Whether a value option may be given more than once, each use adding a value (a
   * list, like `--writable`). Any other value option given twice is refused: silently
   * taking the last would hide a mistake (`--from 1 --from 2`: which one did you mean?).
   */
  readonly repeatable?: true;
}

/**
 * The result of {@link splitArgv}: options by long name, each with every value given, in
 * order (one, unless the option is repeatable; one `""` per use of a switch).
 */
export interface SplitArgv {
  readonly positionals: ReadonlyArray<string>;
  /** Long name → values in order of appearance (`""` for each use of a switch). */
  readonly options: ReadonlyMap<string, ReadonlyArray<string>>;
}

const unknownOption = (token: string): ConfigError =>
  new ConfigError({ message: `unknown option ${JSON.stringify(token.split("=")[0])}` });

/**
 * Tokenises `argv` (without the node and script entries) against `specs`.
 *
 * Accepted spellings: `--name value`, `--name=value`, `-x value`, `-xvalue`, `-x=value`,
 * and switches `--name` / `-x`. A value option takes the next token verbatim even if it
 * starts with `-` (so `-m "-fix"` works). A lone `-` is a positional.
 *
 * Fails with {@link ConfigError} on an unknown option, a value option without a value,
 * a value given to a switch, or a value option that is not repeatable given twice.
 */
export const splitArgv = (
  argv: ReadonlyArray<string>,
  specs: ReadonlyArray<OptionSpec>,
): Either.Either<SplitArgv, ConfigError> => {
  const byLong = new Map(specs.map((spec) => [spec.name, spec]));
  const byShort = new Map(
    specs.flatMap((spec) => (spec.short === undefined ? [] : [[spec.short, spec] as const])),
  );
  const positionals: Array<string> = [];
  const options = new Map<string, Array<string>>();
  /** Adds a use of `spec`; a message when a second value of a single-valued option is refused. */
  const record = (spec: OptionSpec, value: string): string | undefined => {
    const values = options.get(spec.name) ?? [];
    if (spec.takesValue && spec.repeatable !== true && values.length > 0)
      return `option ${spec.short === undefined ? "" : `-${spec.short}/`}--${spec.name} given more than once (it takes one value)`;
    values.push(value);
    options.set(spec.name, values);
    return undefined;
  };
  const refuse = (message: string) => Either.left(new ConfigError({ message }));

  let index = 0;
  while (index < argv.length) {
    const token = argv[index] ?? "";
    index += 1;
    if (token === "--") {
      positionals.push(...argv.slice(index));
      break;
    }
    if (!token.startsWith("-") || token === "-") {
      positionals.push(token);
      continue;
    }

    let spec: OptionSpec | undefined;
    let inline: string | undefined;
    if (token.startsWith("--")) {
      const equals = token.indexOf("=");
      const name = equals === -1 ? token.slice(2) : token.slice(2, equals);
      spec = byLong.get(name);
      inline = equals === -1 ? undefined : token.slice(equals + 1);
    } else {
      spec = byShort.get(token.slice(1, 2));
      const rest = token.slice(2);
      inline = rest === "" ? undefined : rest.startsWith("=") ? rest.slice(1) : rest;
    }
    if (spec === undefined) return Either.left(unknownOption(token));

    if (!spec.takesValue) {
      if (inline !== undefined) {
        return Either.left(new ConfigError({ message: `option --${spec.name} takes no value` }));
      }
      record(spec, "");
      continue;
    }
    if (inline !== undefined) {
      const repeated = record(spec, inline);
      if (repeated !== undefined) return refuse(repeated);
      continue;
    }
    const next = argv[index];
    if (next === undefined) {
      return Either.left(new ConfigError({ message: `option --${spec.name} needs a value` }));
    }
    index += 1;
    const repeated = record(spec, next);
    if (repeated !== undefined) return refuse(repeated);
  }
  return Either.right({ positionals, options });
};
