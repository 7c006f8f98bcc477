/**
 * The user scope follows the environment variables a client itself reads to find its
 * settings: Claude Code's `CLAUDE_CONFIG_DIR` (`$CLAUDE_CONFIG_DIR/.claude.json`), Gemini
 * CLI's `GEMINI_CLI_HOME` (`$GEMINI_CLI_HOME/.gemini/settings.json`) and Codex's
 * `CODEX_HOME`. Writing `~/.claude.json` for a person who set `CLAUDE_CONFIG_DIR`
 * reported "registered" while `claude mcp list` showed no server (checked against the
 * pinned Claude Code 2.1.332 and Gemini CLI 0.61.0).
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeSandbox, runQuire, type Sandbox } from "../cli/quireProcess.js";
import { assertBuilt } from "../helpers/cli.js";

let box: Sandbox;
beforeEach(() => {
  assertBuilt();
  box = makeSandbox();
});
afterEach(() => box.cleanup());

const home = () => box.env["HOME"] ?? "";

interface Case {
  readonly client: string;
  readonly variable: string;
  /** The file the client reads under the variable's directory. */
  readonly under: ReadonlyArray<string>;
  /** The file it reads without the variable. */
  readonly defaultFile: () => string;
}

const cases: ReadonlyArray<Case> = [
  {
    client: "claude-code",
    variable: "CLAUDE_CONFIG_DIR",
    under: [".claude.json"],
    defaultFile: () => path.join(home(), ".claude.json"),
  },
  {
    client: "gemini",
    variable: "GEMINI_CLI_HOME",
    under: [".gemini", "settings.json"],
    defaultFile: () => path.join(home(), ".gemini", "settings.json"),
  },
  {
    client: "codex",
    variable: "CODEX_HOME",
    under: ["config.toml"],
    defaultFile: () => path.join(home(), ".codex", "config.toml"),
  },
];

describe.each(cases)("$client with $variable set", ({ client, variable, under, defaultFile }) => {
  it("installs, shows and uninstalls in the file the client reads", async () => {
    const dir = path.join(box.root, "client home");
    mkdirSync(dir);
    const env = { ...box.env, [variable]: dir };
    const file = path.join(dir, ...under);
    const cwd = box.workspace;

    const install = await runQuire(["mcp", "install", client], { cwd, env });
    expect(install.stderr).toBe("");
    expect(install.code).toBe(0);
    expect(install.stdout).toContain(file);
    expect(readFileSync(file, "utf8")).toContain("quire");
    expect(existsSync(defaultFile())).toBe(false);

    const status = await runQuire(["mcp", "status", client], { cwd, env });
    expect(status.stdout).toContain(`${client} user: ${file}\n  registered:`);

    const uninstall = await runQuire(["mcp", "uninstall", client], { cwd, env });
    expect(uninstall.code).toBe(0);
    expect(readFileSync(file, "utf8")).not.toContain("quire");
  });
});

describe.each(cases)("$client with a relative $variable", ({ client, variable, defaultFile }) => {
  it("refuses to install or uninstall, and status says the file is unknown: the client resolves it against a directory quire cannot know", async () => {
    const env = { ...box.env, [variable]: "relative/dir" };
    const cwd = box.workspace;
    for (const action of ["install", "uninstall"]) {
      const run = await runQuire(["mcp", action, client], { cwd, env });
      expect(run.code, action).toBe(1);
      expect(run.stderr, action).toContain(`${variable} is a relative path ("relative/dir")`);
      expect(run.stdout, action).toBe("");
    }
    expect(existsSync(defaultFile())).toBe(false);
    expect(existsSync(path.join(cwd, "relative"))).toBe(false);
    const status = await runQuire(["mcp", "status", client], { cwd, env });
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(
      `${client} user: unknown file\n  ${variable} is a relative path`,
    );
    // The project scope does not depend on the variable.
    const project = await runQuire(["mcp", "install", client, "--scope", "project"], { cwd, env });
    expect(project.code).toBe(0);
  });
});
