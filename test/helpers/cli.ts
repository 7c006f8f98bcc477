/**
 * Black-box harness for the `quire` CLI: runs the built executable (`node bin/quire.js`)
 * as real child processes against a real temp directory and file store, and checks
 * EVERY run's stdout and stderr for leaks (40/64-hex ids, store keys, the store
 * directory, the private root, internal UUIDs) and, off a TTY, for ANSI escapes —
 * so Done-when 6 of issue 2 is enforced by every scenario, not by one test.
 *
 * `npm test` builds first; run `npm run build` before running these files alone.
 */
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root and the launcher every run goes through. */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const binPath = path.join(repoRoot, "bin", "quire.js");

/** Throws a clear message when `dist/` is missing (tests would otherwise fail obscurely). */
export const assertBuilt = (): void => {
  const compiled = path.join(repoRoot, "dist", "src", "app", "cli", "main.js");
  const bundled = path.join(repoRoot, "dist", "cli", "main.js");
  if (!existsSync(compiled) || !existsSync(bundled)) {
    throw new Error("dist/ is missing: run `npm run build` (npm test does it) before these tests");
  }
  // bin/quire.js runs the bundle: one older than any compiled module would test old code.
  if (statSync(bundled).mtimeMs < newestModuleMs(path.join(repoRoot, "dist", "src"))) {
    throw new Error(
      "dist/cli is older than dist/src: run `npm run build` (not a bare tsc) before these tests",
    );
  }
};

/** The latest modification time of the `.js` files below `dir`. */
const newestModuleMs = (dir: string): number => {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith(".js"))
      newest = Math.max(newest, statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
};

/**
 * One isolated world: a file store, a private root and a workspace directory (the
 * default cwd, hence the default workspace root) below a fresh temp directory, with
 * HOME, XDG dirs and TMPDIR inside it so no run touches the real user's data.
 */
export interface World {
  readonly root: string;
  readonly store: string;
  readonly privateRoot: string;
  /** The workspace root: the default cwd of every run; working copies live below it. */
  readonly ws: string;
  /**
   * The child environment: selects the store and private root through QUIRE_* variables
   * and sets LOG_LEVEL=debug, so the leak check covers every log record as well.
   */
  readonly env: Readonly<Record<string, string>>;
  /** The absolute path of working copy `name` below `ws`. */
  readonly copy: (name: string) => string;
  readonly cleanup: () => void;
}

const inheritedEnv = (): Record<string, string> =>
  Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] =>
        entry[1] !== undefined &&
        !/^(QUIRE_|AWS_|LOG_LEVEL$|NO_COLOR$|FORCE_COLOR$|XDG_|TMPDIR$|HOME$)/.test(entry[0]),
    ),
  );

/** Creates a fresh world; call `cleanup` when done. */
export const makeWorld = (): World => {
  // realpath: /tmp may be a symlink, and outputs would name the canonical form.
  const root = realpathSync(mkdtempSync(path.join(tmpdir(), "quire-scn-")));
  for (const dir of ["ws", "home", "tmp"]) mkdirSync(path.join(root, dir));
  const store = path.join(root, "store");
  const privateRoot = path.join(root, "private");
  const ws = path.join(root, "ws");
  return {
    root,
    store,
    privateRoot,
    ws,
    env: {
      ...inheritedEnv(),
      HOME: path.join(root, "home"),
      XDG_DATA_HOME: path.join(root, "data"),
      XDG_CACHE_HOME: path.join(root, "cache"),
      TMPDIR: path.join(root, "tmp"),
      QUIRE_STORE: `file:${store}`,
      QUIRE_PRIVATE_ROOT: privateRoot,
      // Every log record a run can emit is leak-checked too (stderr only; stdout is unaffected).
      LOG_LEVEL: "debug",
    },
    copy: (name) => path.join(ws, name),
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
};

/** The outcome of one CLI run. */
export interface CliResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Options of one run. */
export interface RunOptions {
  /** Working directory (and so the default workspace root); default `world.ws`. */
  readonly cwd?: string;
  /** Extra environment (a value `undefined` removes the variable). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Kill the child and fail after this long (default 45 s): a hang fails, never blocks. */
  readonly timeoutMs?: number;
  /** Run under a pseudo-terminal (`script`), so stdout/stderr are a TTY. */
  readonly tty?: boolean;
}

const ansiEscape = /\u001b\[/;

/**
 * Everything in `text` that must never appear in quire's output (SPEC §2.3, §2.4;
 * issue 2 Done-when 6): hex runs of 40+ characters (git/SHA-1 and SHA-256 ids), UUIDs
 * (publication and probe ids), object-store keys and key fragments, any path inside the
 * file store's directory, and the private root (as given and canonical; anywhere).
 * Returns one description per finding; empty when clean.
 *
 * The store directory itself may be named only by a startup diagnostic
 * (`quire: incompatible store: … store file:<dir> …`, or `store refused access`, `no such
 * bucket`: the probe's failures), which identifies the store the
 * operator configured; paths inside it are keys and never appear.
 */
export const findLeaks = (
  text: string,
  secrets: { readonly store: string; readonly privateRoot: string },
): ReadonlyArray<string> => {
  const found: string[] = [];
  const patterns: ReadonlyArray<readonly [string, RegExp]> = [
    ["a 40+ hex id", /[0-9a-fA-F]{40,}/],
    ["a UUID", /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i],
    ["a store key (packs/)", /(^|[^A-Za-z0-9])packs\//],
    ["a store key (probe/)", /(^|[^A-Za-z0-9])probe\//],
    ["a store key (checkpoints/ or increments/)", /(checkpoints|increments)\//],
    ["a pack file name", /[A-Za-z0-9-]\.pack\b/],
    ["a file-store key directory", /current@|objects\//],
    ["a private-state path fragment", /copies\/|state\.json|baseline-\d+/],
  ];
  for (const [what, pattern] of patterns) {
    const match = pattern.exec(text);
    if (match !== null) found.push(`${what}: ${JSON.stringify(match[0])}`);
  }
  const forms = (dir: string): ReadonlyArray<string> =>
    existsSync(dir) ? [...new Set([dir, realpathSync(dir)])] : [dir];
  const escape = (literal: string): string => literal.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  for (const form of forms(secrets.store)) {
    const inside = new RegExp(`${escape(form)}/`);
    const whole = new RegExp(`${escape(form)}(?![A-Za-z0-9._/-])`);
    if (inside.test(text)) found.push(`a path inside the file store: ${form}/…`);
    const outsideStartup = text
      .split("\n")
      .filter(
        (line) => !/^quire: (incompatible store|store refused access|no such bucket): /.test(line),
      )
      .join("\n");
    if (whole.test(outsideStartup)) found.push(`the file store directory: ${form}`);
  }
  for (const form of forms(secrets.privateRoot)) {
    if (new RegExp(`${escape(form)}(?![A-Za-z0-9._-])`).test(text))
      found.push(`the private root: ${form}`);
  }
  return found;
};

const shellQuote = (word: string): string => `'${word.replaceAll("'", `'\\''`)}'`;

/**
 * Runs `quire <args>` in `world` and resolves with its exit status and output. Rejects
 * (failing the test) when the child outlives `timeoutMs`, when the output leaks
 * anything {@link findLeaks} finds, or when a non-TTY run prints an ANSI escape.
 */
export const runCli = (
  world: World,
  args: ReadonlyArray<string>,
  options: RunOptions = {},
): Promise<CliResult> =>
  new Promise((resolve, reject) => {
    const env: Record<string, string> = { ...world.env };
    for (const [name, value] of Object.entries(options.env ?? {})) {
      if (value === undefined) delete env[name];
      else env[name] = value;
    }
    const command = [process.execPath, binPath, ...args];
    const child =
      options.tty === true
        ? spawn("script", ["-qec", command.map(shellQuote).join(" "), "/dev/null"], {
            cwd: options.cwd ?? world.ws,
            env,
            stdio: ["pipe", "pipe", "pipe"],
          })
        : spawn(process.execPath, command.slice(1), {
            cwd: options.cwd ?? world.ws,
            env,
            stdio: ["pipe", "pipe", "pipe"],
          });
    const timeoutMs = options.timeoutMs ?? 45_000;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, timeoutMs);
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const shown = `quire ${args.join(" ")}`;
      if (timedOut) {
        reject(new Error(`${shown} did not exit within ${timeoutMs} ms (killed)`));
        return;
      }
      const leaks = findLeaks(stdout + stderr, world);
      if (leaks.length > 0) {
        reject(
          new Error(
            `${shown} leaked ${leaks.join("; ")}\n--- stdout ---\n${stdout}--- stderr ---\n${stderr}`,
          ),
        );
        return;
      }
      if (options.tty !== true && ansiEscape.test(stdout + stderr)) {
        reject(new Error(`${shown} printed ANSI escapes off a TTY:\n${stdout}${stderr}`));
        return;
      }
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin.end();
  });

/** `quire pull <copy>` (a name below `ws`, or any path). */
export const pull = (world: World, copy: string, options?: RunOptions): Promise<CliResult> =>
  runCli(world, ["pull", copy], options);

/** `quire commit <copy> -m <message>`. */
export const commit = (
  world: World,
  copy: string,
  message = "scenario edit",
  options?: RunOptions,
): Promise<CliResult> => runCli(world, ["commit", copy, "-m", message], options);

/** One line of a success report. */
export interface FileCount {
  readonly path: string;
  readonly insertions: number;
  readonly deletions: number;
}

const plural = (count: number, one: string, many: string): string =>
  `${count} ${count === 1 ? one : many}`;

/**
 * The exact stdout SPEC §9 prescribes for a success: `OK  generation N`, one
 * `  path  +a -d` line per file (sorted; zero counts omitted, `0` when both are zero),
 * and git's shortstat summary.
 */
export const expectedReport = (generation: number, files: ReadonlyArray<FileCount>): string => {
  const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const lines = [`OK  generation ${generation}`];
  for (const file of sorted) {
    const counts = [
      ...(file.insertions > 0 ? [`+${file.insertions}`] : []),
      ...(file.deletions > 0 ? [`-${file.deletions}`] : []),
    ];
    lines.push(`  ${file.path}  ${counts.length === 0 ? "0" : counts.join(" ")}`);
  }
  const ins = sorted.reduce((sum, file) => sum + file.insertions, 0);
  const del = sorted.reduce((sum, file) => sum + file.deletions, 0);
  if (sorted.length === 0) lines.push("0 files changed");
  else {
    const parts = [plural(sorted.length, "file changed", "files changed")];
    if (ins > 0 || del === 0) parts.push(plural(ins, "insertion(+)", "insertions(+)"));
    if (del > 0 || ins === 0) parts.push(plural(del, "deletion(-)", "deletions(-)"));
    lines.push(parts.join(", "));
  }
  return lines.map((line) => `${line}\n`).join("");
};

/** Parses a success report back into its generation and file lines (throws if malformed). */
export const parseReport = (
  stdout: string,
): { readonly generation: number; readonly files: ReadonlyArray<FileCount> } => {
  const lines = stdout.split("\n");
  const head = /^OK {2}generation (\d+)$/.exec(lines[0] ?? "");
  if (head === null) throw new Error(`not a success report: ${JSON.stringify(stdout)}`);
  const files: FileCount[] = [];
  for (const line of lines.slice(1)) {
    const match = /^ {2}(.+) {2}(?:0|(?:\+(\d+))? ?(?:-(\d+))?)$/.exec(line);
    if (match === null) continue;
    files.push({
      path: match[1] ?? "",
      insertions: Number(match[2] ?? 0),
      deletions: Number(match[3] ?? 0),
    });
  }
  return { generation: Number(head[1]), files };
};

/** Stderr without the structured log records (`ts=… level=…`): the candid error text. */
export const candidLines = (stderr: string): ReadonlyArray<string> =>
  stderr.split("\n").filter((line) => line !== "" && !/^ts=\S+ level=/.test(line));

/** The candid error text's first line, `CODE · REASON` ("" when there is none). */
export const errorHead = (stderr: string): string => {
  const first = candidLines(stderr)[0] ?? "";
  return /^[A-Z_]+ · [A-Z_0-9]+$/.test(first) ? first : "";
};

/** The `file: …` lines of a candid error text, in order. */
export const fileLines = (stderr: string): ReadonlyArray<string> =>
  stderr.split("\n").filter((line) => line.startsWith("file: "));

/** Every file below `dir` (symlinks and special files included, `.git` skipped): path → bytes. */
export const readTree = (dir: string): Map<string, Buffer> => {
  const out = new Map<string, Buffer>();
  const walk = (rel: string): void => {
    for (const name of readdirSync(path.join(dir, rel)).sort()) {
      const child = rel === "" ? name : `${rel}/${name}`;
      const info = lstatSync(path.join(dir, child));
      if (info.isDirectory()) {
        if (name !== ".git") walk(child);
      } else if (info.isFile()) out.set(child, readFileSync(path.join(dir, child)));
      else out.set(child, Buffer.from(`<not a regular file>`));
    }
  };
  walk("");
  return out;
};

/** A stable text form of a tree (path and SHA-256 per line) for equality assertions. */
export const treeDigest = (dir: string): string =>
  [...readTree(dir)]
    .map(([file, bytes]) => `${file} ${createHash("sha256").update(bytes).digest("hex")}`)
    .join("\n");

/**
 * A fingerprint of everything published in the file store: every stored file except the
 * startup probe's keys (`probe/`, written by every process start) and the store's temp
 * directory, with its size and SHA-256. Equal fingerprints = nothing was published.
 */
export const storeFingerprint = (world: World): string => {
  const lines: string[] = [];
  const walk = (rel: string): void => {
    const full = path.join(world.store, rel);
    if (!existsSync(full)) return;
    for (const name of readdirSync(full).sort()) {
      const child = rel === "" ? name : `${rel}/${name}`;
      if (child === "tmp" || child === "objects/probe") continue;
      const info = lstatSync(path.join(world.store, child));
      if (info.isDirectory()) {
        lines.push(`${child}/`);
        walk(child);
      } else {
        const bytes = readFileSync(path.join(world.store, child));
        lines.push(`${child} ${bytes.length} ${createHash("sha256").update(bytes).digest("hex")}`);
      }
    }
  };
  walk("");
  return lines.join("\n");
};

/**
 * The file store's `current` key: its version file names and the newest version's
 * bytes (`undefined` before the first publication).
 */
export const currentVersions = (
  world: World,
): { readonly versions: ReadonlyArray<string>; readonly latest: string | undefined } => {
  const dir = path.join(world.store, "objects", "current@");
  if (!existsSync(dir)) return { versions: [], latest: undefined };
  const versions = readdirSync(dir)
    .filter((name) => /^\d+$/.test(name))
    .sort((a, b) => Number(a) - Number(b));
  const last = versions[versions.length - 1];
  return {
    versions,
    latest: last === undefined ? undefined : readFileSync(path.join(dir, last), "utf8"),
  };
};

/** Writes `content` to `file` below `dir`, creating parent directories. */
export const write = (dir: string, file: string, content: string | Uint8Array): void => {
  const full = path.join(dir, ...file.split("/"));
  mkdirSync(path.dirname(full), { recursive: true });
  writeFileSync(full, content);
};

/** Reads `file` below `dir` as UTF-8. */
export const read = (dir: string, file: string): string =>
  readFileSync(path.join(dir, ...file.split("/")), "utf8");

/**
 * What `git diff --no-index --numstat` says about `before` → `after` (both as file
 * contents): the reference the CLI's per-file counts must agree with (SPEC §6.4).
 */
export const gitNumstat = (
  before: string,
  after: string,
): { readonly insertions: number; readonly deletions: number } => {
  const dir = mkdtempSync(path.join(tmpdir(), "quire-numstat-"));
  try {
    writeFileSync(path.join(dir, "before"), before);
    writeFileSync(path.join(dir, "after"), after);
    const result = spawnSync("git", ["diff", "--no-index", "--numstat", "before", "after"], {
      cwd: dir,
      encoding: "utf8",
    });
    const match = /^(\d+)\t(\d+)\t/.exec(result.stdout);
    if (match === null) throw new Error(`unexpected git numstat output: ${result.stdout}`);
    return { insertions: Number(match[1]), deletions: Number(match[2]) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

/**
 * `git merge-file -p -L local -L base -L remote` of three texts: the merged text and
 * whether git reported conflicts.
 */
export const gitMergeFile = (
  local: string,
  base: string,
  remote: string,
): { readonly text: string; readonly conflicted: boolean } => {
  const dir = mkdtempSync(path.join(tmpdir(), "quire-mergefile-"));
  try {
    writeFileSync(path.join(dir, "local"), local);
    writeFileSync(path.join(dir, "base"), base);
    writeFileSync(path.join(dir, "remote"), remote);
    const result = spawnSync(
      "git",
      ["merge-file", "-p", "-L", "local", "-L", "base", "-L", "remote", "local", "base", "remote"],
      { cwd: dir, encoding: "utf8" },
    );
    if (result.status === null || result.status < 0) throw new Error("git merge-file failed");
    return { text: result.stdout, conflicted: result.status > 0 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};
