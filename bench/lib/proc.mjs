// Child processes: timed whole-process runs and peak RSS via /usr/bin/time.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";

const TIME = "/usr/bin/time";
/** Whether GNU time is available to measure a child's peak RSS. */
export const hasGnuTime = existsSync(TIME);

/**
 * Runs `command args` to completion. Resolves `{ code, stdout, stderr, ms, maxRssKb }`;
 * `ms` is the wall time from spawn to exit, `maxRssKb` the child's peak RSS (when
 * `measureRss` and GNU time exist; the time wrapper itself is a ~2 MB process that
 * is not counted). Rejects on a non-zero exit unless `allowFailure`.
 */
export const run = (command, args, options = {}) =>
  new Promise((resolve, reject) => {
    const { cwd, env, input, allowFailure = false, measureRss = false } = options;
    const argv =
      measureRss && hasGnuTime ? [TIME, ["-f", "@@maxrss=%M", command, ...args]] : [command, args];
    const start = performance.now();
    const child = spawn(argv[0], argv[1], {
      cwd,
      env: env ?? process.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    const out = [];
    const err = [];
    child.stdout.on("data", (chunk) => out.push(chunk));
    child.stderr.on("data", (chunk) => err.push(chunk));
    child.on("error", reject);
    child.on("close", (code) => {
      const ms = performance.now() - start;
      let stderr = Buffer.concat(err).toString("utf8");
      let maxRssKb = null;
      const match = /@@maxrss=(\d+)\s*$/.exec(stderr);
      if (match) {
        maxRssKb = Number(match[1]);
        stderr = stderr.slice(0, match.index);
      }
      const result = { code, stdout: Buffer.concat(out).toString("utf8"), stderr, ms, maxRssKb };
      if (code !== 0 && !allowFailure) {
        reject(new Error(`${command} ${args.join(" ")} exited ${code}: ${stderr.slice(-2000)}`));
      } else resolve(result);
    });
    if (input !== undefined) child.stdin.end(input);
    else child.stdin.end();
  });

/** `git` with a fixed identity and no user/system config influence. */
export const gitEnv = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_AUTHOR_NAME: "bench",
  GIT_AUTHOR_EMAIL: "bench@example.invalid",
  GIT_COMMITTER_NAME: "bench",
  GIT_COMMITTER_EMAIL: "bench@example.invalid",
  GIT_TERMINAL_PROMPT: "0",
};

/** Runs git in `cwd`; rejects on failure unless `allowFailure`. */
export const git = (cwd, args, options = {}) => run("git", args, { cwd, env: gitEnv, ...options });
