/**
 * The MCP clients `quire mcp install` knows: where each keeps its server list, in which
 * format, and the entry that starts quire (docs/mcp-clients.md gives the sources). Every
 * client gets the same thing: the absolute launcher as `command` and `serve` plus the
 * chosen flags as `args`, under the server name `quire`.
 */
import * as NodePath from "node:path";
import type { Placement } from "../../ports/ConfigFiles.js";
import { isAtOrBelow } from "../config/paths.js";

/** The clients, by the name the command line uses. */
export const clientNames = [
  "claude-code",
  "codex",
  "gemini",
  "cursor",
  "vscode",
  "claude-desktop",
] as const;

/** One client's command-line name. */
export type ClientName = (typeof clientNames)[number];

/** Whose configuration: the user's (every project) or one project's (the current directory). */
export type Scope = "user" | "project";

/** Where the parser may find the host's directories. */
export interface Place {
  readonly platform: NodeJS.Platform;
  readonly home: string;
  /** The project directory for `--scope project`: the current directory. */
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** The server name every client registers quire under. */
export const serverName = "quire";

/** A configuration file and where quire's entry lives in it. */
export interface Target {
  readonly path: string;
  readonly format: "json" | "toml";
  /** Keys from the top of the file down to quire's entry. */
  readonly entryPath: ReadonlyArray<string>;
}

/** One client. */
export interface Client {
  readonly name: ClientName;
  /** The product's name, for messages. */
  readonly label: string;
  /** The scopes it has; the first is the default. */
  readonly scopes: ReadonlyArray<Scope>;
  readonly target: (scope: Scope, place: Place) => Target;
  /**
   * The environment variable that, when set, moves the client's user-scope file
   * (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `GEMINI_CLI_HOME`); see {@link unplaceableTarget}.
   */
  readonly homeVariable?: string;
  /** The entry's value for `command` and `args`, in the client's own shape. */
  readonly entry: (command: string, args: ReadonlyArray<string>) => Record<string, unknown>;
}

const absoluteEnv = (place: Place, name: string): string | undefined => {
  const value = place.env[name];
  return value !== undefined && NodePath.isAbsolute(value) ? value : undefined;
};

/**
 * Why `client`'s file for `scope` cannot be located, or `undefined`: its home variable
 * holds a relative path. The client resolves it against the directory it is started in,
 * which quire cannot know, so any file quire edited might not be the one the client reads
 * ("registered" while the client lists no server). XDG_CONFIG_HOME is not one: the XDG
 * specification has relative values ignored, as quire does.
 */
export const unplaceableTarget = (
  client: Client,
  scope: Scope,
  place: Place,
): string | undefined => {
  const name = client.homeVariable;
  const value = name === undefined || scope !== "user" ? undefined : place.env[name];
  return value === undefined || value === "" || NodePath.isAbsolute(value)
    ? undefined
    : `${name} is a relative path (${JSON.stringify(value)}): ${client.label} resolves it against the directory it is started in, so quire cannot tell which file it reads; set ${name} to an absolute path, or unset it`;
};

/**
 * Where `client`'s file at `path` for `scope` may be edited (ports/ConfigFiles.ts
 * `Placement`): a project's file inside the project (the current directory), its links
 * never followed out of it; a user's file below the home directory, which must exist.
 * `undefined` for a user file a home variable places outside HOME (`CODEX_HOME=/opt/…`):
 * that directory is the person's explicit choice, created if missing.
 */
export const placementOf = (path: string, scope: Scope, place: Place): Placement | undefined => {
  if (scope === "project") return { within: place.cwd, confined: true };
  return isAtOrBelow(path, place.home) ? { within: place.home, confined: false } : undefined;
};

/** `$XDG_CONFIG_HOME` or `~/.config`. */
const xdgConfig = (place: Place): string =>
  absoluteEnv(place, "XDG_CONFIG_HOME") ?? NodePath.join(place.home, ".config");

/** Electron's per-user application data directory (where VS Code and Claude Desktop keep settings). */
const appData = (place: Place): string =>
  place.platform === "darwin"
    ? NodePath.join(place.home, "Library", "Application Support")
    : place.platform === "win32"
      ? (place.env["APPDATA"] ?? NodePath.join(place.home, "AppData", "Roaming"))
      : xdgConfig(place);

const mcpServersPath = ["mcpServers", serverName];

const plain = (command: string, args: ReadonlyArray<string>) => ({ command, args: [...args] });
const typed = (command: string, args: ReadonlyArray<string>) => ({
  type: "stdio",
  command,
  args: [...args],
});

/** Every client, in the order `quire mcp status` lists them. */
export const clients: ReadonlyArray<Client> = [
  {
    name: "claude-code",
    homeVariable: "CLAUDE_CONFIG_DIR",
    label: "Claude Code",
    scopes: ["user", "project"],
    // user: the top-level mcpServers of ~/.claude.json, or $CLAUDE_CONFIG_DIR/.claude.json
    // when that is set (Claude Code then reads only that one); project: .mcp.json at the
    // project root.
    target: (scope, place) => ({
      path:
        scope === "user"
          ? NodePath.join(absoluteEnv(place, "CLAUDE_CONFIG_DIR") ?? place.home, ".claude.json")
          : NodePath.join(place.cwd, ".mcp.json"),
      format: "json",
      entryPath: mcpServersPath,
    }),
    entry: typed,
  },
  {
    name: "codex",
    homeVariable: "CODEX_HOME",
    label: "Codex",
    scopes: ["user", "project"],
    // $CODEX_HOME/config.toml (default ~/.codex); a project's .codex/config.toml (trusted projects).
    target: (scope, place) => ({
      path:
        scope === "user"
          ? NodePath.join(
              absoluteEnv(place, "CODEX_HOME") ?? NodePath.join(place.home, ".codex"),
              "config.toml",
            )
          : NodePath.join(place.cwd, ".codex", "config.toml"),
      format: "toml",
      entryPath: ["mcp_servers", serverName],
    }),
    entry: plain,
  },
  {
    name: "gemini",
    homeVariable: "GEMINI_CLI_HOME",
    label: "Gemini CLI",
    scopes: ["user", "project"],
    // Gemini CLI takes $GEMINI_CLI_HOME, when set, as the home its .gemini directory is in.
    target: (scope, place) => ({
      path: NodePath.join(
        scope === "user" ? (absoluteEnv(place, "GEMINI_CLI_HOME") ?? place.home) : place.cwd,
        ".gemini",
        "settings.json",
      ),
      format: "json",
      entryPath: mcpServersPath,
    }),
    entry: plain,
  },
  {
    name: "cursor",
    label: "Cursor",
    scopes: ["user", "project"],
    target: (scope, place) => ({
      path: NodePath.join(scope === "user" ? place.home : place.cwd, ".cursor", "mcp.json"),
      format: "json",
      entryPath: mcpServersPath,
    }),
    entry: plain,
  },
  {
    name: "vscode",
    label: "VS Code",
    scopes: ["user", "project"],
    // The user profile's mcp.json, or the workspace's .vscode/mcp.json; servers live under "servers".
    target: (scope, place) => ({
      path:
        scope === "user"
          ? NodePath.join(appData(place), "Code", "User", "mcp.json")
          : NodePath.join(place.cwd, ".vscode", "mcp.json"),
      format: "json",
      entryPath: ["servers", serverName],
    }),
    entry: typed,
  },
  {
    name: "claude-desktop",
    label: "Claude Desktop",
    scopes: ["user"],
    target: (_scope, place) => ({
      path: NodePath.join(appData(place), "Claude", "claude_desktop_config.json"),
      format: "json",
      entryPath: mcpServersPath,
    }),
    entry: plain,
  },
];

/** The client named `name`, if it is one. */
export const clientNamed = (name: string): Client | undefined =>
  clients.find((client) => client.name === name);
