/**
 * Configuration (SPEC §9): a pure function from the command line and the environment
 * to what the process should do. Precedence per setting: flags > environment > defaults.
 * An environment variable set to the empty string counts as unset.
 */
import * as NodePath from "node:path";
import { Either } from "effect";
import { type FaultyObjectStoreOptions, parseFaultSpec } from "../adapters/faultyObjectStore.js";
import { authorProblem } from "../domain/author.js";
import { defaultLogLimit } from "../domain/history.js";
import { type PathSets, normalizePathSets } from "../domain/pathSets.js";
import { type OptionSpec, spelled, splitArgv } from "./config/argv.js";
import { ConfigError } from "./config/error.js";
import { editDistance } from "./config/editDistance.js";
import { isAtOrBelow, resolveHostPath } from "./config/paths.js";
import { maxAnswerBytes } from "./share/protocol.js";
import {
  type StoreConfig,
  type StoreSpec,
  parseBucket,
  parseEndpoint,
  parsePrefix,
  parseStoreSpec,
} from "./config/store.js";

export { ConfigError } from "./config/error.js";
export type { BucketStoreConfig, StoreConfig } from "./config/store.js";

/** What the parser may know about the host; tests pass a fixed one. */
export interface Host {
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Absolute current directory. */
  readonly cwd: string;
  readonly homeDirectory: string;
  /** The temp directory (`os.tmpdir()`, which honours `TMPDIR`). */
  readonly tmpDirectory: string;
}

/** The subcommands. */
export type Command =
  | "serve"
  | "pull"
  | "commit"
  | "log"
  | "status"
  | "diff"
  | "show"
  | "restore"
  | "revert"
  | "version";

/** What a help request is about. */
export type HelpTopic = "quire" | Command;

/**
 * Where working copies live. `session`: `serve` without a workspace root creates
 * `<tmpDirectory>/quire-<random>/notebook` at startup and uses it as both the workspace
 * root and the notebook directory. `root`: the given absolute directory.
 */
export type WorkspaceConfig =
  | { readonly kind: "session"; readonly tmpDirectory: string }
  | {
      readonly kind: "root";
      readonly root: string;
      /**
       * False when the root is the CLI's default (the current directory): the private root
       * may then lie below it (e.g. `~/.cache/quire` under `~`), and the use cases instead
       * refuse any working copy that overlaps the private root.
       */
      readonly explicit: boolean;
    };

/** Everything serve/pull/commit need, validated and with defaults applied. */
export interface RuntimeConfig {
  readonly store: StoreConfig;
  readonly workspace: WorkspaceConfig;
  /** Absolute private root; lexically never at or below a `root` workspace. */
  readonly privateRoot: string;
  readonly homeDirectory: string;
  /** 0..100. */
  readonly commitRetries: number;
  /** 1..1,000,000. */
  readonly checkpointPacks: number;
  /** 0..64. */
  readonly retainedCheckpoints: number;
  /** Tail bytes that trigger a checkpoint; absent: the use cases' default (64 MiB). */
  readonly checkpointBytes?: number;
  /** `--allow-mass-delete` / `QUIRE_ALLOW_MASS_DELETE=1`; absent: refused (MASS_DELETE). */
  readonly allowMassDelete?: true;
  /**
   * `serve` may share its process with the store's other `serve` processes on this host
   * (app/share); `--no-share` / `QUIRE_NO_SHARE=1` turns it off. Only `serve` shares.
   */
  readonly share: boolean;
  /**
   * Hidden test switch `QUIRE_SHARE_ANSWER_BYTES`: a lower bound on the answer a sharing
   * `serve` process sends and its callers read (app/share/protocol.ts, `maxAnswerBytes`,
   * derived, about 16 MiB, when absent), so a test can reach it without 100,000 files.
   */
  readonly shareAnswerBytes?: number;
  /** Hidden test switch `QUIRE_FAULT_INJECTION`: wrap the store in the fault injector. */
  readonly faultInjection?: FaultyObjectStoreOptions;
  /**
   * Hidden diagnostic switch `QUIRE_MEMORY_SAMPLES=1`: `serve` answers SIGUSR2 with a
   * memory sample after a full garbage collection (app/memorySamples.ts).
   */
  readonly memorySamples?: true;
  readonly pathSets: PathSets;
  /**
   * `--author NAME` / `QUIRE_AUTHOR`: the name publications are recorded under (SPEC §11),
   * the client's own name then kept beside it (domain/author.ts); absent: the client's.
   */
  readonly author?: string;
  /** `serve --history-tool`: also serve the read-only MCP tool `notes_log` (SPEC §11). */
  readonly historyTool?: true;
  /** Secret environment values (AWS keys, tokens) every diagnostic is scrubbed of. */
  readonly secretValues: ReadonlyArray<string>;
}

/** What the process was asked to do. */
export type Invocation =
  | { readonly _tag: "Help"; readonly topic: HelpTopic }
  | { readonly _tag: "Version" }
  | { readonly _tag: "Serve"; readonly config: RuntimeConfig }
  | { readonly _tag: "Pull"; readonly config: RuntimeConfig; readonly path: string }
  | {
      readonly _tag: "Commit";
      readonly config: RuntimeConfig;
      readonly path: string;
      readonly message: string;
    }
  | {
      readonly _tag: "Log";
      readonly config: RuntimeConfig;
      readonly path: string;
      /** `-n N`: at most this many publications (default {@link defaultLogLimit}). */
      readonly limit: number;
      /** `--file F`: only publications that changed this notebook path (or below it). */
      readonly file?: string;
      /** `--full`: whole messages, not their first lines. */
      readonly full: boolean;
      /** `--json`: the structured log on stdout instead of text. */
      readonly json: boolean;
    }
  | {
      readonly _tag: "Status";
      readonly config: RuntimeConfig;
      readonly path: string;
      /** `--json`: the structured status on stdout instead of text. */
      readonly json: boolean;
    }
  | {
      readonly _tag: "Diff";
      readonly config: RuntimeConfig;
      readonly path: string;
      /** `FILE…` after PATH: only these notebook paths (or directories of them). */
      readonly files: ReadonlyArray<string>;
      /** `--stat`: the diffstat instead of the diff. */
      readonly stat: boolean;
      /** `--json`: the structured diff on stdout instead of text. */
      readonly json: boolean;
    }
  | {
      readonly _tag: "Show";
      readonly config: RuntimeConfig;
      readonly path: string;
      readonly generation: number;
      /** `FILE…` after GEN: only these notebook paths (or directories of them). */
      readonly files: ReadonlyArray<string>;
      /** `--json`: the structured publication on stdout instead of text. */
      readonly json: boolean;
    }
  | {
      readonly _tag: "Restore";
      readonly config: RuntimeConfig;
      readonly path: string;
      /** `--from GEN`. */
      readonly generation: number;
      /** The notebook paths (or directories of them) to restore. */
      readonly files: ReadonlyArray<string>;
      /** `--force`: replace unpublished changes too. */
      readonly force: boolean;
      /** `--json`: what was written as one JSON object. */
      readonly json: boolean;
    }
  | {
      readonly _tag: "Revert";
      readonly config: RuntimeConfig;
      readonly path: string;
      readonly generation: number;
      /** `--json`: what was written as one JSON object. */
      readonly json: boolean;
    };

/** The options of serve, pull and commit (`quire mcp install` passes them through to serve). */
export const runtimeOptions: ReadonlyArray<OptionSpec> = [
  { name: "store", takesValue: true },
  { name: "bucket", takesValue: true },
  { name: "prefix", takesValue: true },
  { name: "endpoint", takesValue: true },
  { name: "region", takesValue: true },
  { name: "path-style", takesValue: false },
  { name: "workspace-root", takesValue: true },
  { name: "private-root", takesValue: true },
  { name: "commit-retries", takesValue: true },
  { name: "checkpoint-packs", takesValue: true },
  { name: "retained-checkpoints", takesValue: true },
  { name: "checkpoint-bytes", takesValue: true },
  { name: "allow-mass-delete", takesValue: false },
  { name: "no-share", takesValue: false },
  { name: "author", takesValue: true },
  { name: "history-tool", takesValue: false },
  { name: "writable", takesValue: true, repeatable: true },
  { name: "read-only", takesValue: true, repeatable: true },
];
const messageOption: OptionSpec = { name: "message", short: "m", takesValue: true };
const helpOption: OptionSpec = { name: "help", short: "h", takesValue: false };
/** `--version`/`-v`: the version, given alone (parseInvocation). */
const versionOption: OptionSpec = { name: "version", short: "v", takesValue: false };
/** The options of `quire log` alone. */
const logOptions: ReadonlyArray<OptionSpec> = [
  {
    name: "max-count",
    short: "n",
    takesValue: true,
    // git log's and other tools' spellings of the count, which a person types from habit.
    otherSpellings: ["limit", "number", "count", "max", "max_count", "maxcount"],
    digitShorthand: "quire log",
  },
  { name: "file", takesValue: true },
  { name: "full", takesValue: false },
];
/** `--json`, of `quire log`, `quire status` and `quire diff`. */
const jsonOption: OptionSpec = { name: "json", takesValue: false };
/** `--stat`, of `quire diff`. */
const statOption: OptionSpec = { name: "stat", takesValue: false };
/** `--from GEN` and `--force`, of `quire restore`. */
const restoreOptions: ReadonlyArray<OptionSpec> = [
  { name: "from", takesValue: true },
  { name: "force", takesValue: false },
];
const allOptions: ReadonlyArray<OptionSpec> = [
  ...runtimeOptions,
  messageOption,
  ...logOptions,
  jsonOption,
  statOption,
  ...restoreOptions,
  helpOption,
  versionOption,
];

const commands: ReadonlyArray<Command> = [
  "serve",
  "pull",
  "commit",
  "log",
  "status",
  "diff",
  "show",
  "restore",
  "revert",
  "version",
];
const isCommand = (word: string | undefined): word is Command =>
  commands.some((command) => command === word);

/** The commands that take `--json`. */
const jsonCommands: ReadonlyArray<Command> = ["log", "status", "diff", "show", "restore", "revert"];

/**
 * Whether a command line asks for JSON — `--json` before any `--`, and the first command
 * word on the line is one that has it — told without parsing the line, so that a line
 * the parser refuses is refused in the form asked for (docs/history.md, "Errors with
 * --json"). `quire pull --json` is not asking: pull has no JSON form.
 */
export const jsonRequested = (argv: ReadonlyArray<string>): boolean => {
  const beforeEnd = argv.slice(0, argv.includes("--") ? argv.indexOf("--") : argv.length);
  const command = beforeEnd.find((token) => isCommand(token));
  return beforeEnd.includes("--json") && command !== undefined && jsonCommands.includes(command);
};

/** Every word `quire` takes as a command, for suggestions (`mcp` is routed before parsing). */
const knownCommands: ReadonlyArray<string> = [...commands, "mcp", "help"];

/**
 * The command a mistyped word most likely meant: the nearest known command within two
 * edits (one for words of up to three letters), or one the word is a prefix of.
 */
export const nearestCommand = (word: string): string | undefined => {
  const lower = word.toLowerCase();
  const scored = knownCommands
    .map((command) => ({ command, distance: editDistance(lower, command) }))
    .sort((x, y) => x.distance - y.distance);
  const best = scored[0];
  const limit = lower.length <= 3 ? 1 : 2;
  if (best !== undefined && best.distance <= limit) return best.command;
  return lower.length >= 2 ? knownCommands.find((command) => command.startsWith(lower)) : undefined;
};

/** The usage error for a word that is no command, with the nearest command if any. */
const unknownCommand = (word: string): string => {
  const nearest = nearestCommand(word);
  return `unknown command ${JSON.stringify(word)} (${nearest === undefined ? "" : `did you mean quire ${nearest}? `}try quire -h)`;
};

const fail = (message: string) => Either.left(new ConfigError({ message }));

/**
 * Parses a command line (`argv` without node and the script) against the host.
 *
 * `-h`/`--help` anywhere (or `quire help [command]`) wins over everything else and is
 * never an error. `quire version` / `quire --version` reads no configuration at all.
 * Fails with {@link ConfigError} for an unknown command or option, a missing or extra
 * PATH, an option the command does not take, or any invalid setting.
 */
export const parseInvocation = (
  argv: ReadonlyArray<string>,
  host: Host,
): Either.Either<Invocation, ConfigError> => {
  return Either.gen(function* () {
    const split = splitArgv(argv, allOptions);
    if (Either.isLeft(split)) {
      // Help still wins over a malformed line: `quire pull --typo -h` shows pull's help.
      const beforeEnd = argv.slice(0, argv.includes("--") ? argv.indexOf("--") : argv.length);
      if (beforeEnd.some((token) => token === "-h" || token === "--help")) {
        const about = beforeEnd.find((token) => isCommand(token));
        return { _tag: "Help", topic: about ?? "quire" } satisfies Invocation;
      }
      return yield* Either.left(split.left);
    }
    const { positionals, options } = split.right;
    const [first, ...rest] = positionals;
    // `--version`/`-v` stands alone (help still wins over it, below).
    const version = options.get("version");
    if (version !== undefined && !options.has("help") && first !== "help") {
      if (version.length > 1 || options.size > 1 || positionals.length > 0)
        return yield* fail("--version (-v) takes no other arguments; run quire --version alone");
      return { _tag: "Version" } satisfies Invocation;
    }

    if (options.has("help") || first === "help") {
      const about = first === "help" ? rest[0] : first;
      // `quire help stauts` answered the general help with exit 0, as if it had worked.
      if (first === "help" && about !== undefined && about !== "mcp" && !isCommand(about))
        return yield* fail(unknownCommand(about));
      return { _tag: "Help", topic: isCommand(about) ? about : "quire" } satisfies Invocation;
    }
    if (first === undefined) return yield* fail("missing command (try quire -h)");
    if (!isCommand(first)) return yield* fail(unknownCommand(first));
    if (first === "version") {
      if (positionals.length > 1 || options.size > 0) {
        return yield* fail("quire version takes no arguments");
      }
      return { _tag: "Version" } satisfies Invocation;
    }
    const home = homeProblem(host);
    if (home !== undefined) return yield* fail(home);
    if (first !== "commit" && options.has("message")) {
      return yield* fail("-m/--message applies only to quire commit");
    }
    // Only serve processes share one (app/share): accepting the flag elsewhere would
    // suggest it changed something. QUIRE_NO_SHARE, set for a whole environment, is not
    // refused.
    if (first !== "serve" && options.has("no-share")) {
      return yield* fail("--no-share applies only to quire serve");
    }
    if (first !== "serve" && options.has("history-tool")) {
      return yield* fail("--history-tool applies only to quire serve (quire log is its CLI form)");
    }

    const logOnly = logOptions.find((option) => options.has(option.name));
    if (first !== "log" && logOnly !== undefined) {
      return yield* fail(`--${logOnly.name} applies only to quire log`);
    }
    if (first === "serve" || first === "pull" || first === "commit") {
      if (options.has("json"))
        return yield* fail(
          "--json applies only to quire log, status, diff, show, restore and revert",
        );
    }
    if (first !== "diff" && options.has("stat")) {
      return yield* fail("--stat applies only to quire diff");
    }
    const restoreOnly = restoreOptions.find((option) => options.has(option.name));
    if (first !== "restore" && restoreOnly !== undefined) {
      return yield* fail(`--${restoreOnly.name} applies only to quire restore`);
    }
    // Only serve and commit publish: a flag naming the author elsewhere would suggest so.
    if (first !== "serve" && first !== "commit" && options.has("author")) {
      return yield* fail("--author applies only to quire serve and quire commit");
    }

    const config = yield* parseRuntimeConfig(first, options, host);
    if (first === "serve") {
      if (rest.length > 0) return yield* fail("quire serve takes no PATH");
      return { _tag: "Serve", config } satisfies Invocation;
    }
    if (first === "restore" || first === "revert") {
      const [copy, ...more] = rest;
      const path = yield* parseCliPath(first, copy === undefined ? [] : [copy], host);
      if (first === "revert") {
        const [word, ...extra] = more;
        if (word === undefined) return yield* fail("quire revert needs PATH and GEN");
        if (extra.length > 0) return yield* fail("quire revert takes one GEN");
        const generation = yield* parseGeneration({ value: word, origin: "GEN" });
        return {
          _tag: "Revert",
          config,
          path,
          generation,
          json: options.has("json"),
        } satisfies Invocation;
      }
      const from = fromFlag(options, "from");
      if (from === undefined) return yield* fail("quire restore needs --from GEN");
      const generation = yield* parseGeneration(from);
      if (more.length === 0) return yield* fail("quire restore needs PATH and at least one FILE");
      for (const file of more)
        if (file === "" || file.includes("\u0000") || file.startsWith("/"))
          return yield* fail(
            "each FILE must be a notebook path relative to the working copy's top",
          );
      return {
        _tag: "Restore",
        config,
        path,
        generation,
        files: more,
        force: options.has("force"),
        json: options.has("json"),
      } satisfies Invocation;
    }
    if (first === "diff" || first === "show") {
      const [copy, ...more] = rest;
      const path = yield* parseCliPath(first, copy === undefined ? [] : [copy], host);
      const [generationWord, ...shownFiles] = more;
      const files = first === "show" ? shownFiles : more;
      for (const file of files)
        if (file === "" || file.includes("\u0000") || file.startsWith("/"))
          return yield* fail(
            "each FILE must be a notebook path relative to the working copy's top",
          );
      if (first === "diff")
        return {
          _tag: "Diff",
          config,
          path,
          files,
          stat: options.has("stat"),
          json: options.has("json"),
        } satisfies Invocation;
      if (generationWord === undefined) return yield* fail("quire show needs PATH and GEN");
      const generation = yield* parseGeneration({ value: generationWord, origin: "GEN" });
      return {
        _tag: "Show",
        config,
        path,
        generation,
        files,
        json: options.has("json"),
      } satisfies Invocation;
    }
    const path = yield* parseCliPath(first, rest, host);
    if (first === "pull") return { _tag: "Pull", config, path } satisfies Invocation;
    if (first === "log") return yield* parseLog(config, path, options);
    if (first === "status")
      return { _tag: "Status", config, path, json: options.has("json") } satisfies Invocation;

    // Given once at most: splitArgv refuses a second -m.
    const [message] = options.get("message") ?? [];
    if (message === undefined) return yield* fail("quire commit needs -m MESSAGE");
    if (message.includes(replacementCharacter))
      return yield* fail(`-m/--message ${notUtf8Text("published")}`);
    return { _tag: "Commit", config, path, message } satisfies Invocation;
  });
};

/** The rest of `quire log`: `-n`, `--file`, `--full`, `--json`. */
const parseLog = (
  config: RuntimeConfig,
  path: string,
  options: ReadonlyMap<string, ReadonlyArray<string>>,
): Either.Either<Invocation, ConfigError> =>
  Either.gen(function* () {
    const limit = yield* parseInteger(
      fromFlag(options, "max-count"),
      defaultLogLimit,
      1,
      1_000_000,
    );
    // As given: the use case repairs a trailing `/` and echoes the file as typed if refused.
    const file = fromFlag(options, "file")?.value;
    if (file !== undefined && (file === "" || file.includes("\u0000") || file.startsWith("/")))
      return yield* fail("--file must name a notebook path relative to the working copy's top");
    return {
      _tag: "Log",
      config,
      path,
      limit,
      ...(file === undefined ? {} : { file }),
      full: options.has("full"),
      json: options.has("json"),
    } satisfies Invocation;
  });

/**
 * Why the home directory cannot be used, or `undefined`: an empty or relative `HOME` would
 * put the default store and private state (and `~/` paths, and the MCP clients' user
 * configuration files) under the current directory, wherever that is — inside a working
 * copy, or a project that is not the user's.
 */
export const homeProblem = (host: Host): string | undefined =>
  NodePath.isAbsolute(host.homeDirectory)
    ? undefined
    : `HOME is ${host.homeDirectory === "" ? "empty" : `relative (${JSON.stringify(host.homeDirectory)})`}: quire keeps its store, its private state and the MCP clients' user settings under it; set HOME to your home directory's absolute path`;

/** What Node puts in argv and the environment for bytes that are not UTF-8. */
const replacementCharacter = "\ufffd";

/**
 * Why text holding {@link replacementCharacter} is refused: the bytes meant are lost, and
 * the replacement character would be `kept` (published, recorded) in their place.
 */
const notUtf8Text = (kept: string): string =>
  `contains U+FFFD: its bytes are not UTF-8 (or it holds U+FFFD itself), which would be ${kept} instead of what was written; pass it in UTF-8`;

/**
 * Why a path from the command line cannot be used as given, or `undefined`: U+0000, or
 * U+FFFD — bytes that are not UTF-8 reach quire as U+FFFD, so the path it would resolve
 * names another directory than the one meant (and a relative path is resolved against
 * the current directory, which must then be UTF-8 too).
 */
const hostPathProblem = (origin: string, path: string, host: Host): string | undefined => {
  if (path.includes("\u0000")) return `${origin} contains U+0000`;
  const notUtf8 = (text: string) => text.includes(replacementCharacter);
  if (notUtf8(path))
    return `${origin} contains U+FFFD: its bytes are not UTF-8 (or it holds U+FFFD itself), so quire cannot tell which directory it names; rename the directory to a UTF-8 name`;
  if (!NodePath.isAbsolute(path) && !path.startsWith("~") && notUtf8(host.cwd))
    return `${origin} is relative and the current directory's name is not UTF-8, so quire cannot tell which directory it names; pass an absolute path in UTF-8`;
  return undefined;
};

const parseCliPath = (
  command: "pull" | "commit" | "log" | "status" | "diff" | "show" | "restore" | "revert",
  rest: ReadonlyArray<string>,
  host: Host,
): Either.Either<string, ConfigError> => {
  const [path, ...extra] = rest;
  if (path === undefined) return fail(`quire ${command} needs a PATH`);
  if (extra.length > 0) return fail(`quire ${command} takes exactly one PATH`);
  if (path === "") return fail("PATH must not be empty");
  const problem = hostPathProblem("PATH", path, host);
  if (problem !== undefined) return fail(problem);
  return Either.right(resolveHostPath(path, host.cwd, host.homeDirectory));
};

/**
 * One setting's value from the flags (given once at most: splitArgv refuses a second) or
 * the environment, with its origin.
 */
interface Sourced {
  readonly value: string;
  /** How to name the setting in a message: `--flag` or `ENV_VAR`. */
  readonly origin: string;
}

const envValue = (host: Host, name: string): string | undefined => {
  const value = host.env[name];
  return value === undefined || value === "" ? undefined : value;
};

const fromFlag = (
  options: ReadonlyMap<string, ReadonlyArray<string>>,
  flag: string,
): Sourced | undefined => {
  const [value] = options.get(flag) ?? [];
  // Both spellings of an option that has a short one (`-n/--max-count`): a message naming
  // only `--max-count` after `-n abc` names something the person did not type.
  const spec = allOptions.find((option) => option.name === flag);
  return value === undefined
    ? undefined
    : { value, origin: spec === undefined ? `--${flag}` : spelled(spec) };
};

const fromEnv = (host: Host, ...names: ReadonlyArray<string>): Sourced | undefined => {
  for (const name of names) {
    const value = envValue(host, name);
    if (value !== undefined) return { value, origin: name };
  }
  return undefined;
};

/** A numeric setting (`fallback` when not given), parsed by {@link parseWholeNumber}. */
const parseInteger = (
  setting: Sourced | undefined,
  fallback: number,
  min: number,
  max: number,
): Either.Either<number, ConfigError> =>
  setting === undefined ? Either.right(fallback) : parseWholeNumber(setting, min, max);

/**
 * Every number the command line or the environment gives (`-n`, `GEN`, `--from`,
 * `--commit-retries`, `--checkpoint-packs`, `--retained-checkpoints`,
 * `--checkpoint-bytes` and their QUIRE_* variables): a whole number from `min` to `max`
 * (at most 999,999,999) written as quire prints numbers — decimal digits, no sign, no
 * spaces, no leading zero (`0` itself is a number). Anything else is a usage error
 * naming the setting: `007` may be a typo for `70`, and is not how any output of quire
 * writes a number, so it is refused rather than read as 7.
 */
const parseWholeNumber = (
  setting: Sourced,
  min: number,
  max: number,
): Either.Either<number, ConfigError> => {
  const number = /^(?:0|[1-9]\d{0,8})$/.test(setting.value) ? Number(setting.value) : Number.NaN;
  return number >= min && number <= max
    ? Either.right(number)
    : fail(
        `${setting.origin} must be a whole number from ${min} to ${max}, written without leading zeros`,
      );
};

/** A GEN (positional, or `--from`): a generation as quire prints it, 1 to 999,999,999. */
const parseGeneration = (setting: Sourced): Either.Either<number, ConfigError> =>
  parseWholeNumber(setting, 1, 999_999_999);

const parseDirectory = (setting: Sourced, host: Host): Either.Either<string, ConfigError> => {
  if (setting.value === "") return fail(`${setting.origin} must not be empty`);
  const problem = hostPathProblem(setting.origin, setting.value, host);
  if (problem !== undefined) return fail(problem);
  return Either.right(resolveHostPath(setting.value, host.cwd, host.homeDirectory));
};

/** An XDG base directory if set to an absolute path (the XDG spec says to ignore relative ones). */
const xdgBase = (host: Host, name: string, fallback: ReadonlyArray<string>): string => {
  const value = envValue(host, name);
  return value !== undefined && NodePath.isAbsolute(value)
    ? value
    : NodePath.join(host.homeDirectory, ...fallback);
};

/** Default private root: `$XDG_CACHE_HOME/quire` or `~/.cache/quire`. */
export const defaultPrivateRoot = (host: Host): string =>
  NodePath.join(xdgBase(host, "XDG_CACHE_HOME", [".cache"]), "quire");

/** Default file store: `$XDG_DATA_HOME/quire/store` or `~/.local/share/quire/store`. */
export const defaultStoreRoot = (host: Host): string =>
  NodePath.join(xdgBase(host, "XDG_DATA_HOME", [".local", "share"]), "quire", "store");

/** Environment variables whose values are credentials, scrubbed from every diagnostic. */
const secretNamePattern = /SECRET|TOKEN|PASSWORD|ACCESS_KEY|CREDENTIAL/i;

/** The secret values found in `env` (values shorter than 8 characters are too common to scrub). */
export const secretValuesOf = (env: Host["env"]): ReadonlyArray<string> =>
  Object.entries(env).flatMap(([name, value]) =>
    value !== undefined && value.length >= 8 && secretNamePattern.test(name) ? [value] : [],
  );

const parseRuntimeConfig = (
  command: "serve" | "pull" | "commit" | "log" | "status" | "diff" | "show" | "restore" | "revert",
  options: ReadonlyMap<string, ReadonlyArray<string>>,
  host: Host,
): Either.Either<RuntimeConfig, ConfigError> =>
  Either.gen(function* () {
    const store = yield* parseStore(options, host);

    const workspaceSetting =
      fromFlag(options, "workspace-root") ?? fromEnv(host, "QUIRE_WORKSPACE_ROOT");
    const workspace: WorkspaceConfig =
      workspaceSetting !== undefined
        ? { kind: "root", root: yield* parseDirectory(workspaceSetting, host), explicit: true }
        : command === "serve"
          ? { kind: "session", tmpDirectory: host.tmpDirectory }
          : { kind: "root", root: host.cwd, explicit: false };

    const privateSetting = fromFlag(options, "private-root") ?? fromEnv(host, "QUIRE_PRIVATE_ROOT");
    const privateRoot =
      privateSetting === undefined
        ? defaultPrivateRoot(host)
        : yield* parseDirectory(privateSetting, host);
    // Either way round: a workspace root inside the private root would let working copies
    // be made among the server's own state (`serve` refuses it too, once paths resolve).
    if (
      workspace.kind === "root" &&
      workspace.explicit &&
      (isAtOrBelow(privateRoot, workspace.root) || isAtOrBelow(workspace.root, privateRoot))
    ) {
      return yield* fail(
        isAtOrBelow(privateRoot, workspace.root)
          ? `the private root (--private-root) is at or below the workspace root ${workspace.root}; ` +
              "choose another --private-root or --workspace-root"
          : `the workspace root ${workspace.root} is inside the private root (--private-root); ` +
              "choose another --private-root or --workspace-root",
      );
    }
    // Checked here, before any layer creates the store's directory (SPEC §4.1); symlinks
    // are resolved and checked again when the workspace is prepared.
    if (
      store.kind === "file" &&
      workspace.kind === "root" &&
      workspace.explicit &&
      (isAtOrBelow(store.root, workspace.root) || isAtOrBelow(workspace.root, store.root))
    ) {
      return yield* fail(
        `the file store's directory (--store) and the workspace root ${workspace.root} overlap (one is inside the other); ` +
          "choose another --store or --workspace-root",
      );
    }

    const commitRetries = yield* parseInteger(
      fromFlag(options, "commit-retries") ?? fromEnv(host, "QUIRE_COMMIT_RETRIES"),
      8,
      0,
      100,
    );
    const checkpointPacks = yield* parseInteger(
      fromFlag(options, "checkpoint-packs") ?? fromEnv(host, "QUIRE_CHECKPOINT_PACKS"),
      1024,
      1,
      1_000_000,
    );
    const retainedCheckpoints = yield* parseInteger(
      fromFlag(options, "retained-checkpoints") ?? fromEnv(host, "QUIRE_RETAINED_CHECKPOINTS"),
      1,
      0,
      64,
    );
    const bytesSetting =
      fromFlag(options, "checkpoint-bytes") ?? fromEnv(host, "QUIRE_CHECKPOINT_BYTES");
    const checkpointBytes =
      bytesSetting === undefined ? undefined : yield* parseInteger(bytesSetting, 0, 1, 999_999_999);
    const allowMassDelete = yield* parseSwitch(
      options.has("allow-mass-delete"),
      fromEnv(host, "QUIRE_ALLOW_MASS_DELETE"),
    );
    const noShare = yield* parseSwitch(options.has("no-share"), fromEnv(host, "QUIRE_NO_SHARE"));
    const answerBytesSetting = fromEnv(host, "QUIRE_SHARE_ANSWER_BYTES");
    const shareAnswerBytes =
      answerBytesSetting === undefined
        ? undefined
        : yield* parseInteger(answerBytesSetting, 0, 1_024, maxAnswerBytes);
    const faultSpec = fromEnv(host, "QUIRE_FAULT_INJECTION");
    const faultInjection =
      faultSpec === undefined
        ? undefined
        : yield* Either.mapLeft(
            parseFaultSpec(faultSpec.value),
            (problem) => new ConfigError({ message: `QUIRE_FAULT_INJECTION: ${problem}` }),
          );
    const memorySamples = yield* parseSwitch(false, fromEnv(host, "QUIRE_MEMORY_SAMPLES"));
    const pathSets = yield* parsePathSets(options, host);
    const authorSetting = fromFlag(options, "author") ?? fromEnv(host, "QUIRE_AUTHOR");
    const author = authorSetting === undefined ? undefined : authorSetting.value;
    const authorFault = author === undefined ? undefined : authorProblem(author);
    if (authorSetting !== undefined && authorFault !== undefined)
      return yield* fail(`${authorSetting.origin} ${authorFault}`);
    if (authorSetting !== undefined && authorSetting.value.includes(replacementCharacter))
      return yield* fail(`${authorSetting.origin} ${notUtf8Text("recorded")}`);

    return {
      store,
      workspace,
      privateRoot,
      homeDirectory: host.homeDirectory,
      commitRetries,
      checkpointPacks,
      retainedCheckpoints,
      ...(checkpointBytes === undefined ? {} : { checkpointBytes }),
      ...(allowMassDelete ? { allowMassDelete } : {}),
      share: command === "serve" && !noShare,
      ...(shareAnswerBytes === undefined ? {} : { shareAnswerBytes }),
      ...(faultInjection === undefined ? {} : { faultInjection }),
      ...(memorySamples && command === "serve" ? { memorySamples: true } : {}),
      pathSets,
      ...(author === undefined ? {} : { author }),
      ...(options.has("history-tool") ? { historyTool: true } : {}),
      secretValues: secretValuesOf(host.env),
    };
  });

/** A switch: the flag given, or the environment set to `1`/`true` (`0`/`false`: off). */
const parseSwitch = (
  flag: boolean,
  env: Sourced | undefined,
): Either.Either<boolean, ConfigError> => {
  if (flag) return Either.right(true);
  if (env === undefined) return Either.right(false);
  if (env.value === "1" || env.value === "true") return Either.right(true);
  if (env.value === "0" || env.value === "false") return Either.right(false);
  return fail(`${env.origin} must be 1, true, 0 or false`);
};

/**
 * Entries of a path-set option: every flag use (comma-separated) or else the environment
 * list; blank items (`a,,b`) are skipped. Fails on a flag use that names no entry at all
 * (`--writable ""` would otherwise configure no set: a server confined by nothing) and on
 * an entry with white space at either end (`docs, faq.md` would protect `" faq.md"`, a
 * name nobody has, and leave `faq.md` writable). An empty environment list means no set.
 */
const pathSetEntries = (
  options: ReadonlyMap<string, ReadonlyArray<string>>,
  flag: string,
  envName: string,
  host: Host,
): Either.Either<ReadonlyArray<string>, ConfigError> => {
  const flagged = options.get(flag);
  const listOf = (value: string) => value.split(",").filter((entry) => entry.trim() !== "");
  if (flagged?.some((value) => listOf(value).length === 0) === true)
    return fail(
      `--${flag} names no entry; give a notebook path (or a comma-separated list), or leave the flag out for no ${flag} set`,
    );
  const entries = (flagged ?? [envValue(host, envName) ?? ""]).flatMap(listOf);
  const padded = entries.find((entry) => /^\s|\s$/u.test(entry));
  if (padded !== undefined)
    return fail(
      `invalid path set: the ${flag} entry ${JSON.stringify(padded)} starts or ends with white space; write the list without spaces around commas (docs,faq.md)`,
    );
  return Either.right(entries);
};

const parsePathSets = (
  options: ReadonlyMap<string, ReadonlyArray<string>>,
  host: Host,
): Either.Either<PathSets, ConfigError> =>
  Either.gen(function* () {
    const writable = yield* pathSetEntries(options, "writable", "QUIRE_WRITABLE", host);
    const readOnly = yield* pathSetEntries(options, "read-only", "QUIRE_READ_ONLY", host);
    return yield* Either.mapLeft(
      normalizePathSets({ writable, readOnly }),
      (error) => new ConfigError({ message: `invalid path set: ${error.message}` }),
    );
  });

/** The store-selecting settings given at one precedence level (flags or environment). */
interface StoreLevel {
  readonly name: "flags" | "environment";
  readonly store?: Sourced | undefined;
  readonly bucket?: Sourced | undefined;
  readonly prefix?: Sourced | undefined;
}

/**
 * Picks the store named at one level: `--store`, or `--bucket` alone meaning
 * `s3://<bucket>`. Both at one level must agree (same bucket of an s3/minio store).
 */
const storeAtLevel = (
  level: StoreLevel,
  host: Host,
): Either.Either<StoreSpec | undefined, ConfigError> =>
  Either.gen(function* () {
    const bucket = level.bucket === undefined ? undefined : yield* parseBucket(level.bucket.value);
    if (level.store === undefined) {
      return bucket === undefined ? undefined : { kind: "s3", bucket, prefix: "" };
    }
    const spec = yield* parseStoreSpec(level.store.value, (dir) =>
      resolveHostPath(dir, host.cwd, host.homeDirectory),
    );
    if (
      bucket !== undefined &&
      (spec.kind === "file" || spec.kind === "memory" || spec.bucket !== bucket)
    ) {
      return yield* fail(
        `${level.bucket?.origin ?? "the bucket"} conflicts with ${level.store.origin}`,
      );
    }
    return spec;
  });

const parseStore = (
  options: ReadonlyMap<string, ReadonlyArray<string>>,
  host: Host,
): Either.Either<StoreConfig, ConfigError> =>
  Either.gen(function* () {
    const flags: StoreLevel = {
      name: "flags",
      store: fromFlag(options, "store"),
      bucket: fromFlag(options, "bucket"),
      prefix: fromFlag(options, "prefix"),
    };
    const env: StoreLevel = {
      name: "environment",
      store: fromEnv(host, "QUIRE_STORE"),
      bucket: fromEnv(host, "QUIRE_BUCKET"),
      prefix: fromEnv(host, "QUIRE_PREFIX"),
    };
    const fromFlags = yield* storeAtLevel(flags, host);
    const fromEnvironment = fromFlags === undefined ? yield* storeAtLevel(env, host) : undefined;
    const spec: StoreSpec = fromFlags ??
      fromEnvironment ?? { kind: "file", root: defaultStoreRoot(host) };
    const endpointFlag = fromFlag(options, "endpoint");
    const regionFlag = fromFlag(options, "region");
    const pathStyleFlag = options.has("path-style");

    if (spec.kind === "file" || spec.kind === "memory") {
      const stray = ["bucket", "prefix", "endpoint", "region", "path-style"].find((flag) =>
        options.has(flag),
      );
      return stray === undefined
        ? spec
        : yield* fail(`--${stray} applies only to s3:// and minio:// stores`);
    }

    // The prefix: the first explicit one from the highest level; at one level an
    // explicit prefix and a prefix in the store URL must agree.
    const selected = fromFlags !== undefined ? flags : env;
    const candidates: Array<string> = [];
    for (const level of [flags, env]) {
      const explicit =
        level.prefix === undefined ? undefined : yield* parsePrefix(level.prefix.value);
      const inUrl = level === selected && spec.prefix !== "" ? spec.prefix : undefined;
      if (explicit !== undefined && inUrl !== undefined && explicit !== inUrl) {
        return yield* fail(
          `${level.prefix?.origin ?? "the prefix"} conflicts with the store URL's prefix`,
        );
      }
      const chosen = explicit ?? inUrl;
      if (chosen !== undefined) candidates.push(chosen);
    }

    const endpointSetting =
      endpointFlag ?? fromEnv(host, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL");
    const endpoint =
      endpointSetting === undefined ? undefined : yield* parseEndpoint(endpointSetting.value);
    if (spec.kind === "minio" && endpoint !== undefined && new URL(endpoint).pathname !== "/") {
      // The MinIO client takes a host and port only: the path would be dropped silently,
      // and the store reached would not be the one configured.
      return yield* fail(
        `${endpointSetting?.origin ?? "the endpoint"} has a path, which the MinIO client cannot use: give minio:// the host only, or use s3:// for an endpoint below a path`,
      );
    }
    const regionSetting = regionFlag ?? fromEnv(host, "AWS_REGION", "AWS_DEFAULT_REGION");
    const region = regionSetting?.value ?? "us-east-1";
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(region)) {
      return yield* fail(`${regionSetting?.origin ?? "the region"} is not a region name`);
    }
    return {
      kind: spec.kind,
      bucket: spec.bucket,
      prefix: candidates[0] ?? "",
      ...(endpoint === undefined ? {} : { endpoint }),
      region,
      // Custom endpoints (MinIO, Ceph RGW, s3rver) rarely resolve virtual-host buckets.
      forcePathStyle: pathStyleFlag || endpoint !== undefined,
    };
  });
