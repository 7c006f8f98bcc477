/**
 * `quire mcp` in this process, on a real temporary HOME, with the ConfigFiles adapter
 * wrapped so that another program's write can be placed exactly between quire's read
 * and its write: the edit is read and computed again (the other program's change kept),
 * a few times at most, then reported.
 */
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { Effect, Layer } from "effect";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeNodeConfigFiles, nodeConfigFiles } from "../../src/adapters/nodeConfigFiles.js";
import * as NodeFileSystem from "../../src/adapters/nodeFileSystem.js";
import { type McpContext, runMcpCommand } from "../../src/app/mcpSetup/command.js";
import { ConfigFiles, type ConfigFilesService } from "../../src/ports/ConfigFiles.js";

let root: string;
let home: string;
beforeEach(() => {
  root = realpathSync(mkdtempSync(path.join(tmpdir(), "quire-mcp-command-")));
  home = path.join(root, "home");
  mkdirSync(home);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const launcher = "/opt/quire/bin/quire.js";
const context = (env: Record<string, string> = {}): McpContext => ({
  host: { env, cwd: root, homeDirectory: home, tmpDirectory: path.join(root, "tmp") },
  platform: "linux",
  launcher,
});

interface Ran {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

const run = async (
  argv: ReadonlyArray<string>,
  files: ConfigFilesService = nodeConfigFiles,
  env: Record<string, string> = {},
): Promise<Ran> => {
  let out = "";
  let err = "";
  const code = await Effect.runPromise(
    runMcpCommand(argv, context(env), {
      out: (text) => (out += text),
      err: (text) => (err += text),
    }).pipe(Effect.provide(Layer.merge(Layer.succeed(ConfigFiles, files), NodeFileSystem.layer))),
  );
  return { code, out, err };
};

/** The adapter, with `write` run before the first `times` replacements (another program). */
const interfered = (times: number, write: (count: number) => void): ConfigFilesService => {
  let count = 0;
  return {
    ...nodeConfigFiles,
    replace: (file, text, options) =>
      Effect.suspend(() => {
        count += 1;
        if (count <= times) write(count);
        return nodeConfigFiles.replace(file, text, options);
      }),
  };
};

describe("a file another program writes while quire edits it", () => {
  it("is read and edited again, keeping the other program's change", async () => {
    const file = path.join(home, ".claude.json");
    writeFileSync(file, `{"numStartups": 1, "mcpServers": {}}\n`);
    const files = interfered(2, (count) =>
      writeFileSync(file, `{"numStartups": ${count + 1}, "mcpServers": {}}\n`),
    );
    const installed = await run(["install", "claude-code"], files);
    expect(installed.err).toBe("");
    expect(installed.code).toBe(0);
    expect(installed.out).toContain("registered quire in Claude Code (user scope)");
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({
      numStartups: 3,
      mcpServers: { quire: { type: "stdio", command: launcher, args: ["serve"] } },
    });
    // The backup is the file the last attempt replaced.
    expect(readFileSync(`${file}.quire.bak`, "utf8")).toBe(
      `{"numStartups": 3, "mcpServers": {}}\n`,
    );
  });

  it("a write after quire's replacement is flushed, before the rename, is kept too", async () => {
    const file = path.join(home, ".claude.json");
    writeFileSync(file, `{"numStartups": 1}\n`);
    let writes = 0;
    const files = makeNodeConfigFiles({
      beforeLastCheck: async (target) => {
        writes += 1;
        if (writes === 1) writeFileSync(target, `{"numStartups": 2}\n`);
      },
    });
    const installed = await run(["install", "claude-code"], files);
    expect(installed.code, installed.err).toBe(0);
    expect(JSON.parse(readFileSync(file, "utf8"))).toMatchObject({ numStartups: 2 });
    const removed = await run(["uninstall", "claude-code"], files);
    expect(removed.code, removed.err).toBe(0);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ numStartups: 2, mcpServers: {} });
  });

  it("gives up after five attempts, saying the file changed, the other program's file in place", async () => {
    const file = path.join(home, ".claude.json");
    writeFileSync(file, `{"n": 0}\n`);
    let last = "";
    const files = interfered(Number.POSITIVE_INFINITY, (count) => {
      last = `{"n": ${count}}\n`;
      writeFileSync(file, last);
    });
    const installed = await run(["install", "claude-code"], files);
    expect(installed.code).toBe(1);
    expect(installed.out).toBe("");
    expect(installed.err).toBe(
      `quire mcp: ${file} changed while quire was editing it; nothing was written, run the command again\n`,
    );
    expect(last).toBe(`{"n": 5}\n`);
    expect(readFileSync(file, "utf8")).toBe(last);
  });
});

describe("an install over quire's own entry", () => {
  it("leaves an entry with the same options, laid out otherwise, as it is", async () => {
    const file = path.join(home, ".claude.json");
    const text = `{"mcpServers":{"quire":{"args":["serve","--no-share"],"type":"stdio","command":"${launcher}"}}}\n`;
    writeFileSync(file, text);
    const installed = await run(["install", "claude-code", "--no-share"]);
    expect(installed.err).toBe("");
    expect(installed.code).toBe(0);
    expect(installed.out).toContain("quire is already registered with these options");
    expect(readFileSync(file, "utf8")).toBe(text);
  });

  it("replaces one whose arguments print alike but launch differently, and says so", async () => {
    const file = path.join(home, ".claude.json");
    writeFileSync(
      file,
      `{"mcpServers":{"quire":{"type":"stdio","command":"${launcher}","args":["serve --no-share"]}}}\n`,
    );
    const installed = await run(["install", "claude-code", "--no-share"]);
    expect(installed.code).toBe(0);
    expect(installed.out).toContain("registered quire in Claude Code (user scope)");
    expect(installed.out).toContain("replaced");
    expect(JSON.parse(readFileSync(file, "utf8")).mcpServers.quire.args).toEqual([
      "serve",
      "--no-share",
    ]);
  });
});
