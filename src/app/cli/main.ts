/**
 * The `quire` executable (bin/quire.js imports the built form of this module): parses
 * the command line, prints help or the version, or runs a command with logging on
 * stderr, and sets the exit status. Stdout carries only help, the version, the CLI
 * report, or (for `serve`) JSON-RPC.
 */
import * as Os from "node:os";
import { Effect, Either, Exit, Layer, LogLevel } from "effect";
import { clientAuthor } from "../../domain/author.js";
import { redact } from "../../domain/redact.js";
import {
  type Host,
  type Invocation,
  homeProblem,
  jsonRequested,
  parseInvocation,
  secretValuesOf,
} from "../config.js";
import { formatLine, isEnabled, loggerLayer, parseLogLevel } from "../logging.js";
import { holdStartupSignals } from "../mcp/startupSignals.js";
import { exitCodes, useColor } from "./terminal.js";
import { helpText } from "./help.js";
import { startupLine } from "./startupLine.js";
import { launcherPath, packageVersion } from "./version.js";

/**
 * The current directory, or `undefined` when it has been removed since the process
 * started there (`process.cwd()` then throws ENOENT).
 */
const currentDirectory = (): string | undefined => {
  try {
    return process.cwd();
  } catch {
    return undefined;
  }
};

const currentHost = (cwd: string): Host => ({
  env: process.env,
  cwd,
  homeDirectory: Os.homedir(),
  tmpDirectory: Os.tmpdir(),
});

const noDirectory =
  "the current directory no longer exists (it was removed or moved); cd to an existing directory and run it again";

const osUserName = (): string => {
  try {
    return Os.userInfo().username;
  } catch {
    // No passwd entry (some containers): fall back to the environment.
    return process.env["USER"] ?? process.env["LOGNAME"] ?? "unknown";
  }
};

/**
 * Why stdout could not be written (a full disk under `quire log > file`), if it could not:
 * the output is incomplete, so a run that would have exited 0 exits with the output
 * status (74) instead, never the internal one (70: that is a bug inside quire). A reader
 * that went away (EPIPE: `quire mcp status | head`) is not a failure: it took what it
 * wanted.
 */
let outputFailure: string | undefined;

/**
 * What the command line's command did, for the line after an output failure: a command
 * that changes files (a pull, a commit, a restore) did so whether or not its report could
 * be written, and the person must not repeat it thinking it failed.
 */
let ranCommand: { readonly name: string; readonly changes: boolean } | undefined;

/**
 * The line after an output failure. Only a command that ended well (status 0) is said
 * done. A command that reported an error (status 1) lost that report; one that changes
 * files may have changed some before it stopped (conflict blocks, part of a restore), so
 * the person is sent to quire status first. Other statuses (a usage error, an internal
 * one, an interruption) are said as such.
 */
const outputFailureLine = (failure: string, status: number): string => {
  const name = ranCommand?.name ?? "command";
  const what =
    status === exitCodes.ok
      ? ranCommand?.changes === true
        ? `the ${name} itself is done (only its report was lost); do not run it again, check with quire status`
        : "the report is incomplete; run the command again with its output going somewhere that can take it"
      : status === exitCodes.reported
        ? ranCommand?.changes === true
          ? `the ${name} did not succeed and its error report was lost; it may have changed files before it stopped (conflict blocks, part of a restore): check with quire status before running it again`
          : `the ${name} did not succeed and its error report was lost; run it again with its output going somewhere that can take it`
        : `the ${name} ended with exit status ${String(status)}; run it again with its output going somewhere that can take it`;
  return `quire: cannot write the output (${failure}): ${what}\n`;
};

/**
 * Resolves once everything written to stdout has been handed to the system and a failed
 * write has been reported: a write's error is emitted on a later tick (and a pipe's write
 * completes when its reader takes it), so a command that ends right after writing (a usage
 * error's JSON line) would otherwise be judged before its output failed. An empty write
 * completes after the writes before it; its callback also runs when stdout was destroyed.
 */
const stdoutSettled = (): Promise<void> =>
  new Promise((resolve) => {
    // Already ended or destroyed: nothing more can be written, and a write would fail.
    if (process.stdout.writableEnded || process.stdout.destroyed) {
      setImmediate(resolve);
      return;
    }
    try {
      process.stdout.write("", () => setImmediate(resolve));
    } catch {
      setImmediate(resolve);
    }
  });

/**
 * Exits with `status` (the output one instead of 0 after an output failure) if
 * something (a keep-alive socket, stdin) still holds the event loop shortly after.
 * Decided only once stdout has settled (stdoutSettled).
 */
const exitSoon = async (status: number) => {
  await stdoutSettled();
  const code = status === exitCodes.ok && outputFailure !== undefined ? exitCodes.output : status;
  if (outputFailure !== undefined) process.stderr.write(outputFailureLine(outputFailure, status));
  process.exitCode = code;
  setTimeout(() => process.exit(code), 200).unref();
};

const runConfigured = async (
  invocation: Extract<
    Invocation,
    {
      readonly _tag:
        "Serve" | "Pull" | "Commit" | "Log" | "Status" | "Diff" | "Show" | "Restore" | "Revert";
    }
  >,
): Promise<number> => {
  const config = invocation.config;
  // From here on a signal must not kill a starting `serve` (its session directory is
  // made soon): held until the server listens, which then stops (startupSignals.ts).
  const startupSignals = invocation._tag === "Serve" ? holdStartupSignals() : undefined;
  // A host that went away (its end of the pipe closed, as when it stops `serve` with a
  // signal and exits) makes every later log write fail with EPIPE; unhandled, that
  // would end the process before it cleans up. Logs are best effort.
  process.stderr.on("error", () => undefined);
  const redaction = { privatePaths: [config.privateRoot], secretValues: config.secretValues };
  const logLevel = parseLogLevel(process.env["LOG_LEVEL"]);
  const logging = loggerLayer(
    { spec: logLevel.spec, write: (line) => process.stderr.write(line), redaction },
    logLevel.warning,
  );
  const noColor = process.env["NO_COLOR"];
  const terminal = {
    out: (text: string) => process.stdout.write(text),
    err: (text: string) => process.stderr.write(text),
    outColor: useColor(process.stdout.isTTY, noColor, process.env["TERM"]),
    errColor: useColor(process.stderr.isTTY, noColor, process.env["TERM"]),
  };
  // Loaded here so that help, version and configuration errors start fast.
  const { runCommand } = await import("./run.js");
  const json = "json" in invocation && invocation.json;
  const program = runCommand(invocation, clientAuthor("cli", osUserName()), terminal, {
    version: packageVersion(),
    redaction,
    ...(startupSignals === undefined ? {} : { startupSignals }),
  }).pipe(
    Effect.catchTag("StartupError", (error) =>
      Effect.promise(async () => {
        if (json) {
          const { startupErrorJson } = await import("./jsonErrors.js");
          process.stdout.write(startupErrorJson(error, redaction));
        } else
          process.stderr.write(`${redact(startupLine(error), redaction).replace(/\s+/g, " ")}\n`);
        return error.kind === "config" ? exitCodes.config : exitCodes.reported;
      }),
    ),
    Effect.provide(logging),
  );

  // serve handles SIGINT/SIGTERM itself (graceful drain); pull/commit are interrupted,
  // and the use cases keep their critical sections uninterruptible.
  const controller = new AbortController();
  const interrupt = () => controller.abort();
  if (invocation._tag !== "Serve") {
    process.once("SIGINT", interrupt);
    process.once("SIGTERM", interrupt);
  }
  const exit = await Effect.runPromiseExit(program, { signal: controller.signal });
  process.off("SIGINT", interrupt);
  process.off("SIGTERM", interrupt);
  // A start that failed never handed them over.
  startupSignals?.handOver();
  if (Exit.isSuccess(exit)) return exit.value;
  if (Exit.isInterrupted(exit)) return exitCodes.interrupted;
  process.stderr.write(
    `quire: internal error: ${redact(String(Exit.isFailure(exit) ? exit.cause : ""), redaction).replace(/\s+/g, " ")}\n`,
  );
  return exitCodes.internal;
};

/**
 * Node prints process warnings (the AWS SDK's Node-version notice, for one) as several
 * raw lines on stderr, which would break the one-line startup diagnostic and the
 * key=value log format. They become debug records of module `app` instead.
 */
const routeProcessWarnings = (host: Host) => {
  const spec = parseLogLevel(host.env["LOG_LEVEL"]).spec;
  const secretValues = secretValuesOf(host.env);
  process.removeAllListeners("warning");
  process.on("warning", (warning) => {
    if (!isEnabled(spec, "app", LogLevel.Debug)) return;
    const record = {
      date: new Date(),
      level: LogLevel.Debug,
      module: "app",
      message: "process warning",
      fields: [["warning", `${warning.name}: ${warning.message}`] as const],
    };
    process.stderr.write(formatLine(record, (text) => redact(text, { secretValues })));
  });
};

/** `quire mcp …`: edits MCP clients' configuration files (loaded only for this command). */
const runMcp = async (argv: ReadonlyArray<string>, host: Host): Promise<number> => {
  const [{ runMcpCommand }, configFiles, fileSystem] = await Promise.all([
    import("../mcpSetup/command.js"),
    import("../../adapters/nodeConfigFiles.js"),
    import("../../adapters/nodeFileSystem.js"),
  ]);
  const program = runMcpCommand(
    argv,
    { host, platform: process.platform, launcher: launcherPath() },
    {
      out: (text) => process.stdout.write(text),
      err: (text) => process.stderr.write(text),
    },
  ).pipe(Effect.provide(Layer.merge(configFiles.layer, fileSystem.layer)));
  return Effect.runPromise(program);
};

/** Runs the process for `argv` (without node and the script) and returns the exit status. */
export const main = async (argv: ReadonlyArray<string>): Promise<number> => {
  // Unhandled, a failed write of stdout (EPIPE when the reader went away, ENOSPC) ended
  // the process with a stack trace. The command ends as it would have; see outputFailure
  // for the status (serve handles its own stdout: stdio.ts).
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE") outputFailure ??= error.code ?? error.message;
  });
  const cwd = currentDirectory();
  // Without a current directory only version and help can run (they read none); the home
  // directory stands in for it to parse their command lines.
  const host = currentHost(cwd ?? Os.homedir());
  routeProcessWarnings(host);
  const wantsHelp = argv.some((arg) => arg === "-h" || arg === "--help");
  if (argv[0] === "mcp") {
    if (cwd === undefined && !wantsHelp) {
      process.stderr.write(`quire mcp: ${noDirectory}\n`);
      return exitCodes.config;
    }
    // The user scope's files are found under HOME: an empty one named the project's file.
    const home = homeProblem(host);
    if (home !== undefined && !wantsHelp) {
      process.stderr.write(`quire mcp: ${home}\n`);
      return exitCodes.config;
    }
    const action = argv[1];
    ranCommand = {
      name: `mcp ${action ?? ""}`.trim(),
      changes: (action === "install" || action === "uninstall") && !argv.includes("--print"),
    };
    return runMcp(argv.slice(1), host);
  }
  const parsed = parseInvocation(argv, host);
  // Every command but version and help resolves its paths against the current directory,
  // and so is refused without one; so is a command line that does not parse, whose error
  // would have been judged against the stand-in (naming the home directory).
  if (
    cwd === undefined &&
    (Either.isLeft(parsed) || (parsed.right._tag !== "Help" && parsed.right._tag !== "Version"))
  ) {
    process.stderr.write(`quire: invalid configuration: ${noDirectory}\n`);
    return exitCodes.config;
  }
  if (Either.isLeft(parsed)) {
    // Only credentials are scrubbed: the operator needs to see which of their settings failed.
    const redaction = { secretValues: secretValuesOf(host.env) };
    if (jsonRequested(argv)) {
      const { usageErrorJson } = await import("./jsonErrors.js");
      process.stdout.write(usageErrorJson(parsed.left.message, redaction));
      return exitCodes.config;
    }
    const line = `quire: invalid configuration: ${parsed.left.message}`;
    const scrubbed = redact(line, redaction);
    process.stderr.write(`${scrubbed.replace(/\s+/g, " ")}\n`);
    return exitCodes.config;
  }
  const invocation = parsed.right;
  ranCommand = {
    name: invocation._tag.toLowerCase(),
    changes: ["Pull", "Commit", "Restore", "Revert"].includes(invocation._tag),
  };
  switch (invocation._tag) {
    case "Help":
      process.stdout.write(helpText(invocation.topic));
      return exitCodes.ok;
    case "Version":
      process.stdout.write(`quire ${packageVersion()}\n`);
      return exitCodes.ok;
    default:
      return runConfigured(invocation);
  }
};

void main(process.argv.slice(2)).then(exitSoon, (error: unknown) => {
  process.stderr.write(
    `quire: internal error: ${String(error instanceof Error ? error.message : error).replace(/\s+/g, " ")}\n`,
  );
  return exitSoon(exitCodes.internal);
});
