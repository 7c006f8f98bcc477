/**
 * The ConfigFiles node adapter against a real temporary directory: the backup is a new
 * file renamed into place (a symlink planted at the backup path is replaced, never
 * written through), no temporary file is left after a failure, a file that is not UTF-8
 * is refused rather than decoded with replacement characters, a write by another
 * program after the first check makes the replacement fail with `CHANGED`, and two
 * replacements of one file take turns through a lock file beside it.
 */
import { spawn, spawnSync } from "node:child_process";
import {
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { hostname, tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { Effect, Either, Fiber } from "effect";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeNodeConfigFiles, nodeConfigFiles } from "../../src/adapters/nodeConfigFiles.js";
import type { ConfigFileError } from "../../src/ports/ConfigFiles.js";
import { assertBuilt } from "../helpers/cli.js";

let root: string;
beforeEach(() => {
  root = realpathSync(mkdtempSync(path.join(tmpdir(), "quire-config-files-")));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const run = <A>(effect: Effect.Effect<A, ConfigFileError>): Promise<A> => Effect.runPromise(effect);
const runEither = <A>(effect: Effect.Effect<A, ConfigFileError>) =>
  Effect.runPromise(Effect.either(effect));
const failure = async <A>(effect: Effect.Effect<A, ConfigFileError>): Promise<ConfigFileError> => {
  const result = await runEither(effect);
  if (Either.isRight(result)) throw new Error("expected a failure");
  return result.left;
};

/** Temporary files and lock files left in `directory` (there must be none). */
const strays = (directory: string): ReadonlyArray<string> =>
  readdirSync(directory).filter((name) => /\.quire-(?:[0-9a-f]+\.tmp|lock)$/.test(name));

describe("the backup", () => {
  it("replaces a symlink at the backup path instead of writing where it points", async () => {
    const victim = path.join(root, "victim");
    writeFileSync(victim, "orig\n");
    const config = path.join(root, ".mcp.json");
    writeFileSync(config, "{}\n");
    const backup = `${config}.quire.bak`;
    symlinkSync(victim, backup);
    await run(
      nodeConfigFiles.replace(config, '{"a": 1}\n', { expected: "{}\n", backupPath: backup }),
    );
    expect(readFileSync(victim, "utf8")).toBe("orig\n");
    expect(lstatSync(backup).isSymbolicLink()).toBe(false);
    expect(readFileSync(backup, "utf8")).toBe("{}\n");
    expect(readFileSync(config, "utf8")).toBe('{"a": 1}\n');
    expect(strays(root)).toEqual([]);
  });

  it("a dangling symlink at the backup path creates nothing where it points", async () => {
    const elsewhere = path.join(root, "elsewhere", "file");
    const config = path.join(root, "config.json");
    writeFileSync(config, "{}\n");
    const backup = `${config}.quire.bak`;
    symlinkSync(elsewhere, backup);
    await run(nodeConfigFiles.replace(config, "{ }\n", { expected: "{}\n", backupPath: backup }));
    expect(existsSync(path.dirname(elsewhere))).toBe(false);
    expect(readFileSync(backup, "utf8")).toBe("{}\n");
  });

  it("keeps the file's permission bits and replaces an older backup", async () => {
    const config = path.join(root, "config.json");
    writeFileSync(config, "{}\n", { mode: 0o640 });
    const backup = `${config}.quire.bak`;
    writeFileSync(backup, "old backup\n", { mode: 0o644 });
    await run(nodeConfigFiles.replace(config, "{ }\n", { expected: "{}\n", backupPath: backup }));
    expect(readFileSync(backup, "utf8")).toBe("{}\n");
    expect(statSync(backup).mode & 0o777).toBe(0o640);
  });

  it("a directory at the backup path fails naming the backup path, writing nothing", async () => {
    const config = path.join(root, "config.json");
    writeFileSync(config, "{}\n");
    const backup = `${config}.quire.bak`;
    mkdirSync(backup);
    const error = await failure(
      nodeConfigFiles.replace(config, "{ }\n", { expected: "{}\n", backupPath: backup }),
    );
    expect(error.reason).toBe("IO");
    expect(error.path).toBe(backup);
    expect(error.message).toBe(
      `cannot write the backup ${backup}: EISDIR: it is a directory; move it away (quire keeps the previous file there) and run it again`,
    );
    expect(readFileSync(config, "utf8")).toBe("{}\n");
    expect(statSync(backup).isDirectory()).toBe(true);
    expect(strays(root)).toEqual([]);
  });
});

describe("a write that fails", () => {
  // A process whose file size limit is 1 KiB (and that ignores SIGXFSZ, as the shell
  // passes it on) gets EFBIG for a larger write: a full disk without a small file system.
  // The compiled adapter (npm run build), which a child process can import.
  const adapter = fileURLToPath(
    new URL("../../dist/src/adapters/nodeConfigFiles.js", import.meta.url),
  );
  const limited = (config: string, text: string) =>
    spawnSync(
      "bash",
      [
        "-c",
        'ulimit -f 1; trap "" XFSZ; exec "$0" --input-type=module -e "$1" "$2" "$3"',
        process.execPath,
        `const { nodeConfigFiles } = await import(${JSON.stringify(adapter)});
const { Effect } = await import("effect");
const [config, text] = process.argv.slice(-2);
const result = await Effect.runPromise(Effect.either(nodeConfigFiles.replace(config, text, { expected: undefined, backupPath: config + ".quire.bak" })));
process.stdout.write(JSON.stringify(result._tag === "Left" ? result.left.message : "written"));`,
        config,
        text,
      ],
      { encoding: "utf8" },
    );

  it("removes its temporary file", () => {
    assertBuilt();
    const config = path.join(root, "config.json");
    const result = limited(config, `{"padding": "${"x".repeat(4096)}"}\n`);
    expect(result.stderr).toBe("");
    expect(JSON.parse(result.stdout)).toMatch(/^cannot write .*config\.json: EFBIG/);
    expect(existsSync(config)).toBe(false);
    expect(strays(root)).toEqual([]);
  });
});

describe("a file that is not UTF-8", () => {
  it("is refused by read, naming what to do, and by replace, writing nothing", async () => {
    const config = path.join(root, "config.toml");
    const latin1 = Buffer.from('name = "caf\xe9"\n', "latin1");
    writeFileSync(config, latin1);
    const read = await failure(nodeConfigFiles.read(config));
    expect(read.reason).toBe("REFUSED");
    expect(read.message).toContain("it is not UTF-8 text");
    expect(read.message).toContain("convert it to UTF-8");
    const replaced = await runEither(
      nodeConfigFiles.replace(config, "x = 1\n", {
        expected: 'name = "caf\uFFFD"\n',
        backupPath: `${config}.quire.bak`,
      }),
    );
    expect(Either.isLeft(replaced) && replaced.left.reason).toBe("REFUSED");
    expect(readFileSync(config)).toEqual(latin1);
    expect(existsSync(`${config}.quire.bak`)).toBe(false);
  });

  it("UTF-8 text, with a byte order mark, is read as it is", async () => {
    const config = path.join(root, "config.json");
    writeFileSync(config, '\uFEFF{"caf\u00e9": "\u{1F600}"}\n');
    expect(await run(nodeConfigFiles.read(config))).toBe('\uFEFF{"caf\u00e9": "\u{1F600}"}\n');
  });
});

describe("another program writing the file during a replacement", () => {
  it("makes it fail with CHANGED after the replacement is written, leaving the other write and no temporary file", async () => {
    const config = path.join(root, "config.json");
    writeFileSync(config, "{}\n");
    const files = makeNodeConfigFiles({
      beforeLastCheck: async (target) => {
        // Its temporary file, and its lock (the other program does not take it).
        expect(strays(root).filter((name) => name.endsWith(".tmp"))).toHaveLength(1);
        expect(existsSync(`${target}.quire-lock`)).toBe(true);
        writeFileSync(target, '{"theirs": 1}\n');
      },
    });
    const result = await runEither(
      files.replace(config, '{"ours": 1}\n', {
        expected: "{}\n",
        backupPath: `${config}.quire.bak`,
      }),
    );
    if (Either.isRight(result)) throw new Error("expected a failure");
    expect(result.left.reason).toBe("CHANGED");
    expect(readFileSync(config, "utf8")).toBe('{"theirs": 1}\n');
    expect(strays(root)).toEqual([]);
  });

  it("a file created meanwhile counts as a change too", async () => {
    const config = path.join(root, "new.json");
    const files = makeNodeConfigFiles({
      beforeLastCheck: async (target) => writeFileSync(target, "{}\n"),
    });
    const result = await runEither(
      files.replace(config, '{"ours": 1}\n', {
        expected: undefined,
        backupPath: `${config}.quire.bak`,
      }),
    );
    expect(Either.isLeft(result) && result.left.reason).toBe("CHANGED");
    expect(readFileSync(config, "utf8")).toBe("{}\n");
    expect(strays(root)).toEqual([]);
  });
});

describe("temporary files a killed edit left", () => {
  it("are removed by a later edit once an hour old; younger ones, other names and links stay", async () => {
    const config = path.join(root, ".mcp.json");
    writeFileSync(config, "{}\n");
    // writeTemporary's names: "." + the file's name + ".quire-" + 12 hex digits + ".tmp".
    const stale = path.join(root, "..mcp.json.quire-0123456789ab.tmp");
    const staleBackup = path.join(root, "..mcp.json.quire.bak.quire-ba9876543210.tmp");
    const young = path.join(root, "..mcp.json.quire-aaaaaaaaaaaa.tmp");
    const otherFile = path.join(root, ".other.json.quire-0123456789ab.tmp");
    const lookAlike = path.join(root, "..mcp.json.quire-0123456789ab.tmp.keep");
    const victim = path.join(root, "victim");
    const link = path.join(root, "..mcp.json.quire-bbbbbbbbbbbb.tmp");
    for (const file of [stale, staleBackup, young, otherFile, lookAlike, victim])
      writeFileSync(file, "x\n");
    symlinkSync(victim, link);
    const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
    for (const file of [stale, staleBackup, otherFile, lookAlike, victim])
      utimesSync(file, twoHoursAgo, twoHoursAgo);
    await run(
      nodeConfigFiles.replace(config, '{"a": 1}\n', {
        expected: "{}\n",
        backupPath: `${config}.quire.bak`,
      }),
    );
    expect(existsSync(stale)).toBe(false);
    expect(existsSync(staleBackup)).toBe(false);
    for (const kept of [young, otherFile, lookAlike, victim]) expect(existsSync(kept)).toBe(true);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(config, "utf8")).toBe('{"a": 1}\n');
  });
});

describe("where a file may be edited (a placement)", () => {
  it("a home directory that does not exist is refused, not created", async () => {
    const home = path.join(root, "no-such-home", "deeper");
    const config = path.join(home, ".cursor", "mcp.json");
    const placement = { within: home, confined: false };
    for (const refused of [
      await failure(nodeConfigFiles.editable(config, placement)),
      await failure(
        nodeConfigFiles.replace(config, "{}\n", {
          expected: undefined,
          backupPath: `${config}.quire.bak`,
          placement,
        }),
      ),
    ]) {
      expect(refused.reason).toBe("REFUSED");
      expect(refused.message).toContain(`${home} does not exist`);
    }
    expect(existsSync(path.join(root, "no-such-home"))).toBe(false);
    // Below an existing home, the client's directories are created as ever.
    mkdirSync(home, { recursive: true });
    await run(
      nodeConfigFiles.replace(config, "{}\n", {
        expected: undefined,
        backupPath: `${config}.quire.bak`,
        placement,
      }),
    );
    expect(readFileSync(config, "utf8")).toBe("{}\n");
  });

  it("a project's file that leads out of the project, by a link to it or on its way, is refused; nothing is written", async () => {
    const home = path.join(root, "home");
    const project = path.join(root, "repo");
    mkdirSync(path.join(home, ".gemini"), { recursive: true });
    mkdirSync(project);
    const userFile = path.join(home, ".claude.json");
    writeFileSync(userFile, '{"token": "t"}\n');
    const placement = { within: project, confined: true };
    // The repository's .mcp.json is a link to the user's file...
    const planted = path.join(project, ".mcp.json");
    symlinkSync("../home/.claude.json", planted);
    // ...and its .gemini directory a link to the user's (the file itself missing).
    symlinkSync(path.join(home, ".gemini"), path.join(project, ".gemini"));
    const viaDirectory = path.join(project, ".gemini", "settings.json");
    for (const config of [planted, viaDirectory]) {
      const before = existsSync(config) ? readFileSync(config, "utf8") : undefined;
      const refused = await failure(
        nodeConfigFiles.replace(config, "{}\n", {
          expected: before,
          backupPath: `${config}.quire.bak`,
          placement,
        }),
      );
      expect(refused.reason).toBe("REFUSED");
      expect(refused.message).toContain(`outside ${project}`);
      expect((await failure(nodeConfigFiles.editable(config, placement))).reason).toBe("REFUSED");
    }
    expect(readFileSync(userFile, "utf8")).toBe('{"token": "t"}\n');
    expect(readdirSync(project).sort()).toEqual([".gemini", ".mcp.json"]);
    expect(readdirSync(path.join(home, ".gemini"))).toEqual([]);
    // A link that stays inside the project is followed.
    rmSync(planted);
    writeFileSync(path.join(project, "shared.json"), "{}\n");
    symlinkSync("shared.json", planted);
    await run(
      nodeConfigFiles.replace(planted, '{"a": 1}\n', {
        expected: "{}\n",
        backupPath: `${planted}.quire.bak`,
        placement,
      }),
    );
    expect(readFileSync(path.join(project, "shared.json"), "utf8")).toBe('{"a": 1}\n');
  });
});

describe("the owner of what an edit writes", () => {
  const asRoot = process.getuid?.() === 0;
  it(
    asRoot
      ? "run as root, is the owner of the file replaced, or of the directory a new one is made in"
      : "run as a user, is that user",
    async () => {
      const home = path.join(root, "home");
      mkdirSync(home);
      const config = path.join(home, ".claude.json");
      writeFileSync(config, "{}\n", { mode: 0o600 });
      // A user's home and settings (as root, another user's; else the user's own).
      const user = asRoot
        ? { uid: 1234, gid: 2345 }
        : { uid: statSync(home).uid, gid: statSync(home).gid };
      if (asRoot) {
        chownSync(home, user.uid, user.gid);
        chownSync(config, user.uid, user.gid);
      }
      const backup = `${config}.quire.bak`;
      await run(
        nodeConfigFiles.replace(config, '{"a": 1}\n', { expected: "{}\n", backupPath: backup }),
      );
      const nested = path.join(home, ".config", "Code", "User", "mcp.json");
      await run(
        nodeConfigFiles.replace(nested, "{}\n", {
          expected: undefined,
          backupPath: `${nested}.quire.bak`,
        }),
      );
      for (const made of [
        config,
        backup,
        nested,
        path.join(home, ".config"),
        path.join(home, ".config", "Code"),
        path.join(home, ".config", "Code", "User"),
      ]) {
        const stats = statSync(made);
        expect({ made, uid: stats.uid, gid: stats.gid }).toEqual({ made, ...user });
      }
      expect(statSync(config).mode & 0o777).toBe(0o600);
    },
  );
});

describe("two replacements of one file at once", () => {
  it("take turns: the second waits, finds the first one's edit (CHANGED) and, read again, keeps both", async () => {
    // Two names for one file, as Cursor's and VS Code's: the lock is beside the real file.
    const config = path.join(root, "mcp.json");
    writeFileSync(config, "{}\n");
    const link = path.join(root, "cursor.json");
    symlinkSync(config, link);
    let second: Promise<Either.Either<void, ConfigFileError>> | undefined;
    let lockHeld = false;
    const files = makeNodeConfigFiles({
      // Between the first one's last check and its rename, the second one runs; without
      // a lock it passed its own checks (the file still held "{}") and was renamed over.
      beforeRename: async () => {
        lockHeld = existsSync(`${config}.quire-lock`);
        second = runEither(
          nodeConfigFiles.replace(link, '{"b": 1}\n', {
            expected: "{}\n",
            backupPath: `${link}.quire.bak`,
          }),
        );
        // Long enough for the second one to finish when nothing makes it wait.
        await Promise.race([second, new Promise((resolve) => setTimeout(resolve, 1000))]);
      },
    });
    await run(
      files.replace(config, '{"a": 1}\n', { expected: "{}\n", backupPath: `${config}.quire.bak` }),
    );
    // Both said nothing else: without the lock, the second one succeeded too, and its
    // edit was gone ("{\"a\": 1}" renamed over "{\"b\": 1}").
    const result = await second;
    expect({ second: result, file: readFileSync(config, "utf8") }).toMatchObject({
      second: { _tag: "Left", left: { reason: "CHANGED" } },
      file: '{"a": 1}\n',
    });
    expect(lockHeld).toBe(true);
    // The second one's retry, as `quire mcp install` does: read again, edit again.
    const before = await run(nodeConfigFiles.read(link));
    await run(
      nodeConfigFiles.replace(link, '{"a": 1, "b": 1}\n', {
        expected: before,
        backupPath: `${link}.quire.bak`,
      }),
    );
    expect(readFileSync(config, "utf8")).toBe('{"a": 1, "b": 1}\n');
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(strays(root)).toEqual([]);
  });
});

describe("a lock file another quire left", () => {
  /** A lock file at `config`'s lock path naming `pid` on this host. */
  const plantLock = (config: string, pid: number): string => {
    const lock = `${config}.quire-lock`;
    writeFileSync(lock, JSON.stringify({ pid, host: hostname(), token: "0".repeat(32) }));
    return lock;
  };

  it("is taken over when its holder is dead, and removed afterwards", async () => {
    const config = path.join(root, "mcp.json");
    writeFileSync(config, "{}\n");
    const link = path.join(root, "cursor.json");
    symlinkSync(config, link);
    // A pid that was a process a moment ago and is none now.
    const dead = spawnSync(process.execPath, ["-e", ""]).pid;
    if (dead === undefined) throw new Error("no child pid");
    plantLock(config, dead);
    await run(
      nodeConfigFiles.replace(link, '{"a": 1}\n', {
        expected: "{}\n",
        backupPath: `${link}.quire.bak`,
      }),
    );
    expect(readFileSync(config, "utf8")).toBe('{"a": 1}\n');
    expect(strays(root)).toEqual([]);
  });

  it("is waited for while its holder lives, then the edit fails saying another quire is editing the file, writing nothing", async () => {
    const config = path.join(root, "mcp.json");
    writeFileSync(config, "{}\n");
    const link = path.join(root, "cursor.json");
    symlinkSync(config, link);
    const holder = spawn("sleep", ["30"], { stdio: "ignore" });
    try {
      if (holder.pid === undefined) throw new Error("no child pid");
      const lock = plantLock(config, holder.pid);
      const planted = readFileSync(lock, "utf8");
      const files = makeNodeConfigFiles({ lockWaitMs: 400 });
      const started = Date.now();
      const error = await failure(
        files.replace(link, '{"a": 1}\n', { expected: "{}\n", backupPath: `${link}.quire.bak` }),
      );
      expect(Date.now() - started).toBeGreaterThanOrEqual(400);
      expect(error.reason).toBe("IO");
      expect(error.path).toBe(link);
      expect(error.message).toBe(
        `cannot write ${link}: another quire (pid ${holder.pid} on ${hostname()}) is editing it and did not finish within 0.4 s; run the command again (if no quire is running, remove ${lock})`,
      );
      expect(readFileSync(config, "utf8")).toBe("{}\n");
      expect(existsSync(`${link}.quire.bak`)).toBe(false);
      // Not ours to remove.
      expect(readFileSync(lock, "utf8")).toBe(planted);
      expect(readdirSync(root).sort()).toEqual(["cursor.json", "mcp.json", "mcp.json.quire-lock"]);
    } finally {
      holder.kill();
    }
  });

  it("is taken over once a few minutes old, whoever its holder; so is a set-aside copy a killed takeover left", async () => {
    const config = path.join(root, "mcp.json");
    writeFileSync(config, "{}\n");
    const holder = spawn("sleep", ["30"], { stdio: "ignore" });
    try {
      if (holder.pid === undefined) throw new Error("no child pid");
      const lock = plantLock(config, holder.pid);
      const setAside = `${lock}.stale-0123456789ab`;
      const youngSetAside = `${lock}.stale-ba9876543210`;
      writeFileSync(setAside, "{}");
      writeFileSync(youngSetAside, "{}");
      const tenMinutesAgo = new Date(Date.now() - 10 * 60 * 1000);
      for (const file of [lock, setAside]) utimesSync(file, tenMinutesAgo, tenMinutesAgo);
      await run(
        makeNodeConfigFiles({ lockWaitMs: 400 }).replace(config, '{"a": 1}\n', {
          expected: "{}\n",
          backupPath: `${config}.quire.bak`,
        }),
      );
      expect(readFileSync(config, "utf8")).toBe('{"a": 1}\n');
      expect(existsSync(lock)).toBe(false);
      expect(existsSync(setAside)).toBe(false);
      expect(existsSync(youngSetAside)).toBe(true);
    } finally {
      holder.kill();
    }
  });
});

describe("the lock of an edit interrupted part way", () => {
  it("is held until the edit's rename is done: an interruption cannot let another quire in before it", async () => {
    const config = path.join(root, "mcp.json");
    writeFileSync(config, "{}\n");
    const lockPath = `${config}.quire-lock`;
    let heldAtRename: boolean | undefined;
    const files = makeNodeConfigFiles({
      beforeLastCheck: () => new Promise((resolve) => setTimeout(resolve, 300)),
      beforeRename: async () => {
        heldAtRename = existsSync(lockPath);
      },
    });
    const fiber = Effect.runFork(
      files.replace(config, '{"a": 1}\n', { expected: "{}\n", backupPath: `${config}.quire.bak` }),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    await Effect.runPromise(Fiber.interrupt(fiber));
    expect(heldAtRename).toBe(true);
    expect(readFileSync(config, "utf8")).toBe('{"a": 1}\n');
    expect(existsSync(lockPath)).toBe(false);
  });

  it(
    process.getuid?.() === 0
      ? "taken by root in a user's directory, belongs to that user (who must be able to read it)"
      : "taken by a user, belongs to that user",
    async () => {
      const config = path.join(root, "mcp.json");
      writeFileSync(config, "{}\n");
      const user =
        process.getuid?.() === 0
          ? { uid: 1234, gid: 2345 }
          : { uid: statSync(config).uid, gid: statSync(config).gid };
      chownSync(config, user.uid, user.gid);
      let owner: { uid: number; gid: number } | undefined;
      await run(
        makeNodeConfigFiles({
          beforeRename: async () => {
            const stats = statSync(`${config}.quire-lock`);
            owner = { uid: stats.uid, gid: stats.gid };
          },
        }).replace(config, '{"a": 1}\n', { expected: "{}\n", backupPath: `${config}.quire.bak` }),
      );
      expect(owner).toEqual(user);
    },
  );
});
