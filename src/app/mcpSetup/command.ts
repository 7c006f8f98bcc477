/**
 * `quire mcp install|uninstall|status`: registers `quire serve` in an MCP client's own
 * configuration file, removes it again, and shows which clients have it with which
 * flags. Each edit changes only quire's entry (jsonEntry.ts, tomlEntry.ts), refuses a
 * file it cannot parse, keeps the previous file as `<file>.quire.bak` and replaces the
 * file atomically (the ConfigFiles port).
 */
import * as NodePath from "node:path";
import { Duration, Effect, Either, Random } from "effect";
import { ConfigFiles, type ConfigFileError } from "../../ports/ConfigFiles.js";
import type { FileSystem } from "../../ports/FileSystem.js";
import { redactCredentials } from "../../domain/redact.js";
import {
  type Host,
  type RuntimeConfig,
  parseInvocation,
  runtimeOptions,
  secretValuesOf,
} from "../config.js";
import { checkDirectories } from "../layers.js";
import { splitArgv } from "../config/argv.js";
import { resolveHostPath } from "../config/paths.js";
import { parseStoreSpec } from "../config/store.js";
import {
  type Client,
  type Place,
  type Scope,
  type Target,
  clientNamed,
  clientNames,
  clients,
  placementOf,
  unplaceableTarget,
} from "./clients.js";
import { type EntryProblem, readJsonEntry, removeJsonEntry, setJsonEntry } from "./jsonEntry.js";
import { readTomlEntry, removeTomlEntry, setTomlEntry } from "./tomlEntry.js";
import { sameValue } from "./sameValue.js";

/** Where the command writes its report. */
export interface McpOutput {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

/** What the command needs to know about the process. */
export interface McpContext {
  readonly host: Host;
  readonly platform: NodeJS.Platform;
  /** The absolute launcher the clients will run (`<package>/bin/quire.js`). */
  readonly launcher: string | undefined;
}

/** Exit statuses, as for the other commands: 0 done, 1 refused, 2 usage. */
const ok = 0;
const refused = 1;
const usage = 2;

/** The `quire mcp -h` text. */
export const mcpHelp = `Usage: quire mcp install CLIENT [--scope user|project] [--print] [serve options]
       quire mcp uninstall CLIENT [--scope user|project] [--print]
       quire mcp status [CLIENT]

Registers quire (quire serve) as the MCP server "quire" in a client's own configuration
file, removes it, or shows where it is registered and with which options.

Clients: ${clientNames.join(", ")}
  --scope user               the user's configuration, for every project (default)
  --scope project            the configuration of the project in the current directory
                             (not for claude-desktop, which has only a user scope)
  --print                    show the change and write nothing

Every other option is passed to quire serve as given (--store, --workspace-root,
--writable, --read-only, --private-root, --no-share, …), checked first; relative paths
become absolute, because the client starts the server from elsewhere. The registered
command is the absolute path of this installation's launcher, so no npx is needed.
The file keeps every other entry, its comments and its formatting; the previous file is
kept as <file>.quire.bak; a file that does not parse is refused and left as it is, and
so are a read-only file, a file with other hard links and a symlink that leads nowhere.
docs/mcp-clients.md lists each client's configuration files.
`;

const mcpOptions = [
  ...runtimeOptions,
  { name: "scope", takesValue: true },
  { name: "print", takesValue: false },
  { name: "help", short: "h", takesValue: false },
] as const;

/** Options that only `serve` takes and that name a directory to resolve. */
const pathOptions = new Set(["workspace-root", "private-root"]);

/** The `serve` command line to register, and the configuration it parses to. */
interface ServeArguments {
  readonly args: ReadonlyArray<string>;
  readonly config?: RuntimeConfig;
}

/** The serve arguments to register, with relative paths made absolute; or why they are refused. */
const serveArguments = (
  options: ReadonlyMap<string, ReadonlyArray<string>>,
  host: Host,
): Either.Either<ServeArguments, string> => {
  const args: Array<string> = ["serve"];
  for (const spec of runtimeOptions) {
    for (const value of options.get(spec.name) ?? []) {
      if (!spec.takesValue) {
        args.push(`--${spec.name}`);
        continue;
      }
      let given = value;
      if (pathOptions.has(spec.name) && value !== "")
        given = resolveHostPath(value, host.cwd, host.homeDirectory);
      if (spec.name === "store" && value.startsWith("file:")) {
        const parsed = parseStoreSpec(value, (dir) =>
          resolveHostPath(dir, host.cwd, host.homeDirectory),
        );
        if (Either.isRight(parsed) && parsed.right.kind === "file")
          given = `file:${parsed.right.root}`;
      }
      args.push(`--${spec.name}=${given}`);
    }
  }
  // The same checks serve itself makes, so a client never gets a server that will not
  // start; without the shell's QUIRE_* variables, which are not written to the client's
  // configuration, so they neither fail nor excuse the options that are.
  const withoutQuireEnv = Object.fromEntries(
    Object.entries(host.env).filter(([name]) => !name.startsWith("QUIRE_")),
  );
  const checked = parseInvocation(args, { ...host, env: withoutQuireEnv });
  if (Either.isLeft(checked)) return Either.left(checked.left.message);
  if (checked.right._tag !== "Serve") return Either.left("not a serve command line");
  // A client starts and stops its server as it likes (each session, each restart): a
  // memory store would lose every note each time, with nothing to say so. `serve
  // --store=memory:` run by hand stays allowed.
  if (checked.right.config.store.kind === "memory")
    return Either.left(
      "--store=memory: keeps the notebook only while one server runs, and the client restarts its server (every note would be lost each time); register a store that lasts: --store=file:<dir> (the default), s3://<bucket> or minio://<bucket>",
    );
  return Either.right({ args, config: checked.right.config });
};

/**
 * A UTF-8 byte order mark (editors on Windows write one) is no part of the JSON or TOML:
 * the entry editors see the text after it, and an edited text keeps it.
 */
const bom = "\uFEFF";
const withoutBom = (text: string): string => (text.startsWith(bom) ? text.slice(1) : text);
const keepingBom =
  (text: string) =>
  (edited: string): string =>
    text.startsWith(bom) ? bom + edited : edited;

/** The entry's current value in `text`. */
const readEntry = (target: Target, text: string): Either.Either<unknown, EntryProblem> =>
  target.format === "json"
    ? readJsonEntry(withoutBom(text), target.entryPath)
    : readTomlEntry(withoutBom(text), target.entryPath);

const setEntry = (
  target: Target,
  text: string,
  value: Record<string, unknown>,
): Either.Either<string, EntryProblem> => {
  if (target.format === "json")
    return Either.map(setJsonEntry(withoutBom(text), target.entryPath, value), keepingBom(text));
  const table: Record<string, string | ReadonlyArray<string>> = {};
  for (const [key, item] of Object.entries(value)) {
    if (typeof item === "string") table[key] = item;
    else if (Array.isArray(item)) table[key] = item.map(String);
  }
  return Either.map(setTomlEntry(withoutBom(text), target.entryPath, table), keepingBom(text));
};

/**
 * The entry an install writes over what the file has: quire's own members, plus — in a
 * JSON file — the existing entry's settings that refine a local launch
 * ({@link keptMembers}: `env`, `cwd`… that a person added, and a reinstall after an
 * upgrade must not drop). Any other member (a `url` or `httpUrl` that a client would
 * use instead of the command, `disabled`…) is dropped and named in the report, as is
 * an existing entry that is replaced: `.quire.bak` keeps only the last previous file. A
 * TOML entry with anything beyond `command` and `args` (a key, or a sub-table such as
 * `[mcp_servers.quire.env]`) is refused: its lines cannot be kept while the table is
 * rewritten.
 */
const plannedEntry = (
  target: Target,
  text: string | undefined,
  ours: Record<string, unknown>,
): Either.Either<
  {
    readonly value: Record<string, unknown>;
    readonly replaced?: string;
    readonly identical?: true;
  },
  EntryProblem
> => {
  if (text === undefined) return Either.right({ value: ours });
  return Either.flatMap(readEntry(target, text), (existing) => {
    if (existing === undefined) return Either.right({ value: ours });
    if (typeof existing !== "object" || existing === null || Array.isArray(existing))
      return Either.right({ value: ours, replaced: describeEntry(existing) });
    const members = Object.entries(existing);
    if (target.format === "toml") {
      const extra = members
        .map(([key]) => key)
        .filter((key) => key !== "command" && key !== "args");
      if (extra.length > 0)
        return Either.left({
          message: `quire's entry there also has ${extra.map((key) => JSON.stringify(key)).join(", ")}, which this install would drop; edit the entry by hand, or remove those settings first`,
        });
    }
    const kept = members.filter(([key]) => keptMembers.has(key));
    const dropped = members
      .map(([key]) => key)
      .filter((key) => !keptMembers.has(key) && !(key in ours));
    const value = { ...ours, ...Object.fromEntries(kept) };
    // Already there, member by member (not by describeEntry's line: `["--store x"]` and
    // `["--store", "x"]` print alike and launch differently): nothing to write.
    const existingMembers = new Map(members);
    const identical =
      dropped.length === 0 &&
      Object.entries(ours).every(
        ([key, item]) => existingMembers.has(key) && sameValue(existingMembers.get(key), item),
      );
    if (identical) return Either.right({ value, identical: true });
    // The same launch with a member quire writes missing (an older release's entry
    // without `type`): rewritten, but nobody's entry was replaced.
    const sameLaunch =
      dropped.length === 0 &&
      sameValue(existingMembers.get("command"), ours["command"]) &&
      sameValue(existingMembers.get("args"), ours["args"]) &&
      (!existingMembers.has("type") || existingMembers.get("type") === ours["type"]);
    if (sameLaunch) return Either.right({ value });
    const without = dropped.length === 0 ? "" : ` (dropped: ${dropped.join(", ")})`;
    return Either.right({ value, replaced: `${describeEntry(existing)}${without}` });
  });
};

/**
 * The members of an existing entry an install keeps: settings of a local (stdio) launch
 * that quire does not write itself, in the clients' documented formats.
 */
const keptMembers = new Set(["env", "envFile", "cwd", "timeout"]);

/**
 * An entry as one line: its command and arguments; for an entry without a command only
 * its members' names (a URL or a header may carry a token, never printed).
 */
const describeEntry = (value: unknown): string => {
  if (typeof value !== "object" || value === null)
    return `not an object (${value === null ? "null" : typeof value})`;
  if (Array.isArray(value)) return "not an object (an array)";
  if ("command" in value && typeof value.command === "string") return entryLine(value);
  const names = Object.keys(value).slice(0, 10);
  return names.length === 0 ? "an empty entry" : `an entry without a command (${names.join(", ")})`;
};

const removeEntry = (target: Target, text: string): Either.Either<string, EntryProblem> =>
  Either.map(
    target.format === "json"
      ? removeJsonEntry(withoutBom(text), target.entryPath)
      : removeTomlEntry(withoutBom(text), target.entryPath),
    keepingBom(text),
  );

/** `- old` / `+ new` lines of what differs between the two texts (common lines at both ends left out). */
const changeLines = (before: string, after: string): string => {
  const a = before === "" ? [] : before.replace(/\n$/, "").split("\n");
  const b = after === "" ? [] : after.replace(/\n$/, "").split("\n");
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head += 1;
  let tail = 0;
  while (
    tail < a.length - head &&
    tail < b.length - head &&
    a[a.length - 1 - tail] === b[b.length - 1 - tail]
  )
    tail += 1;
  return [
    ...a.slice(head, a.length - tail).map((line) => `- ${line}`),
    ...b.slice(head, b.length - tail).map((line) => `+ ${line}`),
  ]
    .map((line) => `${line}\n`)
    .join("");
};

/**
 * `text` (an entry's command line, a configuration file, a message quoting either) as it
 * may be printed: a configuration holds credentials (other servers' tokens in their
 * `env`, a URL with `user:password@`, a `--token` argument), which must never reach a
 * terminal or a log, so they are scrubbed, as are the values of the shell's secret
 * environment variables.
 */
const printable = (text: string, context: McpContext): string =>
  redactCredentials(text, secretValuesOf(context.host.env));

/**
 * `output` with every text scrubbed by {@link printable} on its way out: each report,
 * refusal and error of the command may quote a client's configuration (an entry, a
 * parse error, a diff), and one place that scrubs them all cannot be forgotten by a new
 * message. Scrubbing is idempotent, so text scrubbed before does not change.
 */
const printableOutput = (output: McpOutput, context: McpContext): McpOutput => ({
  out: (text) => output.out(printable(text, context)),
  err: (text) => output.err(printable(text, context)),
});

/** The one line of every refusal: quire could edit the file but will not. */
const refusalLine = (path: string, why: string): string =>
  `quire mcp: refused to edit ${path}: ${why}; nothing was written\n`;

const describeError = (error: ConfigFileError): string =>
  error.reason === "REFUSED"
    ? refusalLine(error.path, error.message)
    : `quire mcp: ${error.message}\n`;

/** The arguments of an entry as one line, for reports. */
const entryLine = (value: unknown): string => {
  if (typeof value !== "object" || value === null) return JSON.stringify(value);
  const command = "command" in value ? value.command : undefined;
  const args = "args" in value && Array.isArray(value.args) ? value.args : [];
  return [command, ...args].map((part) => String(part)).join(" ");
};

interface Parsed {
  readonly action: "install" | "uninstall" | "status";
  readonly client?: Client;
  readonly scope?: Scope;
  readonly print: boolean;
  readonly serveArgs: ReadonlyArray<string>;
  /** The configuration the registered `serve` will run with (install only). */
  readonly serveConfig?: RuntimeConfig;
}

const parse = (argv: ReadonlyArray<string>, host: Host): Either.Either<Parsed | "help", string> => {
  const split = splitArgv(argv, mcpOptions);
  if (Either.isLeft(split)) return Either.left(split.left.message);
  const { positionals, options } = split.right;
  if (options.has("help")) return Either.right("help");
  const [action, name, ...extra] = positionals;
  if (action === undefined)
    return Either.left("quire mcp needs install, uninstall or status (try quire mcp -h)");
  if (action !== "install" && action !== "uninstall" && action !== "status")
    return Either.left(`unknown mcp command ${JSON.stringify(action)} (try quire mcp -h)`);
  if (extra.length > 0) return Either.left(`unexpected argument ${JSON.stringify(extra[0])}`);
  const client = name === undefined ? undefined : clientNamed(name);
  if (name !== undefined && client === undefined)
    return Either.left(
      `unknown client ${JSON.stringify(name)}; the clients are ${clientNames.join(", ")}`,
    );
  if (action !== "status" && client === undefined)
    return Either.left(`quire mcp ${action} needs a CLIENT: ${clientNames.join(", ")}`);
  // One value at most: splitArgv refuses a second --scope.
  const [scopeValue] = options.get("scope") ?? [];
  if (scopeValue !== undefined && scopeValue !== "user" && scopeValue !== "project")
    return Either.left("--scope must be user or project");
  if (scopeValue !== undefined && client !== undefined && !client.scopes.includes(scopeValue))
    return Either.left(
      `${client.label} has no ${scopeValue} scope (only ${client.scopes.join(", ")})`,
    );
  const print = options.has("print");
  const passed = [...options.keys()].filter((key) => key !== "scope" && key !== "print");
  if (action !== "install" && passed.length > 0)
    return Either.left(`quire mcp ${action} takes no serve options (--${passed[0]})`);
  if (action === "status" && (print || scopeValue !== undefined))
    return Either.left("quire mcp status takes no --scope or --print: it shows every scope");
  const serve: Either.Either<ServeArguments, string> =
    action === "install" ? serveArguments(options, host) : Either.right({ args: [] });
  if (Either.isLeft(serve)) return Either.left(`the serve options are invalid: ${serve.left}`);
  return Either.right({
    action,
    ...(client === undefined ? {} : { client }),
    ...(scopeValue === undefined ? {} : { scope: scopeValue }),
    print,
    serveArgs: serve.right.args,
    ...(serve.right.config === undefined ? {} : { serveConfig: serve.right.config }),
  });
};

const placeOf = (context: McpContext): Place => ({
  platform: context.platform,
  home: context.host.homeDirectory,
  cwd: context.host.cwd,
  env: context.host.env,
});

/**
 * How many times an edit is computed and written when another program (another quire,
 * the client saving its own settings) writes the file in between: each attempt reads
 * the file again, so the other program's change is kept, not overwritten.
 */
const editAttempts = 5;

/** Installs or uninstalls in one client's file: the report on `out`, problems on `err`. */
const edit = (
  parsed: Parsed & { readonly client: Client },
  context: McpContext,
  output: McpOutput,
): Effect.Effect<number, never, ConfigFiles> =>
  Effect.gen(function* () {
    for (let attempt = 1; ; attempt += 1) {
      const done = yield* editOnce(parsed, context, output);
      if ("status" in done) return done.status;
      if (attempt === editAttempts) {
        output.err(describeError(done.changed));
        return refused;
      }
      // Several quire processes started together would otherwise collide again on every
      // attempt: a random, growing pause spreads them out.
      const pause = yield* Random.nextIntBetween(10, 30);
      yield* Effect.sleep(Duration.millis(pause * attempt));
    }
  });

/**
 * One attempt of {@link edit}: reads the file, computes the edit and writes it, with
 * the report; `changed` (nothing reported, nothing written) when the file changed
 * between the read and the write.
 */
const editOnce = (
  parsed: Parsed & { readonly client: Client },
  context: McpContext,
  output: McpOutput,
): Effect.Effect<
  { readonly status: number } | { readonly changed: ConfigFileError },
  never,
  ConfigFiles
> =>
  Effect.gen(function* () {
    const files = yield* ConfigFiles;
    const client = parsed.client;
    const scope = parsed.scope ?? client.scopes[0] ?? "user";
    const unplaceable = unplaceableTarget(client, scope, placeOf(context));
    if (unplaceable !== undefined) {
      output.err(`quire mcp: ${unplaceable}\n`);
      return { status: refused };
    }
    const target = client.target(scope, placeOf(context));
    const where = `${client.label} (${scope} scope): ${target.path}`;
    const read = yield* Effect.either(files.read(target.path));
    if (Either.isLeft(read)) {
      output.err(describeError(read.left));
      return { status: refused };
    }
    const before = read.right;
    let after: Either.Either<string, EntryProblem>;
    let replaced: string | undefined;
    if (parsed.action === "install") {
      if (context.launcher === undefined) {
        output.err("quire mcp: cannot find this installation's launcher (bin/quire.js)\n");
        return { status: refused };
      }
      const planned = plannedEntry(
        target,
        before,
        client.entry(context.launcher, parsed.serveArgs),
      );
      replaced = Either.getOrUndefined(planned)?.replaced;
      // An entry that already holds these options stays as its owner wrote it: rewriting
      // it in quire's layout would report a registration that changed nothing.
      after = Either.flatMap(planned, ({ value, identical }) =>
        identical === true ? Either.right(before ?? "") : setEntry(target, before ?? "", value),
      );
    } else {
      after = removeEntry(target, before ?? "");
    }
    if (Either.isLeft(after)) {
      output.err(refusalLine(target.path, after.left.message));
      return { status: refused };
    }
    const text = after.right;
    if (text === (before ?? "")) {
      output.out(
        parsed.action === "install"
          ? `quire is already registered with these options in ${where}\n`
          : `quire is not registered in ${where}: nothing to remove\n`,
      );
      return { status: ok };
    }
    // Before --print too: a dry run that shows a change the real run would refuse misleads.
    const placement = placementOf(target.path, scope, placeOf(context));
    const editable = yield* Effect.either(files.editable(target.path, placement));
    if (Either.isLeft(editable)) {
      output.err(describeError(editable.left));
      return { status: refused };
    }
    if (parsed.print) {
      // Scrubbed before they are compared, not after: a value on the line after its
      // option (`"--token",` then `"…"`) is only recognised in the whole file.
      output.out(
        `would change ${target.path} (${client.label}, ${scope} scope):\n${changeLines(printable(before ?? "", context), printable(text, context))}nothing written (--print)\n`,
      );
      return { status: ok };
    }
    const backupPath = `${target.path}.quire.bak`;
    const written = yield* Effect.either(
      files.replace(target.path, text, {
        expected: before,
        backupPath,
        ...(placement === undefined ? {} : { placement }),
      }),
    );
    if (Either.isLeft(written)) {
      if (written.left.reason === "CHANGED") return { changed: written.left };
      output.err(describeError(written.left));
      return { status: refused };
    }
    const backup = before === undefined ? "" : `  the previous file is kept as ${backupPath}\n`;
    const previous = replaced === undefined ? "" : `  it replaced the entry: ${replaced}\n`;
    const registered = entryLine(client.entry(context.launcher ?? "", parsed.serveArgs));
    output.out(
      parsed.action === "install"
        ? `registered quire in ${where}\n  ${registered}\n${previous}${backup}`
        : `removed quire from ${where}\n${backup}`,
    );
    return { status: ok };
  });

/**
 * Why a client could not start the registered `command`, or `undefined`. A command
 * with a directory part names a file (a relative one is taken from the current
 * directory); a bare name (`npx`) is looked up on this shell's PATH, as the client
 * will (on Windows with PATHEXT's extensions too). Either must be a file this user may
 * execute: a launcher without its execute bit fails to start just as a missing one.
 */
const commandProblem = (
  command: string,
  context: McpContext,
): Effect.Effect<string | undefined, never, ConfigFiles> =>
  Effect.gen(function* () {
    const files = yield* ConfigFiles;
    const windows = context.platform === "win32";
    if (command === "") return "the command does not exist";
    if (command.includes("/") || (windows && command.includes("\\"))) {
      const found = yield* files.commandFile(NodePath.resolve(context.host.cwd, command));
      return found === "executable"
        ? undefined
        : found === "missing"
          ? "the command does not exist"
          : "the command is not an executable file";
    }
    const pathVariable = context.host.env["PATH"] ?? "";
    const extensions = windows
      ? ["", ...(context.host.env["PATHEXT"] ?? ".COM;.EXE;.BAT;.CMD").split(";")]
      : [""];
    for (const directory of pathVariable.split(windows ? ";" : ":")) {
      // An empty entry means the current directory, which is the client's, not ours.
      if (directory === "" || !NodePath.isAbsolute(directory)) continue;
      for (const extension of extensions)
        if (
          (yield* files.commandFile(NodePath.join(directory, command + extension))) === "executable"
        )
          return undefined;
    }
    return "no command of that name on PATH";
  });

/** One line per client and scope: where its file is and what quire's entry says. */
const status = (
  only: Client | undefined,
  context: McpContext,
  output: McpOutput,
): Effect.Effect<number, never, ConfigFiles> =>
  Effect.gen(function* () {
    const files = yield* ConfigFiles;
    for (const client of only === undefined ? clients : [only]) {
      for (const scope of client.scopes) {
        const unplaceable = unplaceableTarget(client, scope, placeOf(context));
        if (unplaceable !== undefined) {
          output.out(`${client.name} ${scope}: unknown file\n  ${unplaceable}\n`);
          continue;
        }
        const target = client.target(scope, placeOf(context));
        const read = yield* Effect.either(files.read(target.path));
        let state: string;
        if (Either.isLeft(read))
          // REFUSED: readable, but not as text quire may edit (not UTF-8).
          state =
            read.left.reason === "REFUSED"
              ? `cannot parse the file: ${read.left.message}`
              : `unreadable: ${read.left.message}`;
        else if (read.right === undefined) state = "not registered (no file)";
        else {
          const entry = readEntry(target, read.right);
          if (Either.isLeft(entry)) state = `cannot parse the file: ${entry.left.message}`;
          else if (entry.right === undefined) state = "not registered";
          else {
            const command =
              typeof entry.right === "object" && entry.right !== null && "command" in entry.right
                ? String(entry.right.command)
                : "";
            const problem = yield* commandProblem(command, context);
            state = `registered: ${entryLine(entry.right)}${problem === undefined ? "" : ` (${problem})`}`;
          }
        }
        // Why install or uninstall would refuse the file (a dangling link, read-only),
        // which "not registered (no file)" alone would hide.
        const editable = yield* Effect.either(
          files.editable(target.path, placementOf(target.path, scope, placeOf(context))),
        );
        const note =
          Either.isLeft(editable) && editable.left.reason === "REFUSED"
            ? `  quire mcp would refuse to edit it: ${editable.left.message}\n`
            : "";
        output.out(`${client.name} ${scope}: ${target.path}\n  ${state}\n${note}`);
      }
    }
    return ok;
  });

/**
 * Runs `quire mcp …` (`argv` without `mcp`) and returns the exit status. Never fails.
 * Everything it writes but the help passes through {@link printableOutput}: no
 * credential from a configuration file, the command line or the shell is printed.
 */
export const runMcpCommand = (
  argv: ReadonlyArray<string>,
  context: McpContext,
  unscrubbed: McpOutput,
): Effect.Effect<number, never, ConfigFiles | FileSystem> =>
  Effect.suspend(() => {
    const output = printableOutput(unscrubbed, context);
    const parsed = parse(argv, context.host);
    if (Either.isLeft(parsed)) {
      // The message may quote a serve option, a URL with credentials among them.
      output.err(`quire mcp: ${parsed.left}\n`);
      return Effect.succeed(usage);
    }
    if (parsed.right === "help") {
      // Fixed text, shown as written.
      unscrubbed.out(mcpHelp);
      return Effect.succeed(ok);
    }
    const request = parsed.right;
    if (request.action === "status") return status(request.client, context, output);
    const client = request.client;
    if (client === undefined) return Effect.succeed(usage);
    // What serve checks as it starts, before it serves (a workspace root that is not a
    // directory, overlapping directories): a client given these options would only see
    // a server that exits at once. Nothing is made or written.
    const config = request.serveConfig;
    const checked = config === undefined ? Effect.void : checkDirectories(config);
    return checked.pipe(
      Effect.matchEffect({
        onFailure: (error) => {
          output.err(
            error.kind === "config"
              ? `quire mcp: the serve options are invalid: ${error.message}\n`
              : `quire mcp: cannot check the serve options: ${error.message}; nothing was written\n`,
          );
          return Effect.succeed(error.kind === "config" ? usage : refused);
        },
        onSuccess: () => edit({ ...request, client }, context, output),
      }),
    );
  });
