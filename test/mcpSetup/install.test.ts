/**
 * `quire mcp install|uninstall|status` through real `quire` processes, for every client,
 * on fixture configuration files with comments and unrelated entries: the entry is the
 * absolute launcher with `serve` and the given flags, everything else stays byte for
 * byte (uninstall gives the fixture back exactly), the previous file is kept as a
 * backup, the file keeps its permissions, `--print` writes nothing, and a file that does
 * not parse is refused with nothing written.
 */
import {
  closeSync,
  linkSync,
  openSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
  chmodSync,
  existsSync,
  rmSync,
} from "node:fs";
import { spawn } from "node:child_process";
import * as path from "node:path";
import { Either } from "effect";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readJsonEntry } from "../../src/app/mcpSetup/jsonEntry.js";
import { readTomlEntry } from "../../src/app/mcpSetup/tomlEntry.js";
import { binPath, makeSandbox, runQuire, type Sandbox } from "../cli/quireProcess.js";
import { assertBuilt } from "../helpers/cli.js";

let box: Sandbox;
let project: string;
beforeEach(() => {
  assertBuilt();
  box = makeSandbox();
  project = path.join(box.root, "project");
  mkdirSync(project);
});
afterEach(() => box.cleanup());

const home = () => box.env["HOME"] ?? "";
const quire = (...args: ReadonlyArray<string>) =>
  runQuire(["mcp", ...args], { cwd: project, env: box.env });

const jsonc = `{
  // written by hand
  "theme": "dark", /* keep me */
  "mcpServers": {
    "github": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"] }, // mine
  },
}
`;
const strictJson = `{
  "numStartups": 12,
  "projects": {
    "/home/me/work": { "mcpServers": {}, "allowedTools": [] }
  },
  "mcpServers": {
    "other": {
      "type": "stdio",
      "command": "other-server",
      "args": []
    }
  }
}
`;
const vscodeJson = `{
  // VS Code keeps servers under "servers"
  "inputs": [],
  "servers": {
    "playwright": { "type": "stdio", "command": "npx", "args": ["@playwright/mcp"] }
  }
}
`;
const toml = `# Codex settings
model = "o4-mini" # my model

[mcp_servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]

[profiles.fast]
model = "mini"
`;

interface Case {
  readonly client: string;
  readonly scope: "user" | "project";
  readonly file: () => string;
  readonly fixture: string;
  readonly entryPath: ReadonlyArray<string>;
  readonly typed: boolean;
}

const cases: ReadonlyArray<Case> = [
  {
    client: "claude-code",
    scope: "user",
    file: () => path.join(home(), ".claude.json"),
    fixture: strictJson,
    entryPath: ["mcpServers", "quire"],
    typed: true,
  },
  {
    client: "claude-code",
    scope: "project",
    file: () => path.join(project, ".mcp.json"),
    fixture: jsonc,
    entryPath: ["mcpServers", "quire"],
    typed: true,
  },
  {
    client: "codex",
    scope: "user",
    file: () => path.join(home(), ".codex", "config.toml"),
    fixture: toml,
    entryPath: ["mcp_servers", "quire"],
    typed: false,
  },
  {
    client: "codex",
    scope: "project",
    file: () => path.join(project, ".codex", "config.toml"),
    fixture: toml,
    entryPath: ["mcp_servers", "quire"],
    typed: false,
  },
  {
    client: "gemini",
    scope: "user",
    file: () => path.join(home(), ".gemini", "settings.json"),
    fixture: jsonc,
    entryPath: ["mcpServers", "quire"],
    typed: false,
  },
  {
    client: "gemini",
    scope: "project",
    file: () => path.join(project, ".gemini", "settings.json"),
    fixture: jsonc,
    entryPath: ["mcpServers", "quire"],
    typed: false,
  },
  {
    client: "cursor",
    scope: "user",
    file: () => path.join(home(), ".cursor", "mcp.json"),
    fixture: jsonc,
    entryPath: ["mcpServers", "quire"],
    typed: false,
  },
  {
    client: "cursor",
    scope: "project",
    file: () => path.join(project, ".cursor", "mcp.json"),
    fixture: jsonc,
    entryPath: ["mcpServers", "quire"],
    typed: false,
  },
  // The sandbox sets no XDG_CONFIG_HOME: ~/.config is Linux's default.
  {
    client: "vscode",
    scope: "user",
    file: () => path.join(home(), ".config", "Code", "User", "mcp.json"),
    fixture: vscodeJson,
    entryPath: ["servers", "quire"],
    typed: true,
  },
  {
    client: "vscode",
    scope: "project",
    file: () => path.join(project, ".vscode", "mcp.json"),
    fixture: vscodeJson,
    entryPath: ["servers", "quire"],
    typed: true,
  },
  {
    client: "claude-desktop",
    scope: "user",
    file: () => path.join(home(), ".config", "Claude", "claude_desktop_config.json"),
    fixture: jsonc,
    entryPath: ["mcpServers", "quire"],
    typed: false,
  },
];

const writeFixture = (file: string, text: string, mode = 0o640) => {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  chmodSync(file, mode);
};

const entryIn = (file: string, entryPath: ReadonlyArray<string>): unknown => {
  const text = readFileSync(file, "utf8");
  const read = file.endsWith(".toml")
    ? readTomlEntry(text, entryPath)
    : readJsonEntry(text, entryPath);
  if (Either.isLeft(read)) throw new Error(read.left.message);
  return read.right;
};

/** Temporary files quire left next to the configuration file (there must be none). */
const strays = (file: string): ReadonlyArray<string> =>
  readdirSync(path.dirname(file)).filter((name) => /\.quire-[0-9a-f]+\.tmp$/.test(name));

describe.each(cases)(
  "$client, $scope scope",
  ({ client, scope, file, fixture, entryPath, typed }) => {
    it("install writes only quire's entry; uninstall gives the file back byte for byte", async () => {
      const target = file();
      // serve refuses a workspace root that is not a directory, and so does install.
      mkdirSync(path.join(home(), "notes"));
      writeFixture(target, fixture);
      const inode = statSync(target).ino;
      const installed = await quire(
        "install",
        client,
        "--scope",
        scope,
        "--store",
        "file:../store",
        "--workspace-root",
        "~/notes",
        "--writable",
        "notes,inbox",
      );
      expect(installed.stderr).toBe("");
      expect(installed.code).toBe(0);
      expect(installed.stdout).toContain(`registered quire in`);
      expect(installed.stdout).toContain(target);
      const args = [
        "serve",
        `--store=file:${path.join(box.root, "store")}`,
        `--workspace-root=${path.join(home(), "notes")}`,
        "--writable=notes,inbox",
      ];
      expect(entryIn(target, entryPath)).toEqual(
        typed ? { type: "stdio", command: binPath, args } : { command: binPath, args },
      );
      // The launcher is absolute and runs (no npx).
      expect(path.isAbsolute(binPath)).toBe(true);
      // Replaced by a rename (a new inode), with the old permissions, the old file as backup, no temporary file left.
      expect(statSync(target).ino).not.toBe(inode);
      expect(statSync(target).mode & 0o777).toBe(0o640);
      expect(readFileSync(`${target}.quire.bak`, "utf8")).toBe(fixture);
      expect(strays(target)).toEqual([]);
      // Everything else is the fixture's own text.
      const after = readFileSync(target, "utf8");
      for (const line of fixture
        .split("\n")
        .filter((l) => l.trim() !== "" && !/^\s*[}\]],?$/.test(l)))
        expect(
          after.split("\n").some((l) => l === line || l.replace(/,(\s*(\/\/.*)?)$/, "$1") === line),
        ).toBe(true);

      const status = await quire("status", client);
      expect(status.code).toBe(0);
      expect(status.stdout).toContain(
        `${client} ${scope}: ${target}\n  registered: ${binPath} ${args.join(" ")}\n`,
      );

      // Installing again with the same options changes nothing.
      const again = await quire(
        "install",
        client,
        "--scope",
        scope,
        "--store",
        "file:../store",
        "--workspace-root",
        "~/notes",
        "--writable",
        "notes,inbox",
      );
      expect(again.stdout).toContain("already registered");
      expect(readFileSync(target, "utf8")).toBe(after);

      const removed = await quire("uninstall", client, "--scope", scope);
      expect(removed.code).toBe(0);
      expect(removed.stdout).toContain("removed quire from");
      expect(readFileSync(target, "utf8")).toBe(fixture);
      expect(readFileSync(`${target}.quire.bak`, "utf8")).toBe(after);
      expect((await quire("status", client)).stdout).toContain(
        `${client} ${scope}: ${target}\n  not registered\n`,
      );
    });

    it("--print shows the change and writes nothing", async () => {
      const target = file();
      writeFixture(target, fixture);
      const printed = await quire("install", client, "--scope", scope, "--print");
      expect(printed.code).toBe(0);
      expect(printed.stdout).toContain(`would change ${target}`);
      expect(printed.stdout).toMatch(/^\+ .*quire/m);
      expect(printed.stdout).toContain("nothing written (--print)");
      expect(readFileSync(target, "utf8")).toBe(fixture);
      expect(existsSync(`${target}.quire.bak`)).toBe(false);
    });

    it("refuses a file it cannot parse, writing nothing", async () => {
      const target = file();
      const broken = target.endsWith(".toml")
        ? `${toml}[mcp_servers.x\ncommand = 1\n`
        : `${fixture.slice(0, -3)}\n`;
      writeFixture(target, broken);
      const refused = await quire("install", client, "--scope", scope);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(
        /refused to edit .*: not valid (JSON|TOML).*nothing was written/,
      );
      // Where, in both formats.
      expect(refused.stderr).toMatch(/line \d+, column \d+/);
      expect(readFileSync(target, "utf8")).toBe(broken);
      expect(existsSync(`${target}.quire.bak`)).toBe(false);
      expect(strays(target)).toEqual([]);
      expect((await quire("uninstall", client, "--scope", scope)).code).toBe(1);
      expect((await quire("status", client)).stdout).toMatch(/cannot parse the file: not valid/);
    });

    it("creates a missing file (and its directories) with mode 0600", async () => {
      const target = file();
      const created = await quire("install", client, "--scope", scope);
      expect(created.code).toBe(0);
      expect(statSync(target).mode & 0o777).toBe(0o600);
      expect(entryIn(target, entryPath)).toMatchObject({ command: binPath, args: ["serve"] });
      expect(existsSync(`${target}.quire.bak`)).toBe(false);
    });
  },
);

describe("the command line", () => {
  it("a client with only a user scope refuses --scope project", async () => {
    const result = await quire("install", "claude-desktop", "--scope", "project");
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("Claude Desktop has no project scope");
  });

  it("an option given twice is refused, naming it, before anything is written", async () => {
    const scope = await quire("install", "gemini", "--scope", "user", "--scope", "project");
    expect(scope.code).toBe(2);
    expect(scope.stderr).toContain("option --scope given more than once");
    const store = await quire("install", "gemini", "--store", "memory:", "--store=file:/x");
    expect(store.code).toBe(2);
    expect(store.stderr).toContain("option --store given more than once");
    expect(existsSync(path.join(home(), ".gemini"))).toBe(false);
  });

  it("--store=memory: is refused for every client: the client's server would forget every note at each restart", async () => {
    const settings = path.join(home(), ".gemini", "settings.json");
    mkdirSync(path.dirname(settings));
    writeFileSync(settings, jsonc);
    for (const client of ["claude-code", "codex", "gemini", "cursor", "vscode", "claude-desktop"]) {
      for (const store of [["--store", "memory:"], ["--store=memory:"]]) {
        const result = await quire("install", client, ...store);
        expect(result.stderr).toContain(
          "--store=memory: keeps the notebook only while one server runs",
        );
        expect(result.stderr).toContain("--store=file:");
        expect(result.code).toBe(2);
        const printed = await quire("install", client, "--print", ...store);
        expect(printed.code).toBe(2);
      }
    }
    // Nothing written: the existing file byte for byte, no other client's file, no backup.
    expect(readFileSync(settings, "utf8")).toBe(jsonc);
    expect(readdirSync(path.dirname(settings))).toEqual(["settings.json"]);
    expect(readdirSync(home()).sort()).toEqual([".gemini"]);
    expect(readdirSync(project)).toEqual([]);
    // By hand, serve may still run on a memory store (a throwaway session); a file store installs.
    const good = await quire("install", "gemini", "--store", `file:${path.join(box.root, "s")}`);
    expect(good.code).toBe(0);
  });

  it("an unknown client names the known ones", async () => {
    const result = await quire("install", "claude");
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      'unknown client "claude"; the clients are claude-code, codex, gemini, cursor, vscode, claude-desktop',
    );
  });

  it("invalid serve options are refused before anything is written", async () => {
    const result = await quire("install", "gemini", "--store", "ftp://x");
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("the serve options are invalid: --store must be");
    expect(existsSync(path.join(home(), ".gemini"))).toBe(false);
    const unknown = await quire("install", "gemini", "--stor", "file:/x");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown option "--stor"');
  });

  it("options serve would refuse as it starts are refused too: a client would get a server that exits at once", async () => {
    const settings = path.join(home(), ".gemini", "settings.json");
    symlinkSync(project, path.join(box.root, "link"));
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
      [
        ["--workspace-root", path.join(box.root, "not-made")],
        `the workspace root ${path.join(box.root, "not-made")} is not an existing directory`,
      ],
      [
        ["--workspace-root", project, "--store", `file:${path.join(project, "store")}`],
        "the file store's directory (--store) and the workspace root",
      ],
      [
        // Outside the root as written (the parser's check), inside it through a symlink.
        ["--workspace-root", project, "--private-root", path.join(box.root, "link", "private")],
        "the private root (--private-root) and the workspace root",
      ],
    ];
    for (const [options, message] of cases) {
      const result = await quire("install", "gemini", ...options);
      expect(result.stderr).toContain(`the serve options are invalid: ${message}`);
      expect(result.code).toBe(2);
    }
    expect(existsSync(path.join(home(), ".gemini"))).toBe(false);
    // Nothing was made checking them: not the private root, not the store.
    expect(existsSync(path.join(project, "private"))).toBe(false);
    expect(existsSync(path.join(project, "store"))).toBe(false);
    // serve itself refuses the same options, exit 2, before it serves.
    for (const [options, message] of cases) {
      const serve = await runQuire(["serve", ...options], { cwd: project, env: box.env });
      expect(serve.code).toBe(2);
      expect(serve.stderr).toContain(message);
    }
    // Options serve starts with are registered.
    const good = await quire("install", "gemini", "--workspace-root", project);
    expect(good.stderr).toBe("");
    expect(good.code).toBe(0);
    expect(entryIn(settings, ["mcpServers", "quire"])).toEqual({
      command: binPath,
      args: ["serve", `--workspace-root=${project}`],
    });
  });

  it("the shell's QUIRE_* variables, which are not registered, play no part in checking the options", async () => {
    const result = await runQuire(["mcp", "install", "codex"], {
      cwd: project,
      env: { ...box.env, QUIRE_COMMIT_RETRIES: "abc" },
    });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(entryIn(path.join(home(), ".codex", "config.toml"), ["mcp_servers", "quire"])).toEqual({
      command: binPath,
      args: ["serve"],
    });
  });

  it("a file with a UTF-8 byte order mark is edited after it and keeps it; uninstall gives it back", async () => {
    const target = path.join(home(), ".gemini", "settings.json");
    const before = `\uFEFF${jsonc}`;
    writeFixture(target, before, 0o644);
    const installed = await quire("install", "gemini");
    expect(installed.code, installed.stderr).toBe(0);
    const after = readFileSync(target, "utf8");
    expect(after.startsWith("\uFEFF")).toBe(true);
    expect(readJsonEntry(after.slice(1), ["mcpServers", "quire"])).toEqual(
      Either.right({ command: binPath, args: ["serve"] }),
    );
    expect((await quire("status", "gemini")).stdout).not.toMatch(/cannot parse/);
    expect((await quire("uninstall", "gemini")).code).toBe(0);
    expect(readFileSync(target, "utf8")).toBe(before);
  });

  it.each([
    ["a line comment", "// quire goes here\n"],
    [
      "comments and blank lines, CRLF",
      "\r\n/* servers\r\n   for this project */\r\n\r\n// more\r\n",
    ],
    ["a comment without a final newline", "  // no newline"],
  ])(
    "a JSON file holding only %s is taken like an empty one, its comments kept above the new object",
    async (_, before) => {
      const target = path.join(project, ".vscode", "mcp.json");
      writeFixture(target, before, 0o644);
      const installed = await quire("install", "vscode", "--scope", "project");
      expect(installed.code, installed.stderr).toBe(0);
      const after = readFileSync(target, "utf8");
      expect(after.startsWith(before)).toBe(true);
      expect(Either.getOrThrow(readJsonEntry(after, ["servers", "quire"]))).toMatchObject({
        command: binPath,
        args: ["serve"],
      });
      expect(readFileSync(`${target}.quire.bak`, "utf8")).toBe(before);
      expect((await quire("status", "vscode")).stdout).not.toMatch(/cannot parse/);
      const removed = await quire("uninstall", "vscode", "--scope", "project");
      expect(removed.code, removed.stderr).toBe(0);
      expect(readFileSync(target, "utf8").startsWith(before)).toBe(true);
    },
  );

  it("a JSON file holding an unterminated comment is still refused, nothing written", async () => {
    const target = path.join(project, ".vscode", "mcp.json");
    const before = "/* never closed\n";
    writeFixture(target, before, 0o644);
    const refused = await quire("install", "vscode", "--scope", "project");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/refused to edit .*: not valid JSON.*nothing was written/);
    expect(readFileSync(target, "utf8")).toBe(before);
  });

  it("a file that is not UTF-8 is refused, not decoded with replacement characters, and status says so", async () => {
    const json = path.join(home(), ".gemini", "settings.json");
    const codex = path.join(home(), ".codex", "config.toml");
    const latin1Json = Buffer.from('{"theme": "caf\xe9", "mcpServers": {}}\n', "latin1");
    const latin1Toml = Buffer.from('model = "caf\xe9"\n', "latin1");
    mkdirSync(path.dirname(json), { recursive: true });
    mkdirSync(path.dirname(codex), { recursive: true });
    writeFileSync(json, latin1Json);
    writeFileSync(codex, latin1Toml);
    for (const [client, file] of [
      ["gemini", json],
      ["codex", codex],
    ] as const) {
      for (const action of ["install", "uninstall"]) {
        const refused = await quire(action, client);
        expect(refused.code, refused.stdout).toBe(1);
        expect(refused.stderr).toBe(
          `quire mcp: refused to edit ${file}: it is not UTF-8 text (quire would garble its other bytes); convert it to UTF-8 (for example with iconv) and run the command again, or edit it by hand; nothing was written\n`,
        );
      }
      expect(existsSync(`${file}.quire.bak`)).toBe(false);
      expect(strays(file)).toEqual([]);
    }
    expect(readFileSync(json)).toEqual(latin1Json);
    expect(readFileSync(codex)).toEqual(latin1Toml);
    const status = await quire("status");
    expect(status.code).toBe(0);
    for (const [client, file] of [
      ["gemini", json],
      ["codex", codex],
    ])
      expect(status.stdout).toContain(
        `${client} user: ${file}\n  cannot parse the file: it is not UTF-8 text`,
      );
  });

  it("a JSON file nested thousands of levels deep is refused, and status still lists every client", async () => {
    const target = path.join(home(), ".claude.json");
    const deep = `{"deep": ${"[".repeat(5000)}${"]".repeat(5000)}}`;
    writeFixture(target, deep, 0o644);
    for (const action of ["install", "uninstall"]) {
      const refused = await quire(action, "claude-code");
      expect(refused.code).toBe(1);
      expect(refused.stderr).toBe(
        `quire mcp: refused to edit ${target}: nested more than 256 levels deep at line 1, column 265, which quire does not edit; edit the file by hand; nothing was written\n`,
      );
    }
    expect(readFileSync(target, "utf8")).toBe(deep);
    const status = await quire("status");
    expect(status.code, status.stderr).toBe(0);
    expect(status.stderr).toBe("");
    expect(status.stdout).toContain(
      `claude-code user: ${target}\n  cannot parse the file: nested more than 256 levels deep`,
    );
    for (const client of ["codex", "gemini", "cursor", "vscode", "claude-desktop"])
      expect(status.stdout).toContain(`${client} user: `);
  });

  it("never prints credentials of an entry: the replaced entry, status and --print are scrubbed", async () => {
    const target = path.join(home(), ".claude.json");
    const secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    writeFixture(
      target,
      JSON.stringify({
        mcpServers: {
          quire: {
            command: "/elsewhere/quire",
            args: [
              "serve",
              `--endpoint=http://AKIAIOSFODNN7EXAMPLE:${secret}@host:9000`,
              "--url=http://h/mcp?token=t0k3nt0k3n",
            ],
          },
        },
      }),
      0o644,
    );
    const status = await quire("status", "claude-code");
    expect(status.stdout).toContain(
      "registered: /elsewhere/quire serve --endpoint=http://***@host:9000 --url=http://h/mcp?token=<secret>",
    );
    const printed = await quire("install", "claude-code", "--print");
    expect(printed.code, printed.stderr).toBe(0);
    const installed = await quire("install", "claude-code");
    expect(installed.code, installed.stderr).toBe(0);
    expect(installed.stdout).toContain(
      "it replaced the entry: /elsewhere/quire serve --endpoint=http://***@host:9000 --url=http://h/mcp?token=<secret>",
    );
    for (const output of [status, printed, installed])
      for (const leaked of [secret, "AKIAIOSFODNN7EXAMPLE", "t0k3nt0k3n", "wJalr"])
        expect(output.stdout + output.stderr).not.toContain(leaked);
  });

  it("never prints a credential a client's configuration holds: other servers' env, the entry's env, an option's value", async () => {
    // Each secret once, in the forms clients write: a one-line JSON file, an entry's
    // env kept by the install, an option and its value as separate arguments, TOML.
    const secrets = {
      github: "ghp_R3alGitHubT0kenValue0123456789abcdef",
      githubEnv: "ghp_Quire3ntryEnvT0ken0123456789abcdef",
      aws: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
      option: "tok_0ptionValueSeparate0123",
      apiKey: "sk-apiK3yInAT0mlArray0123",
      codexEnv: "ghp_C0dexInlineTableT0ken0123",
    };
    const cursor = path.join(home(), ".cursor", "mcp.json");
    writeFixture(
      cursor,
      `{"mcpServers":{"github":{"command":"npx","env":{"GITHUB_PERSONAL_ACCESS_TOKEN":"${secrets.github}"}}}}`,
    );
    const claude = path.join(home(), ".claude.json");
    writeFixture(
      claude,
      `${JSON.stringify(
        {
          mcpServers: {
            quire: {
              command: "/elsewhere/quire",
              args: ["serve", "--token", secrets.option],
              env: { GITHUB_TOKEN: secrets.githubEnv, AWS_SECRET_ACCESS_KEY: secrets.aws },
            },
          },
        },
        null,
        2,
      )}\n`,
    );
    const codex = path.join(home(), ".codex", "config.toml");
    writeFixture(
      codex,
      `[mcp_servers.github]\ncommand = "npx"\nenv = { GITHUB_TOKEN = "${secrets.codexEnv}" }\n\n[mcp_servers.quire]\ncommand = "/elsewhere/quire"\nargs = ["serve", "--api-key", '${secrets.apiKey}']\n`,
    );
    const runs = [];
    for (const client of ["cursor", "claude-code", "codex"]) {
      runs.push(await quire("status", client));
      runs.push(await quire("install", client, "--print"));
      runs.push(await quire("install", client));
      runs.push(await quire("status", client));
      runs.push(await quire("uninstall", client, "--print"));
    }
    for (const run of runs) {
      expect(run.code, run.stderr).toBe(0);
      for (const secret of Object.values(secrets))
        expect(run.stdout + run.stderr).not.toContain(secret);
    }
    const shown = runs.map((run) => run.stdout).join("");
    // What changed still shows: which setting held the secret, and the replaced entry.
    expect(shown).toContain('"GITHUB_PERSONAL_ACCESS_TOKEN":"<secret>"');
    expect(shown).toContain('"AWS_SECRET_ACCESS_KEY": "<secret>"');
    expect(shown).toContain("registered: /elsewhere/quire serve --token <secret>");
    expect(shown).toContain("it replaced the entry: /elsewhere/quire serve --token <secret>");
    expect(shown).toContain("it replaced the entry: /elsewhere/quire serve --api-key <secret>");
    // The files themselves keep every value.
    expect(readFileSync(cursor, "utf8")).toContain(secrets.github);
    expect(entryIn(claude, ["mcpServers", "quire"])).toMatchObject({
      env: { GITHUB_TOKEN: secrets.githubEnv, AWS_SECRET_ACCESS_KEY: secrets.aws },
    });
    expect(readFileSync(codex, "utf8")).toContain(secrets.codexEnv);
  });

  it("an install over another quire entry names it, keeps the settings a person added and drops a URL", async () => {
    const target = path.join(home(), ".claude.json");
    writeFixture(
      target,
      `{"mcpServers":{"quire":{"command":"/elsewhere/quire","args":["serve","--store","s3://x"],"env":{"AWS_PROFILE":"team"},"timeout":30}}}`,
      0o644,
    );
    const installed = await quire("install", "claude-code");
    expect(installed.code, installed.stderr).toBe(0);
    expect(installed.stdout).toContain(
      "it replaced the entry: /elsewhere/quire serve --store s3://x",
    );
    expect(entryIn(target, ["mcpServers", "quire"])).toEqual({
      type: "stdio",
      command: binPath,
      args: ["serve"],
      env: { AWS_PROFILE: "team" },
      timeout: 30,
    });
    // Installing the same again changes nothing and replaces nothing.
    const again = await quire("install", "claude-code");
    expect(again.stdout).toContain("already registered");
    // A URL a client would use instead of the command is dropped, and said so; a token in
    // it is never printed.
    const gemini = path.join(home(), ".gemini", "settings.json");
    writeFixture(
      gemini,
      `{"mcpServers":{"quire":{"httpUrl":"http://127.0.0.1:9/mcp?token=s3cr3t","timeout":3}}}`,
    );
    const overUrl = await quire("install", "gemini");
    expect(overUrl.code, overUrl.stderr).toBe(0);
    expect(overUrl.stdout).toContain(
      "it replaced the entry: an entry without a command (httpUrl, timeout) (dropped: httpUrl)",
    );
    expect(overUrl.stdout).not.toContain("s3cr3t");
    expect(entryIn(gemini, ["mcpServers", "quire"])).toEqual({
      command: binPath,
      args: ["serve"],
      timeout: 3,
    });
    // A Codex table with settings of its own cannot be rewritten without dropping them.
    const codex = path.join(home(), ".codex", "config.toml");
    const withEnv = `[mcp_servers.quire]\ncommand = "/elsewhere/quire"\nargs = ["serve"]\n\n[mcp_servers.quire.env]\nAWS_PROFILE = "team"\n`;
    writeFixture(codex, withEnv, 0o644);
    const refused = await quire("install", "codex");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      'quire\'s entry there also has "env", which this install would drop',
    );
    expect(readFileSync(codex, "utf8")).toBe(withEnv);
  });

  it("a configuration path that is a directory is refused with what to do", async () => {
    const target = path.join(home(), ".gemini", "settings.json");
    mkdirSync(target, { recursive: true });
    const refused = await quire("install", "gemini");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("ENOTFILE: it is not a regular file (a directory?)");
    expect(statSync(target).isDirectory()).toBe(true);
  });

  it("follows a symlinked configuration file, keeping the link", async () => {
    const real = path.join(box.root, "dotfiles", "settings.json");
    writeFixture(real, jsonc, 0o644);
    const link = path.join(home(), ".gemini", "settings.json");
    mkdirSync(path.dirname(link), { recursive: true });
    symlinkSync(real, link);
    expect((await quire("install", "gemini")).code).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(entryIn(real, ["mcpServers", "quire"])).toMatchObject({ command: binPath });
  });

  it("refuses a configuration file that is a dangling symlink, creating nothing where it points", async () => {
    const outside = path.join(box.root, "outside");
    const missing = path.join(outside, "deep", "settings.json");
    const link = path.join(home(), ".gemini", "settings.json");
    mkdirSync(path.dirname(link), { recursive: true });
    symlinkSync(missing, link);
    for (const args of [
      ["install", "gemini"],
      ["install", "gemini", "--print"],
    ]) {
      const refused = await quire(...args);
      expect(refused.code, refused.stdout).toBe(1);
      expect(refused.stderr).toContain(
        `quire mcp: refused to edit ${link}: it is a symbolic link to ${missing}, which does not exist;`,
      );
      expect(refused.stderr).toMatch(/create .* or remove the link.*; nothing was written\n$/);
    }
    expect(existsSync(outside)).toBe(false);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    // Nothing to remove, so nothing to refuse; status says what the link is.
    const uninstalled = await quire("uninstall", "gemini");
    expect(uninstalled.code).toBe(0);
    expect(uninstalled.stdout).toContain("nothing to remove");
    expect((await quire("status", "gemini")).stdout).toContain(
      `symbolic link to ${missing}, which does not exist`,
    );
    // A directory on the way that is a dangling link is refused the same way.
    const codexDir = path.join(home(), ".codex");
    const missingDir = path.join(outside, "codex");
    symlinkSync(missingDir, codexDir);
    const codex = await quire("install", "codex");
    expect(codex.code).toBe(1);
    expect(codex.stderr).toContain(
      `refused to edit ${path.join(codexDir, "config.toml")}: the directory ${codexDir} on its way is a symbolic link to ${missingDir}, which does not exist;`,
    );
    expect(existsSync(outside)).toBe(false);
    // Once the target exists (an empty file will do), the link is followed as usual.
    mkdirSync(path.dirname(missing), { recursive: true });
    writeFileSync(missing, "");
    expect((await quire("install", "gemini")).code).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(entryIn(missing, ["mcpServers", "quire"])).toMatchObject({ command: binPath });
  });

  it("a symlink planted at the backup path (a hostile repository) is replaced, never written through", async () => {
    const victim = path.join(box.root, "victim", ".bashrc");
    writeFixture(victim, "orig\n", 0o644);
    const target = path.join(project, ".mcp.json");
    writeFixture(target, '{\n  "mcpServers": {}\n}\n', 0o644);
    symlinkSync(victim, `${target}.quire.bak`);
    const installed = await quire("install", "claude-code", "--scope", "project");
    expect(installed.code, installed.stderr).toBe(0);
    expect(readFileSync(victim, "utf8")).toBe("orig\n");
    expect(lstatSync(`${target}.quire.bak`).isSymbolicLink()).toBe(false);
    expect(readFileSync(`${target}.quire.bak`, "utf8")).toBe('{\n  "mcpServers": {}\n}\n');
    // Uninstall writes its backup the same way.
    const installedText = readFileSync(target, "utf8");
    rmSync(`${target}.quire.bak`);
    symlinkSync(victim, `${target}.quire.bak`);
    expect((await quire("uninstall", "claude-code", "--scope", "project")).code).toBe(0);
    expect(readFileSync(victim, "utf8")).toBe("orig\n");
    expect(readFileSync(`${target}.quire.bak`, "utf8")).toBe(installedText);
  });

  it("a directory at the backup path is refused naming the backup path, writing nothing", async () => {
    const target = path.join(home(), ".gemini", "settings.json");
    writeFixture(target, jsonc, 0o644);
    mkdirSync(`${target}.quire.bak`);
    const refused = await quire("install", "gemini");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `quire mcp: cannot write the backup ${target}.quire.bak: EISDIR: it is a directory; move it away (quire keeps the previous file there) and run it again\n`,
    );
    expect(readFileSync(target, "utf8")).toBe(jsonc);
    expect(strays(target)).toEqual([]);
  });

  it("refuses to replace a read-only configuration file, for install and uninstall", async () => {
    const target = path.join(home(), ".gemini", "settings.json");
    writeFixture(target, jsonc, 0o444);
    for (const args of [
      ["install", "gemini"],
      ["install", "gemini", "--print"],
    ]) {
      const refused = await quire(...args);
      expect(refused.code, refused.stdout).toBe(1);
      expect(refused.stderr).toContain(
        `quire mcp: refused to edit ${target}: it is read-only (mode 0444); make it writable`,
      );
      expect(refused.stderr).toMatch(/; nothing was written\n$/);
    }
    expect(readFileSync(target, "utf8")).toBe(jsonc);
    expect(statSync(target).mode & 0o777).toBe(0o444);
    expect(existsSync(`${target}.quire.bak`)).toBe(false);
    expect(strays(target)).toEqual([]);
    expect((await quire("status", "gemini")).stdout).toContain("it is read-only (mode 0444)");
    // Made writable, it is edited (and keeps its mode); made read-only again, uninstall refuses.
    chmodSync(target, 0o644);
    expect((await quire("install", "gemini")).code).toBe(0);
    chmodSync(target, 0o444);
    const installed = readFileSync(target, "utf8");
    expect((await quire("install", "gemini")).stdout).toContain("already registered");
    const uninstall = await quire("uninstall", "gemini");
    expect(uninstall.code).toBe(1);
    expect(uninstall.stderr).toContain(`refused to edit ${target}: it is read-only (mode 0444)`);
    expect(readFileSync(target, "utf8")).toBe(installed);
    // Through a symlink, the read-only target is named.
    const real = path.join(box.root, "dotfiles", "mcp.json");
    writeFixture(real, jsonc, 0o444);
    const link = path.join(home(), ".cursor", "mcp.json");
    mkdirSync(path.dirname(link), { recursive: true });
    symlinkSync(real, link);
    const viaLink = await quire("install", "cursor");
    expect(viaLink.code).toBe(1);
    expect(viaLink.stderr).toContain(
      `refused to edit ${link}: its target ${real} is read-only (mode 0444)`,
    );
    expect(readFileSync(real, "utf8")).toBe(jsonc);
  });

  it("refuses a configuration file with other hard links: a rename would leave them stale", async () => {
    // A rename gives the path a new inode; the file's other names would keep the old
    // content (and the client reading one of them would never see quire's entry).
    const target = path.join(home(), ".cursor", "mcp.json");
    writeFixture(target, jsonc, 0o644);
    const other = path.join(box.root, "dotfiles-mcp.json");
    linkSync(target, other);
    for (const args of [
      ["install", "cursor"],
      ["install", "cursor", "--print"],
    ]) {
      const refused = await quire(...args);
      expect(refused.code, refused.stdout).toBe(1);
      expect(refused.stderr).toContain(
        `quire mcp: refused to edit ${target}: it has 2 hard links (other names for the same file)`,
      );
      expect(refused.stderr).toMatch(/; nothing was written\n$/);
    }
    expect(readFileSync(target, "utf8")).toBe(jsonc);
    expect(statSync(target).ino).toBe(statSync(other).ino);
    expect(existsSync(`${target}.quire.bak`)).toBe(false);
    expect(strays(target)).toEqual([]);
    expect((await quire("status", "cursor")).stdout).toContain("it has 2 hard links");
    // Once it is one file again, it is edited; linked again, uninstall refuses it too.
    rmSync(other);
    expect((await quire("install", "cursor")).code).toBe(0);
    const installed = readFileSync(target, "utf8");
    linkSync(target, other);
    const uninstall = await quire("uninstall", "cursor");
    expect(uninstall.code).toBe(1);
    expect(uninstall.stderr).toContain("it has 2 hard links");
    expect(readFileSync(other, "utf8")).toBe(installed);
    expect(readFileSync(target, "utf8")).toBe(installed);
  });

  it("status lists every client and scope, and says when the registered command is gone", async () => {
    writeFixture(
      path.join(home(), ".cursor", "mcp.json"),
      `{"mcpServers":{"quire":{"command":"/nowhere/quire","args":["serve"]}}}`,
    );
    const result = await quire("status");
    expect(result.code).toBe(0);
    for (const client of ["claude-code", "codex", "gemini", "cursor", "vscode", "claude-desktop"])
      expect(result.stdout).toContain(`${client} user: `);
    expect(result.stdout).toContain(
      "registered: /nowhere/quire serve (the command does not exist)",
    );
    expect(result.stdout).not.toContain("claude-desktop project");
  });

  it("status looks a bare command name up on PATH, and says when a command cannot be run", async () => {
    // A bare name (the hand-written `npx` entry of docs/mcp-clients.md) is what the client
    // looks up on PATH, not a file in the current directory.
    const bin = path.join(box.root, "bin");
    mkdirSync(bin);
    writeFileSync(path.join(bin, "npx"), "#!/bin/sh\n", { mode: 0o755 });
    const notExecutable = path.join(bin, "plain");
    writeFileSync(notExecutable, "#!/bin/sh\n", { mode: 0o644 });
    writeFixture(
      path.join(project, ".mcp.json"),
      `{"mcpServers":{"quire":{"command":"npx","args":["-y","quire-mcp","serve"]}}}`,
    );
    writeFixture(
      path.join(project, ".cursor", "mcp.json"),
      `{"mcpServers":{"quire":{"command":"no-such-quire","args":["serve"]}}}`,
    );
    writeFixture(
      path.join(home(), ".cursor", "mcp.json"),
      `{"mcpServers":{"quire":{"command":${JSON.stringify(notExecutable)},"args":["serve"]}}}`,
    );
    const result = await runQuire(["mcp", "status"], {
      cwd: project,
      env: { ...box.env, PATH: `${bin}${path.delimiter}${box.env["PATH"] ?? ""}` },
    });
    expect(result.code).toBe(0);
    const section = (name: string) =>
      result.stdout.slice(result.stdout.indexOf(`${name}: `)).split(/\n(?=\S)/)[0] ?? "";
    expect(section("claude-code project")).toMatch(/registered: npx -y quire-mcp serve$/m);
    expect(section("claude-code project")).not.toContain("(the command");
    expect(section("cursor project")).toContain(
      "registered: no-such-quire serve (no command of that name on PATH)",
    );
    // Root may read any file, but no one may execute a file without an execute bit.
    expect(section("cursor user")).toContain(
      `registered: ${notExecutable} serve (the command is not an executable file)`,
    );
  });

  it("refuses an empty or relative HOME, whose user scope named the current directory's files", async () => {
    for (const value of ["", "relhome"]) {
      const result = await runQuire(["mcp", "install", "cursor"], {
        cwd: project,
        env: { ...box.env, HOME: value },
      });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("HOME is");
      expect(existsSync(path.join(project, ".cursor"))).toBe(false);
      expect(existsSync(path.join(project, "relhome"))).toBe(false);
    }
  });

  it("ends quietly when its reader goes away (quire mcp status | head -1)", async () => {
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [binPath, "mcp", "status"], {
        cwd: project,
        env: box.env,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stderr = "";
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
      // The reader takes the first chunk and leaves, as head does.
      child.stdout.once("data", () => child.stdout.destroy());
      child.on("close", (code) => resolve({ code, stderr }));
    });
    // It crashed with an unhandled EPIPE and a stack trace.
    expect(result.stderr).not.toContain("EPIPE");
    expect(result.code).toBe(0);
  });

  it("fails when its output cannot be written (a full disk), never exits 0", async () => {
    if (!existsSync("/dev/full")) return;
    const full = openSync("/dev/full", "w");
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [binPath, "mcp", "status"], {
        cwd: project,
        env: box.env,
        stdio: ["ignore", full, "pipe"],
      });
      let stderr = "";
      child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
      child.on("close", (code) => resolve({ code, stderr }));
    });
    closeSync(full);
    // 74 (an output failure), not 70 (a bug inside quire).
    expect(result.code).toBe(74);
    expect(result.stderr).toContain("cannot write the output (ENOSPC): the report is incomplete");
  });

  it("-h explains the command", async () => {
    const result = await quire("-h");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Usage: quire mcp install CLIENT");
  });
});
