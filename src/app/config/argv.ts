/**
 * Splits a command line into the command, its positional arguments and its options,
 * with no knowledge of what the values mean. Options may appear anywhere (before or
 * after PATH, even before the command); `--` ends option parsing.
 */
import { Either } from "effect";
import { editDistance } from "./editDistance.js";
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
  /**
   * Long names other tools give this option (`--limit` for `-n`): refused like any
   * unknown option, but the message names this one, so habit costs one retry.
   */
  readonly otherSpellings?: ReadonlyArray<string>;
  /**
   * `-N` (digits, as `git log -5`) means this option with value N: refused, naming
   * `-x N`, rather than read as it is elsewhere, so there is one spelling to learn. The
   * value names the command the option belongs to, for the message.
   */
  readonly digitShorthand?: string;
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

/**
 * How an option is written in a suggestion or a message: `-n/--max-count`, or `--force`
 * (both spellings, so a person who typed either recognises it).
 */
export const spelled = (spec: OptionSpec): string =>
  `${spec.short === undefined ? "" : `-${spec.short}/`}--${spec.name}`;

/**
 * What an unknown option most likely meant: `-n 5` for `-5`, the option another tool's
 * spelling names, or the long option within two edits (one for names of up to four
 * letters), as ` (did you mean …?)`; empty when nothing is near.
 */
const suggestion = (given: string, specs: ReadonlyArray<OptionSpec>): string => {
  const digits = /^-(\d+)$/.exec(given);
  const counted = specs.find(
    (spec) => spec.digitShorthand !== undefined && spec.short !== undefined,
  );
  if (digits !== null && counted?.short !== undefined && counted.digitShorthand !== undefined)
    // Not "did you mean": the line may be another command's (`quire show PATH -1`).
    return ` (a count is written -${counted.short} ${digits[1] ?? ""}, for ${counted.digitShorthand})`;
  const name = given.replace(/^-+/, "").toLowerCase();
  const named = specs.find((spec) => spec.otherSpellings?.includes(name) === true);
  if (named !== undefined) return ` (did you mean ${spelled(named)}?)`;
  const limit = name.length <= 4 ? 1 : 2;
  const nearest = specs
    .map((spec) => ({ spec, distance: editDistance(name, spec.name) }))
    .filter(({ distance }) => distance <= limit)
    .sort((x, y) => x.distance - y.distance)[0];
  return nearest === undefined ? "" : ` (did you mean ${spelled(nearest.spec)}?)`;
};

const unknownOption = (token: string, specs: ReadonlyArray<OptionSpec>): ConfigError => {
  const given = token.split("=")[0] ?? token;
  return new ConfigError({
    message: `unknown option ${JSON.stringify(given)}${suggestion(given, specs)}`,
  });
};

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
      return `option ${spelled(spec)} given more than once (it takes one value)`;
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
    if (spec === undefined) return Either.left(unknownOption(token, specs));

    if (!spec.takesValue) {
      if (inline !== undefined) {
        return Either.left(new ConfigError({ message: `option ${spelled(spec)} takes no value` }));
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
      return Either.left(new ConfigError({ message: `option ${spelled(spec)} needs a value` }));
    }
    index += 1;
    const repeated = record(spec, next);
    if (repeated !== undefined) return refuse(repeated);
  }
  return Either.right({ positionals, options });
};
