/**
 * Structured logging (SPEC §9): one `key=value` line per record on stderr —
 * `ts=<ISO> level=<level> module=<module> msg="…" key=value…` — filtered per module by
 * `LOG_LEVEL` (e.g. `mcp=debug,warn`), every value scrubbed by the redactor. The module
 * comes from the log annotation `module` (`Effect.annotateLogs("module", "mcp")`),
 * `app` when absent. Nothing is ever written to stdout: it carries only JSON-RPC.
 */
import {
  Cause,
  Clock,
  Effect,
  FiberRef,
  FiberRefs,
  HashMap,
  Layer,
  LogLevel,
  Logger,
} from "effect";
import { type RedactOptions, redact } from "../domain/redact.js";

/** Per-module minimum levels and the level for every other module. */
export interface LogLevelSpec {
  readonly defaultLevel: LogLevel.LogLevel;
  readonly modules: ReadonlyMap<string, LogLevel.LogLevel>;
}

/** The spec used when `LOG_LEVEL` is unset or malformed: info everywhere. */
export const defaultLogLevelSpec: LogLevelSpec = {
  defaultLevel: LogLevel.Info,
  modules: new Map(),
};

const levelNames: ReadonlyMap<string, LogLevel.LogLevel> = new Map([
  ["all", LogLevel.All],
  ["trace", LogLevel.Trace],
  ["debug", LogLevel.Debug],
  ["info", LogLevel.Info],
  ["warn", LogLevel.Warning],
  ["warning", LogLevel.Warning],
  ["error", LogLevel.Error],
  ["fatal", LogLevel.Fatal],
  ["off", LogLevel.None],
  ["none", LogLevel.None],
]);

const modulePattern = /^[a-z][a-z0-9_-]*$/;

/** The result of {@link parseLogLevel}: the spec to use and, if the input was malformed, why. */
export interface ParsedLogLevel {
  readonly spec: LogLevelSpec;
  readonly warning?: string;
}

/** The longest `LOG_LEVEL` a malformed-value warning repeats. */
const maxEchoedLogLevel = 200;

/**
 * Parses `LOG_LEVEL`: comma-separated items, each `<level>` (the default, at most once)
 * or `<module>=<level>` (each module at most once); levels are trace, debug, info,
 * warn, error, fatal, off (case-insensitive; also all, warning, none). Unset or blank
 * means info. Anything malformed discards the whole value: info everywhere, plus a
 * warning for the caller to log once. The warning names the faulty item by position
 * and repeats the value only whole and exactly as given (and only up to 200
 * characters): redaction matches secrets in the original text, so a piece of the
 * value, or a lower-cased copy, could carry a secret past it.
 */
export const parseLogLevel = (raw: string | undefined): ParsedLogLevel => {
  if (raw === undefined || raw.trim() === "") return { spec: defaultLogLevelSpec };
  const value = raw.length <= maxEchoedLogLevel ? `"${raw}"` : `(${raw.length} characters)`;
  const malformed = (why: string, item: number): ParsedLogLevel => ({
    spec: defaultLogLevelSpec,
    warning: `malformed LOG_LEVEL (${why} in item ${item} of ${value}); using info`,
  });
  let defaultLevel: LogLevel.LogLevel | undefined;
  const modules = new Map<string, LogLevel.LogLevel>();
  const items = raw.split(",").map((part) => part.trim().toLowerCase());
  for (const [index, item] of items.entries()) {
    const position = index + 1;
    const equals = item.indexOf("=");
    const name = equals === -1 ? undefined : item.slice(0, equals).trim();
    const level = levelNames.get(equals === -1 ? item : item.slice(equals + 1).trim());
    if (level === undefined) return malformed("unknown level", position);
    if (name === undefined) {
      if (defaultLevel !== undefined) return malformed("a second default level", position);
      defaultLevel = level;
    } else {
      if (!modulePattern.test(name)) return malformed("bad module name", position);
      if (modules.has(name)) return malformed("a module given twice", position);
      modules.set(name, level);
    }
  }
  return { spec: { defaultLevel: defaultLevel ?? LogLevel.Info, modules } };
};

/** Whether a record of `level` from `module` passes `spec`. */
export const isEnabled = (
  spec: LogLevelSpec,
  module: string,
  level: LogLevel.LogLevel,
): boolean => {
  const threshold = spec.modules.get(module) ?? spec.defaultLevel;
  return threshold._tag !== "None" && level.ordinal >= threshold.ordinal;
};

const levelLabel = (level: LogLevel.LogLevel): string =>
  level._tag === "Warning" ? "warn" : level._tag.toLowerCase();

const needsQuotes = /[\s"=\\\u0000-\u001f\u007f]/;

/** Renders a value as a bare token when safe, otherwise a double-quoted, escaped string on one line. */
export const quoteValue = (value: string, always = false): string =>
  !always && value !== "" && !needsQuotes.test(value)
    ? value
    : `"${value.replace(/[\\"\u0000-\u001f\u007f]/g, (char) =>
        char === "\\"
          ? "\\\\"
          : char === '"'
            ? '\\"'
            : char === "\n"
              ? "\\n"
              : char === "\r"
                ? "\\r"
                : char === "\t"
                  ? "\\t"
                  : `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
      )}"`;

const renderUnknown = (value: unknown): string => {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") {
    return String(value);
  }
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
};

const renderMessage = (message: unknown): string =>
  Array.isArray(message) ? message.map(renderUnknown).join(" ") : renderUnknown(message);

const safeKey = (key: string): string => key.replace(/[^A-Za-z0-9_.-]/g, "_") || "_";

/** One record, independent of Effect's logger plumbing (what {@link formatLine} renders). */
export interface LogRecord {
  readonly date: Date;
  readonly level: LogLevel.LogLevel;
  readonly module: string;
  readonly message: string;
  /** Extra fields in order; `module` is not repeated here. */
  readonly fields: ReadonlyArray<readonly [string, unknown]>;
  /** A rendered failure cause, if any. */
  readonly cause?: string;
}

/** Renders one record as a single line (with trailing LF), every value passed through `scrub`. */
export const formatLine = (record: LogRecord, scrub: (text: string) => string): string => {
  const parts = [
    `ts=${record.date.toISOString()}`,
    `level=${levelLabel(record.level)}`,
    `module=${quoteValue(scrub(record.module))}`,
    `msg=${quoteValue(scrub(record.message), true)}`,
    ...record.fields.map(
      ([key, value]) => `${safeKey(key)}=${quoteValue(scrub(renderUnknown(value)))}`,
    ),
    ...(record.cause === undefined ? [] : [`cause=${quoteValue(scrub(record.cause), true)}`]),
  ];
  return `${parts.join(" ")}\n`;
};

/** Where log lines go and what they are scrubbed of. */
export interface LoggerSettings {
  readonly spec: LogLevelSpec;
  /** Receives each finished line; the process wires it to stderr. */
  readonly write: (line: string) => void;
  /** What to scrub besides the redactor's fixed patterns (private root, secret env values). */
  readonly redaction: RedactOptions;
}

/**
 * More private paths to scrub from the records of the current fiber: a `serve` process
 * running another process's call (app/share) sets the caller's private root here, so its
 * records hide that root as the caller's own would.
 */
export const callPrivatePaths: FiberRef.FiberRef<ReadonlyArray<string>> = FiberRef.unsafeMake<
  ReadonlyArray<string>
>([]);

/** The Effect logger writing {@link formatLine} lines that pass the module's level. */
export const makeLogger = (settings: LoggerSettings): Logger.Logger<unknown, void> => {
  const ownPaths = settings.redaction.privatePaths ?? [];
  return Logger.make(({ annotations, cause, context, date, logLevel, message }) => {
    const extra = FiberRefs.getOrDefault(context, callPrivatePaths);
    const scrub = (text: string) =>
      redact(
        text,
        extra.length === 0
          ? settings.redaction
          : { ...settings.redaction, privatePaths: [...extra, ...ownPaths] },
      );
    const moduleAnnotation = HashMap.get(annotations, "module");
    const module =
      moduleAnnotation._tag === "Some" && typeof moduleAnnotation.value === "string"
        ? moduleAnnotation.value
        : "app";
    if (!isEnabled(settings.spec, module, logLevel)) return;
    const fields = Array.from(annotations).filter(([key]) => key !== "module");
    settings.write(
      formatLine(
        {
          date,
          level: logLevel,
          module,
          message: renderMessage(message),
          fields,
          ...(Cause.isEmpty(cause) ? {} : { cause: Cause.pretty(cause) }),
        },
        scrub,
      ),
    );
  });
};

/**
 * Replaces Effect's default logger with {@link makeLogger} and lowers the global minimum
 * level so per-module filtering decides. `warning` (from {@link parseLogLevel}) is
 * written once, when the layer is built.
 */
export const loggerLayer = (settings: LoggerSettings, warning?: string): Layer.Layer<never> => {
  const install = Layer.merge(
    Logger.replace(Logger.defaultLogger, makeLogger(settings)),
    Logger.minimumLogLevel(LogLevel.All),
  );
  if (warning === undefined) return install;
  // Written directly, not through the filter: a malformed LOG_LEVEL is reported whatever it asked for.
  const announce = Layer.effectDiscard(
    Effect.map(Clock.currentTimeMillis, (now) =>
      settings.write(
        formatLine(
          {
            date: new Date(now),
            level: LogLevel.Warning,
            module: "app",
            message: warning,
            fields: [],
          },
          (text) => redact(text, settings.redaction),
        ),
      ),
    ),
  );
  return Layer.merge(install, announce);
};
