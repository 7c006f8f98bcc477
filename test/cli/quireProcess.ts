/**
 * Runs the built executable (`node bin/quire.js …`) as a real child process with an
 * isolated environment. `npm test` builds first; run `npm run build` before running
 * these files alone.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const binPath = path.join(repoRoot, "bin", "quire.js");
export const packageVersion = (
  JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8")) as { version: string }
).version;

/** Fails fast with a clear message when the build is missing. */
export const assertBuilt = () => {
  if (!existsSync(path.join(repoRoot, "dist", "src", "app", "cli", "main.js"))) {
    throw new Error("dist/ is missing: run `npm run build` (npm test does it) before these tests");
  }
};

/** A scratch directory with home, XDG dirs and TMPDIR inside it, removed by `cleanup`. */
export interface Sandbox {
  readonly root: string;
  readonly env: Record<string, string>;
  readonly store: string;
  readonly privateRoot: string;
  /** An empty directory to run pull/commit in (the default workspace root). */
  readonly workspace: string;
  readonly cleanup: () => void;
}

export const makeSandbox = (): Sandbox => {
  const root = mkdtempSync(path.join(tmpdir(), "quire-cli-test-"));
  for (const dir of ["home", "tmp", "ws"]) mkdirSync(path.join(root, dir));
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] =>
        entry[1] !== undefined &&
        !/^(QUIRE_|AWS_|LOG_LEVEL$|NO_COLOR$|XDG_|TMPDIR$|HOME$|CODEX_HOME$|CLAUDE_CONFIG_DIR$|GEMINI_CLI_HOME$)/.test(
          entry[0],
        ),
    ),
  );
  return {
    root,
    store: path.join(root, "store"),
    privateRoot: path.join(root, "private"),
    workspace: path.join(root, "ws"),
    env: {
      ...inherited,
      HOME: path.join(root, "home"),
      XDG_DATA_HOME: path.join(root, "data"),
      XDG_CACHE_HOME: path.join(root, "cache"),
      TMPDIR: path.join(root, "tmp"),
    },
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
};

export interface RunResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `quire <args>` to completion (killed after 150 s: a hang fails its test, never outlives it). */
export const runQuire = (
  args: ReadonlyArray<string>,
  options: { readonly cwd: string; readonly env: Record<string, string>; readonly input?: string },
): Promise<RunResult> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [binPath, ...args], {
      cwd: options.cwd,
      env: options.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    // A command that hangs fails its test by the test's timeout; it must not outlive it
    // by much, spinning (a hang under TMPDIR=/proc once kept a CPU busy for the rest of
    // CI's run). No test waits for one call longer than this.
    const bound = setTimeout(() => child.kill("SIGKILL"), 150_000);
    bound.unref();
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(bound);
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin.end(options.input ?? "");
  });
