/**
 * Real MCP clients against quire as a person installs it (SPEC §12, issue "Ship it"):
 * quire is packed and installed globally from its tarball, registered with
 * `quire mcp install <client>` in a temporary HOME, and then each client's own check
 * must show it working. No API key is involved:
 *
 * - Claude Code: `claude mcp list` shows quire connected;
 * - Gemini CLI: `gemini mcp list` (in a trusted folder) shows quire connected;
 * - Codex: its app-server's `mcpServerStatus/list` shows quire with exactly the two tools;
 * - the MCP Inspector (`--cli`): tools/list of exactly the two tools, through the very
 *   entries `quire mcp install` wrote for Claude Code, Gemini CLI, Cursor and Claude
 *   Desktop (their files share the `mcpServers` shape the Inspector reads), and a round
 *   trip `notes_pull` → write a file → `notes_commit` against `serve --workspace-root`
 *   whose note a later `quire pull` finds.
 *
 * Claude Code's and Gemini CLI's listings show the connection but not the tool list, so
 * the two-tool check of their entries is the Inspector's, on their own files.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt } from "../helpers/cli.js";
import {
  type InstalledQuire,
  installClient,
  installQuireFromTarball,
  pinned,
  run,
} from "./support.js";

let quire: InstalledQuire;
let root: string;
let home: string;
let ws: string;
let store: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  assertBuilt();
  quire = await installQuireFromTarball();
  root = mkdtempSync(path.join(tmpdir(), "quire-clients-"));
  home = path.join(root, "home");
  ws = path.join(root, "project");
  store = path.join(root, "store");
  for (const dir of [home, ws, path.join(root, "tmp")]) mkdirSync(dir, { recursive: true });
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => !/^(HOME|XDG_|QUIRE_|AWS_|TMPDIR$|LOG_LEVEL$|CODEX_HOME$|CLAUDE_)/.test(name),
    ),
  );
  env = {
    ...inherited,
    HOME: home,
    TMPDIR: path.join(root, "tmp"),
    // No update checks or telemetry from the clients under test.
    DISABLE_AUTOUPDATER: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_TELEMETRY: "1",
    NO_COLOR: "1",
  };
}, 600_000);

afterAll(() => {
  if (root !== undefined) rmSync(root, { recursive: true, force: true });
  if (quire !== undefined) rmSync(path.dirname(quire.prefix), { recursive: true, force: true });
});

const launcher = () =>
  path.join(quire.prefix, "lib", "node_modules", "quire-mcp", "bin", "quire.js");

const installIn = async (client: string) => {
  const result = await run(quire.bin, ["mcp", "install", client, "--store", `file:${store}`], {
    cwd: ws,
    env,
  });
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  expect(result.stdout).toContain(`${launcher()} serve --store=file:${store}`);
};

/** The tool names the Inspector lists for the arguments (a server command or `--config … --server quire`). */
const inspectorTools = async (
  inspector: string,
  args: ReadonlyArray<string>,
): Promise<ReadonlyArray<string>> => {
  const listed = await run(inspector, ["--cli", ...args, "--method", "tools/list"], {
    cwd: ws,
    env,
  });
  expect(listed.code, listed.stderr).toBe(0);
  const { tools } = JSON.parse(listed.stdout) as { tools: ReadonlyArray<{ name: string }> };
  return tools.map((tool) => tool.name);
};

describe("installed from the tarball", () => {
  it("installs globally without npm's install-script warning and runs", async () => {
    expect(quire.npmOutput).not.toMatch(/install-scripts|quire-mcp@[\d.]+ \(prepare/);
    const version = await run(quire.bin, ["version"], { cwd: ws, env });
    expect(version.stdout).toMatch(/^quire \d+\.\d+\.\d+\n$/);
    const tarballFiles = await run("tar", ["tzf", quire.tarball], { cwd: ws, env });
    for (const file of [
      "package/LICENSE",
      "package/README.md",
      "package/docs/mcp-clients.md",
      "package/server.json",
    ])
      expect(tarballFiles.stdout.split("\n")).toContain(file);
  });
});

describe(`Claude Code ${pinned.claude.version}`, () => {
  let claude: string;
  beforeAll(async () => {
    claude = await installClient(pinned.claude);
  }, 900_000);

  it("claude mcp list shows quire connected; its entry serves exactly the two tools", async () => {
    await installIn("claude-code");
    const listed = await run(claude, ["mcp", "list"], { cwd: ws, env, timeoutMs: 180_000 });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(
      new RegExp(
        `^quire: ${launcher().replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")} serve .* - ✔ Connected$`,
        "m",
      ),
    );
    const inspector = await installClient(pinned.inspector);
    expect(
      await inspectorTools(inspector, [
        "--config",
        path.join(home, ".claude.json"),
        "--server",
        "quire",
      ]),
    ).toEqual(["notes_pull", "notes_commit"]);
  });
});

describe(`Gemini CLI ${pinned.gemini.version}`, () => {
  let gemini: string;
  beforeAll(async () => {
    gemini = await installClient(pinned.gemini);
  }, 900_000);

  it("gemini mcp list shows quire connected; its entry serves exactly the two tools", async () => {
    // A person's existing settings, which the install keeps; and the project folder
    // trusted, as Gemini CLI asks on first use (it disables every server elsewhere).
    mkdirSync(path.join(home, ".gemini"), { recursive: true });
    const settings = path.join(home, ".gemini", "settings.json");
    writeFileSync(settings, '{\n  "privacy": { "usageStatisticsEnabled": false }\n}\n');
    writeFileSync(
      path.join(home, ".gemini", "trustedFolders.json"),
      JSON.stringify({ [ws]: "TRUST_FOLDER" }),
    );
    await installIn("gemini");
    expect(JSON.parse(readFileSync(settings, "utf8"))).toMatchObject({
      privacy: { usageStatisticsEnabled: false },
    });
    const listed = await run(gemini, ["mcp", "list"], { cwd: ws, env, timeoutMs: 180_000 });
    expect(listed.code, listed.stderr).toBe(0);
    expect(`${listed.stdout}${listed.stderr}`).toMatch(
      /✓ quire: .* serve --store=.* \(stdio\) - Connected/,
    );
    const inspector = await installClient(pinned.inspector);
    expect(await inspectorTools(inspector, ["--config", settings, "--server", "quire"])).toEqual([
      "notes_pull",
      "notes_commit",
    ]);
  });
});

describe(`Codex ${pinned.codex.version}`, () => {
  let codex: string;
  beforeAll(async () => {
    codex = await installClient(pinned.codex);
  }, 900_000);

  /** Asks `codex app-server` (JSON lines over stdio) for its MCP servers' status. */
  const serverStatus = async (): Promise<
    ReadonlyArray<{ name: string; tools: Record<string, unknown>; toolsError: string | null }>
  > => {
    const requests = [
      {
        method: "initialize",
        id: 1,
        params: {
          clientInfo: { name: "quire-clients-test", title: null, version: "1" },
          capabilities: null,
        },
      },
      { method: "initialized" },
      { method: "mcpServerStatus/list", id: 2, params: {} },
    ];
    const { spawn } = await import("node:child_process");
    return new Promise((resolve, reject) => {
      const child = spawn(codex, ["app-server"], { cwd: ws, env, stdio: ["pipe", "pipe", "pipe"] });
      let buffer = "";
      let stderr = "";
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        reject(new Error(`codex app-server gave no server status in 120 s; stderr:\n${stderr}`));
      }, 120_000);
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        buffer += chunk;
        for (let end = buffer.indexOf("\n"); end !== -1; end = buffer.indexOf("\n")) {
          const message = JSON.parse(buffer.slice(0, end)) as {
            id?: number;
            result?: { data: never };
            error?: unknown;
          };
          buffer = buffer.slice(end + 1);
          if (message.id === 1)
            for (const request of requests.slice(1))
              child.stdin.write(`${JSON.stringify(request)}\n`);
          if (message.id === 2) {
            clearTimeout(timer);
            child.kill("SIGTERM");
            if (message.result === undefined)
              reject(new Error(`mcpServerStatus/list failed: ${JSON.stringify(message.error)}`));
            else resolve(message.result.data);
          }
        }
      });
      child.on("error", reject);
      child.stdin.write(`${JSON.stringify(requests[0])}\n`);
    });
  };

  it("the app-server's MCP status lists quire with exactly the two tools", async () => {
    await installIn("codex");
    const servers = await serverStatus();
    const quireStatus = servers.find((server) => server.name === "quire");
    expect(quireStatus?.toolsError ?? null).toBeNull();
    expect(Object.keys(quireStatus?.tools ?? {}).sort()).toEqual(["notes_commit", "notes_pull"]);
  });
});

describe(`MCP Inspector ${pinned.inspector.version}`, () => {
  let inspector: string;
  beforeAll(async () => {
    inspector = await installClient(pinned.inspector);
  }, 900_000);

  it.each(["cursor", "claude-desktop"])(
    "the entry quire mcp install writes for %s serves exactly the two tools",
    async (client) => {
      await installIn(client);
      const file =
        client === "cursor"
          ? path.join(home, ".cursor", "mcp.json")
          : path.join(home, ".config", "Claude", "claude_desktop_config.json");
      expect(await inspectorTools(inspector, ["--config", file, "--server", "quire"])).toEqual([
        "notes_pull",
        "notes_commit",
      ]);
    },
  );

  it("round trip: notes_pull, a new file, notes_commit publishes it; a later pull finds it", async () => {
    const notebook = path.join(root, "shared-notebook");
    mkdirSync(notebook);
    const server = [
      launcher(),
      "serve",
      "--workspace-root",
      notebook,
      "--store",
      `file:${store}-roundtrip`,
    ];
    expect(await inspectorTools(inspector, server)).toEqual(["notes_pull", "notes_commit"]);
    const callTool = async (name: string, args: ReadonlyArray<string>) => {
      const called = await run(
        inspector,
        ["--cli", ...server, "--method", "tools/call", "--tool-name", name, ...args],
        { cwd: ws, env },
      );
      expect(called.code, called.stderr).toBe(0);
      return JSON.parse(called.stdout) as {
        isError?: boolean;
        structuredContent: Record<string, unknown>;
      };
    };
    const pulled = await callTool("notes_pull", []);
    expect(pulled.isError ?? false).toBe(false);
    expect(pulled.structuredContent).toMatchObject({ code: "OK", path: notebook, generation: 0 });
    writeFileSync(path.join(notebook, "hello.md"), "# Hello from the Inspector\n");
    const committed = await callTool("notes_commit", [
      "--tool-arg",
      "message=a note from the MCP Inspector",
    ]);
    expect(committed.structuredContent).toMatchObject({
      code: "OK",
      generation: 1,
      files: [{ path: "hello.md", insertions: 1, deletions: 0 }],
    });
    // Another participant's pull, through the CLI, receives it.
    const copies = path.join(root, "copies");
    mkdirSync(copies);
    const other = path.join(copies, "other");
    const pull = await run(
      quire.bin,
      ["pull", other, "--store", `file:${store}-roundtrip`, "--workspace-root", copies],
      { cwd: copies, env },
    );
    expect(pull.code, pull.stderr).toBe(0);
    expect(readFileSync(path.join(other, "hello.md"), "utf8")).toBe("# Hello from the Inspector\n");
  });
});
