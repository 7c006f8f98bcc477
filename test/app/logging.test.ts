import { it } from "@effect/vitest";
import { Cause, Effect, LogLevel } from "effect";
import { describe, expect, vi } from "vitest";
import {
  type LogLevelSpec,
  callPrivatePaths,
  formatLine,
  isEnabled,
  loggerLayer,
  parseLogLevel,
  quoteValue,
} from "../../src/app/logging.js";

const linePattern =
  /^ts=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z level=(trace|debug|info|warn|error|fatal) module=\S+ msg="[^"\\]*(?:\\.[^"\\]*)*"( \S+=(?:[^\s"]+|"[^"\\]*(?:\\.[^"\\]*)*"))*\n$/;

const capture = (
  spec: LogLevelSpec,
  warning?: string,
  secretValues: ReadonlyArray<string> = [],
) => {
  const lines: Array<string> = [];
  const layer = loggerLayer(
    {
      spec,
      write: (line) => lines.push(line),
      redaction: { privatePaths: ["/home/u/.cache/quire"], secretValues },
    },
    warning,
  );
  return { lines, layer };
};

describe("parseLogLevel", () => {
  it("defaults to info", () => {
    for (const raw of [undefined, "", "  "]) {
      const parsed = parseLogLevel(raw);
      expect(parsed.warning).toBeUndefined();
      expect(parsed.spec.defaultLevel).toBe(LogLevel.Info);
      expect(parsed.spec.modules.size).toBe(0);
    }
  });

  it("reads per-module levels and a default", () => {
    const parsed = parseLogLevel("mcp=debug,warn");
    expect(parsed.warning).toBeUndefined();
    expect(parsed.spec.defaultLevel).toBe(LogLevel.Warning);
    expect(parsed.spec.modules.get("mcp")).toBe(LogLevel.Debug);
    expect(parseLogLevel(" Store = TRACE , error ").spec.modules.get("store")).toBe(LogLevel.Trace);
    expect(parseLogLevel("off").spec.defaultLevel).toBe(LogLevel.None);
    expect(parseLogLevel("notebook=info").spec.defaultLevel).toBe(LogLevel.Info);
  });

  it("discards a malformed value with one warning and uses info", () => {
    for (const raw of [
      "loud",
      "mcp=loud",
      "warn,info",
      "mcp=debug,mcp=info",
      "=debug",
      "m!x=debug",
      "warn,",
    ]) {
      const parsed = parseLogLevel(raw);
      expect(parsed.warning, raw).toMatch(/^malformed LOG_LEVEL \(.+\); using info$/);
      expect(parsed.spec.defaultLevel).toBe(LogLevel.Info);
      expect(parsed.spec.modules.size).toBe(0);
    }
  });

  it("names the faulty item and repeats the value only whole and as given", () => {
    expect(parseLogLevel("mcp=debug,Store=Loud").warning).toBe(
      'malformed LOG_LEVEL (unknown level in item 2 of "mcp=debug,Store=Loud"); using info',
    );
    expect(parseLogLevel("debug, M!x=info").warning).toBe(
      'malformed LOG_LEVEL (bad module name in item 2 of "debug, M!x=info"); using info',
    );
    expect(parseLogLevel("info,warn").warning).toMatch(/a second default level in item 2 of/);
    expect(parseLogLevel("a=info,A=warn").warning).toMatch(/a module given twice in item 2 of/);
    expect(parseLogLevel(`x${"y".repeat(300)}`).warning).toBe(
      "malformed LOG_LEVEL (unknown level in item 1 of (301 characters)); using info",
    );
  });

  it.effect(
    "a secret in a malformed LOG_LEVEL is redacted from the warning, whatever its case or position",
    () => {
      // Base64 with "=" padding: the "module name" before the first "=" is a piece of it.
      const secret = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789+/Ab==";
      const keyId = "AKIAIOSFODNN7EXAMPLE";
      const values = [secret, `mcp=debug,${secret}`, `MCP=${secret}`, `${keyId}=loud`, keyId];
      return Effect.gen(function* () {
        for (const value of values) {
          const { lines, layer } = capture(
            parseLogLevel("info").spec,
            parseLogLevel(value).warning,
            [secret],
          );
          yield* Effect.void.pipe(Effect.provide(layer));
          expect(lines, value).toHaveLength(1);
          const line = (lines[0] ?? "").toLowerCase();
          for (const piece of [secret.slice(0, 16), secret.slice(16, 32), keyId.slice(4)]) {
            expect(line, value).not.toContain(piece.toLowerCase());
          }
        }
      });
    },
  );
});

describe("isEnabled", () => {
  it("filters by the module's level, else the default", () => {
    const { spec } = parseLogLevel("mcp=debug,warn");
    expect(isEnabled(spec, "mcp", LogLevel.Debug)).toBe(true);
    expect(isEnabled(spec, "mcp", LogLevel.Trace)).toBe(false);
    expect(isEnabled(spec, "store", LogLevel.Info)).toBe(false);
    expect(isEnabled(spec, "store", LogLevel.Warning)).toBe(true);
    expect(isEnabled(parseLogLevel("off").spec, "app", LogLevel.Fatal)).toBe(false);
  });
});

describe("formatLine", () => {
  const date = new Date("2026-01-02T03:04:05.678Z");

  it("renders key=value with quoting only where needed (msg always quoted)", () => {
    const line = formatLine(
      {
        date,
        level: LogLevel.Info,
        module: "mcp",
        message: 'call "x" done',
        fields: [
          ["diagnosticId", "0011223344556677"],
          ["durationMs", 12],
          ["path", "/a b/c"],
          ["empty", ""],
          ["eq", "a=b"],
          ["multi", "one\ntwo\\"],
          ["bad key!", true],
        ],
      },
      (text) => text,
    );
    expect(line).toBe(
      'ts=2026-01-02T03:04:05.678Z level=info module=mcp msg="call \\"x\\" done" ' +
        'diagnosticId=0011223344556677 durationMs=12 path="/a b/c" empty="" eq="a=b" ' +
        'multi="one\\ntwo\\\\" bad_key_=true\n',
    );
    expect(line).toMatch(linePattern);
  });

  it("labels warnings warn", () => {
    expect(
      formatLine(
        { date, level: LogLevel.Warning, module: "app", message: "m", fields: [] },
        (t) => t,
      ),
    ).toContain(" level=warn ");
  });

  it("escapes control characters so a record stays on one line", () => {
    expect(quoteValue("a\u0001b\rc\td")).toBe('"a\\u0001b\\rc\\td"');
    expect(quoteValue("plain")).toBe("plain");
    expect(quoteValue("plain", true)).toBe('"plain"');
  });
});

describe("loggerLayer", () => {
  it.effect("writes one redacted line per enabled record, module from the annotation", () => {
    const { lines, layer } = capture(parseLogLevel("mcp=debug,info").spec, undefined, [
      "wJalrXUtnFEMI/K7MDENG",
    ]);
    const stdout = vi.spyOn(process.stdout, "write");
    return Effect.gen(function* () {
      yield* Effect.logDebug("hidden").pipe(Effect.annotateLogs("module", "store"));
      yield* Effect.logDebug("shown").pipe(
        Effect.annotateLogs({ module: "mcp", diagnosticId: "0011223344556677" }),
      );
      yield* Effect.logInfo(
        "secret wJalrXUtnFEMI/K7MDENG at /home/u/.cache/quire/state",
        "hash",
        "a".repeat(64),
      );
      yield* Effect.logError("failed", Cause.fail(new Error("boom\nsecond line")));
      expect(lines).toHaveLength(3);
      for (const line of lines) expect(line).toMatch(linePattern);
      expect(lines[0]).toMatch(
        / level=debug module=mcp msg="shown" diagnosticId=0011223344556677\n$/,
      );
      expect(lines[1]).toContain("module=app");
      expect(lines[1]).not.toContain("wJalrXUtnFEMI");
      expect(lines[1]).not.toContain("/home/u/.cache/quire");
      expect(lines[1]).not.toContain("a".repeat(64));
      expect(lines[2]).toMatch(
        / level=error module=app msg="failed" cause=".*boom\\nsecond line.*"\n$/,
      );
      expect(stdout).not.toHaveBeenCalled();
      stdout.mockRestore();
    }).pipe(Effect.provide(layer));
  });

  it.effect("reports a malformed LOG_LEVEL once, even when warnings are filtered", () => {
    const parsed = parseLogLevel("mcp=loud");
    const { lines, layer } = capture(parseLogLevel("off").spec, parsed.warning);
    return Effect.gen(function* () {
      yield* Effect.logWarning("filtered");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        / level=warn module=app msg="malformed LOG_LEVEL \(unknown level in item 1 of \\"mcp=loud\\"\); using info"\n$/,
      );
    }).pipe(Effect.provide(layer));
  });
});

describe("callPrivatePaths", () => {
  it.effect("hides another private root in the records of the fibers that set it", () =>
    Effect.gen(function* () {
      const { lines, layer } = capture(parseLogLevel("info").spec);
      const record = Effect.logInfo("lock at /other/private/ab/lock and /home/u/.cache/quire/x");
      yield* record.pipe(
        Effect.locally(callPrivatePaths, ["/other/private"]),
        Effect.provide(layer),
      );
      yield* record.pipe(Effect.provide(layer));
      expect(lines[0]).toContain('msg="lock at <private>/ab/lock and <private>/x"');
      expect(lines[1]).toContain("/other/private/ab/lock");
      expect(lines[1]).not.toContain("/home/u/.cache/quire");
    }),
  );
});
