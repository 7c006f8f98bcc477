/**
 * Support for the real-client tests (`npm run test:clients`): pinned client versions,
 * installing them into a cache folder of the repository (`.cache/clients/`, ignored by
 * git, reused within a CI run), installing quire itself from its packed tarball, and
 * running processes with a timeout. A client that cannot be installed fails the test
 * with npm's own words; nothing here skips.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { repoRoot } from "../helpers/cli.js";

/** The clients and the exact versions tested (bump deliberately, one at a time). */
export const pinned = {
  claude: { pkg: "@anthropic-ai/claude-code", version: "2.1.332", bin: "claude" },
  codex: { pkg: "@openai/codex", version: "0.171.0", bin: "codex" },
  gemini: { pkg: "@google/gemini-cli", version: "0.61.0", bin: "gemini" },
  // The Inspector's 1.x line runs on Node 22.7.5+ (2.x wants 22.19+); `--cli` mode.
  inspector: { pkg: "@modelcontextprotocol/inspector", version: "1.0.3", bin: "mcp-inspector" },
} as const;

/** The outcome of one process run. */
export interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `command` to completion (killed after `timeoutMs`), feeding `input` on stdin. */
export const run = (
  command: string,
  args: ReadonlyArray<string>,
  options: {
    readonly cwd: string;
    readonly env: NodeJS.ProcessEnv;
    readonly timeoutMs?: number;
    readonly input?: string;
  },
): Promise<Ran> =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 120_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? "");
  });

const tail = (text: string, lines = 25): string => text.trim().split("\n").slice(-lines).join("\n");

/**
 * Installs `pkg@version` into `.cache/clients/<pkg>@<version>/` unless it is there
 * already, and returns the absolute path of its `bin`. Throws, with npm's output, when
 * npm cannot install it.
 */
export const installClient = async (
  client: (typeof pinned)[keyof typeof pinned],
): Promise<string> => {
  const prefix = path.join(
    repoRoot,
    ".cache",
    "clients",
    `${client.pkg.replace("/", "+")}@${client.version}`,
  );
  const bin = path.join(prefix, "node_modules", ".bin", client.bin);
  if (existsSync(bin)) return bin;
  mkdirSync(prefix, { recursive: true });
  // Asynchronous: a worker blocked for minutes would miss vitest's own messages.
  const npm = await run(
    "npm",
    [
      "install",
      "--prefix",
      prefix,
      "--no-save",
      "--no-package-lock",
      "--no-audit",
      "--no-fund",
      `${client.pkg}@${client.version}`,
    ],
    { cwd: prefix, env: process.env, timeoutMs: 600_000 },
  );
  if (npm.code !== 0 || !existsSync(bin))
    throw new Error(
      `cannot install ${client.pkg}@${client.version} (npm exit ${npm.code}):\n${tail(`${npm.stdout}\n${npm.stderr}`)}`,
    );
  return bin;
};

/** quire installed globally from its tarball into a temporary prefix. */
export interface InstalledQuire {
  readonly prefix: string;
  /** `<prefix>/bin/quire`, the command a person types. */
  readonly bin: string;
  /** What `npm install -g` printed (for the install-script warning check). */
  readonly npmOutput: string;
  readonly tarball: string;
}

/**
 * `npm pack` (of the current build; scripts off, the build is fresh) then
 * `npm install -g --prefix <tmp> <tarball>`, as a person installs from a clone.
 */
export const installQuireFromTarball = async (): Promise<InstalledQuire> => {
  const root = mkdtempSync(path.join(tmpdir(), "quire-clients-pack-"));
  const pack = await run("npm", ["pack", "--ignore-scripts", "--pack-destination", root], {
    cwd: repoRoot,
    env: process.env,
  });
  if (pack.code !== 0) throw new Error(`npm pack failed:\n${tail(pack.stderr)}`);
  const tarball = readdirSync(root).find((name) => name.endsWith(".tgz"));
  if (tarball === undefined) throw new Error("npm pack wrote no tarball");
  const prefix = path.join(root, "global");
  const install = await run(
    "npm",
    ["install", "-g", "--prefix", prefix, "--no-audit", "--no-fund", path.join(root, tarball)],
    { cwd: root, env: process.env, timeoutMs: 600_000 },
  );
  const npmOutput = `${install.stdout}\n${install.stderr}`;
  if (install.code !== 0)
    throw new Error(`npm install -g of the tarball failed:\n${tail(npmOutput)}`);
  return {
    prefix,
    bin: path.join(prefix, "bin", "quire"),
    npmOutput,
    tarball: path.join(root, tarball),
  };
};
