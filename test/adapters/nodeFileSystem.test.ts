import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import * as nodeFs from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest";
import { Effect, Option } from "effect";
import { leftoverTempName, type Expectation, type RootedTree } from "../../src/ports/FileSystem.js";
import { make, mapError } from "../../src/adapters/nodeFileSystem.js";
import { runFileSystemContract, type LockHolder } from "../contract/fileSystemContract.js";
import { runRootedTreeContract, type TreeHost } from "../contract/rootedTreeContract.js";
import { makeDeepChain, removeDeep } from "../helpers/deepChain.js";

const holderScript = fileURLToPath(new URL("./fixtures/fs-lock-holder.mjs", import.meta.url));
const compiledAdapter = fileURLToPath(
  new URL("../../dist/src/adapters/nodeFileSystem.js", import.meta.url),
);

const freshRoot = (): string =>
  nodeFs.realpathSync(nodeFs.mkdtempSync(join(tmpdir(), "quire-fs-")));

/** Starts a child process that takes the lock with the compiled adapter and holds it. */
const spawnLockHolder = (lockPath: string): Promise<LockHolder> => {
  if (!nodeFs.existsSync(compiledAdapter)) {
    throw new Error(`${compiledAdapter} is missing: run \`npm run build\` first`);
  }
  const child: ChildProcess = spawn(process.execPath, [holderScript, lockPath], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return new Promise<LockHolder>((resolve, reject) => {
    let output = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
      if (output.includes("locked\n")) {
        resolve({
          kill: async () => {
            child.kill("SIGKILL");
            await exited;
          },
        });
      }
    });
    child.once("exit", (code) => reject(new Error(`lock holder exited early with ${code}`)));
  });
};

runFileSystemContract(
  "node",
  async () => {
    const root = freshRoot();
    return {
      fs: make(),
      root,
      umask: process.umask(),
      cleanup: () => nodeFs.promises.rm(root, { recursive: true, force: true }),
      modeOf: async (path) => nodeFs.statSync(path).mode & 0o777,
      symlink: (target, path) => nodeFs.promises.symlink(target, path),
      mkfifo: async (path) => {
        execFileSync("mkfifo", [path]);
      },
      spawnLockHolder,
    };
  },
  { symlinks: true, fifos: true, crossProcess: true },
);

/** What the rooted-tree contract does behind the port's back, on the host's file system. */
const nodeHost: TreeHost = {
  write: (path, text) => nodeFs.writeFileSync(path, text),
  read: (path) => nodeFs.readFileSync(path, "utf8"),
  exists: (path) => nodeFs.existsSync(path),
  mkdir: (path) => nodeFs.mkdirSync(path, { recursive: true }),
  rename: (from, to) => nodeFs.renameSync(from, to),
  symlink: (target, path) => nodeFs.symlinkSync(target, path),
  chmod: (path, mode) => nodeFs.chmodSync(path, mode),
  mode: (path) => nodeFs.lstatSync(path).mode & 0o7777,
  list: (directory) =>
    nodeFs
      .readdirSync(directory, { recursive: true, encoding: "utf8" })
      .map((entry) => entry.split("\\").join("/"))
      .sort(),
  openForWrite: (path) => nodeFs.openSync(path, "r+"),
  overwrite: (descriptor, text) => {
    nodeFs.ftruncateSync(descriptor, 0);
    nodeFs.writeSync(descriptor, text, 0);
  },
  close: (descriptor) => nodeFs.closeSync(descriptor),
  writeRawName: (directory, name) =>
    nodeFs.writeFileSync(Buffer.concat([Buffer.from(`${directory}/`), name]), "raw"),
  makeChain: makeDeepChain,
};

const treeFixture = (directoryHandles: boolean) => async () => {
  const base = freshRoot();
  nodeFs.mkdirSync(join(base, "tree"));
  nodeFs.mkdirSync(join(base, "outside"));
  return {
    fs: make({ directoryHandles }),
    base,
    host: nodeHost,
    longPaths: directoryHandles,
    // The contract makes chains deeper than a path may name (node's rm fails on those).
    cleanup: async () => removeDeep(base),
  };
};

runRootedTreeContract("node, directory handles", treeFixture(true));
runRootedTreeContract("node, checked paths", treeFixture(false));

describe("nodeFileSystem", () => {
  const fs = make();
  let root = "";
  beforeAll(() => {
    root = freshRoot();
  });
  afterAll(() => nodeFs.rmSync(root, { recursive: true, force: true }));

  it("mapError classifies errno codes and drops the stack", () => {
    const errno = (code: string) => Object.assign(new Error(`${code}: boom`), { code });
    const cases: ReadonlyArray<[string, string]> = [
      ["ENOENT", "NotFound"],
      ["ENOTDIR", "NotADirectory"],
      ["EISDIR", "IsADirectory"],
      ["EEXIST", "Exists"],
      ["EACCES", "PermissionDenied"],
      ["EPERM", "PermissionDenied"],
      ["EROFS", "ReadOnly"],
      ["ENOSPC", "NoSpace"],
      ["EDQUOT", "NoSpace"],
      ["EMFILE", "TooManyOpenFiles"],
      ["ENFILE", "TooManyOpenFiles"],
      ["ENAMETOOLONG", "NameTooLong"],
      ["ELOOP", "Other"],
      ["EIO", "Other"],
    ];
    for (const [code, reason] of cases) {
      const error = mapError(errno(code), "/p");
      expect([code, error.reason]).toEqual([code, reason]);
      expect(error.path).toBe("/p");
      expect(error.message).toBe(`${code}: boom`);
    }
    expect(mapError(errno("ELOOP"), "/p", true).reason).toBe("NotRegularFile");
    expect(mapError("weird", "/p").reason).toBe("Other");
  });

  it.live("reads of a device fail NotRegularFile", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(fs.readFile("/dev/null"));
      expect(error.reason).toBe("NotRegularFile");
    }),
  );

  it.live("walks 10,000 files", () =>
    Effect.gen(function* () {
      const tree = join(root, "big");
      for (let directory = 0; directory < 100; directory++) {
        nodeFs.mkdirSync(join(tree, `d${directory}`, "sub"), { recursive: true });
        for (let file = 0; file < 100; file++) {
          const parent = file % 2 === 0 ? `d${directory}` : `d${directory}/sub`;
          nodeFs.writeFileSync(join(tree, parent, `f${file}.md`), `note ${file}`);
        }
      }
      const entries = yield* fs.walk(tree);
      expect(entries.filter((entry) => entry.kind === "file")).toHaveLength(10_000);
      expect(entries.filter((entry) => entry.kind === "directory")).toHaveLength(200);
      expect(entries.find((entry) => entry.relativePath === "d7/sub/f13.md")).toMatchObject({
        size: 7,
      });
    }),
  );

  it.live("walks a deep tree without recursion", () =>
    Effect.gen(function* () {
      const deepRoot = join(root, "deep");
      nodeFs.mkdirSync(deepRoot);
      let relative = "";
      for (let level = 0; level < 300; level++) {
        relative = relative === "" ? "d" : `${relative}/d`;
        nodeFs.mkdirSync(join(deepRoot, relative));
      }
      nodeFs.writeFileSync(join(deepRoot, relative, "leaf.md"), "leaf");
      const entries = yield* fs.walk(deepRoot);
      expect(entries).toHaveLength(301);
      expect(entries.some((entry) => entry.relativePath === `${relative}/leaf.md`)).toBe(true);
    }),
  );

  it.live("walk fails for a name that is not valid UTF-8", () =>
    Effect.gen(function* () {
      const bad = join(root, "bad-names");
      nodeFs.mkdirSync(bad);
      nodeFs.writeFileSync(
        Buffer.concat([Buffer.from(`${bad}/`), Buffer.from([0x61, 0xff, 0x62])]),
        "x",
      );
      const error = yield* Effect.flip(fs.walk(bad));
      expect(error.reason).toBe("Other");
      expect(error.message).toContain("not valid UTF-8");
    }),
  );

  it.live("walk keeps a genuine U+FFFD in a name", () =>
    Effect.gen(function* () {
      const odd = join(root, "odd-names");
      nodeFs.mkdirSync(odd);
      nodeFs.writeFileSync(join(odd, "a\uFFFDb.md"), "x");
      const entries = yield* fs.walk(odd);
      expect(entries.map((entry) => entry.relativePath)).toEqual(["a\uFFFDb.md"]);
    }),
  );

  it.live("a failed atomic write leaves no temp file behind", () =>
    Effect.gen(function* () {
      const directory = join(root, "failed-write");
      nodeFs.mkdirSync(join(directory, "target"), { recursive: true });
      const error = yield* Effect.flip(
        fs.writeFileAtomic(join(directory, "target"), new Uint8Array([1]), {
          mode: 0o644,
          durable: true,
        }),
      );
      expect(error.reason).toBe("IsADirectory");
      expect(nodeFs.readdirSync(directory)).toEqual(["target"]);
    }),
  );

  describe("lock files left behind", () => {
    const writeLock = (path: string, owner: object): void =>
      nodeFs.writeFileSync(path, JSON.stringify(owner));

    it.live("a lock naming this pid with a token nobody here holds is stale (pid reuse)", () =>
      Effect.gen(function* () {
        const path = join(root, "own-pid.lock");
        writeLock(path, { pid: process.pid, host: hostname(), token: "from-an-earlier-life" });
        const release = yield* fs.lock(path, 0);
        expect(nodeFs.readFileSync(path, "utf8")).not.toContain("from-an-earlier-life");
        yield* release;
        expect(nodeFs.existsSync(path)).toBe(false);
      }),
    );

    it.live("a lock from a previous boot is stale", () =>
      Effect.gen(function* () {
        const path = join(root, "old-boot.lock");
        writeLock(path, { pid: 1, host: hostname(), boot: "not-this-boot", token: "t" });
        const bootKnown = nodeFs.existsSync("/proc/sys/kernel/random/boot_id");
        const result = yield* Effect.either(fs.lock(path, 0));
        // Without a boot id pid 1 is alive, so the lock stays busy.
        expect(result._tag).toBe(bootKnown ? "Right" : "Left");
        if (result._tag === "Right") yield* result.right;
      }),
    );

    it.live("a lock held by a live pid of this host is respected", () =>
      Effect.gen(function* () {
        const path = join(root, "live.lock");
        writeLock(path, { pid: process.ppid, host: hostname(), token: "parent" });
        const error = yield* Effect.flip(fs.lock(path, 100));
        expect(error.reason).toBe("Busy");
        expect(error.message).toContain(`pid ${process.ppid}`);
        // The holder the lock file names, for a caller that says who holds it.
        expect(error.holder).toBe(`pid ${process.ppid} on ${hostname()}`);
        nodeFs.rmSync(path);
      }),
    );

    it.live("a lock held by a process that exited but was not reaped (a zombie) is stale", () =>
      Effect.gen(function* () {
        if (!nodeFs.existsSync("/proc/self/stat")) return;
        // The shell starts a child that exits a little later, prints its pid, and becomes
        // `sleep`, which never reaps it: the child stays a zombie until the sleep ends.
        // (A child that exits at once may be reaped by the shell before its exec.)
        const parent = spawn("sh", ["-c", "sleep 0.3 & echo $!; exec sleep 30"], {
          stdio: ["ignore", "pipe", "ignore"],
        });
        const zombie = yield* Effect.promise(
          () =>
            new Promise<number>((resolve) =>
              parent.stdout.once("data", (chunk: Buffer) => resolve(Number(chunk.toString()))),
            ),
        );
        const state = () => {
          const stat = nodeFs.readFileSync(`/proc/${zombie}/stat`, "utf8");
          return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
        };
        while (state() !== "Z") yield* Effect.sleep("10 millis");
        const path = join(root, "zombie.lock");
        writeLock(path, { pid: zombie, host: hostname(), token: "exited" });
        const release = yield* fs.lock(path, 0);
        yield* release;
        parent.kill("SIGKILL");
      }),
    );

    it.live("a lock from another host is presumed alive", () =>
      Effect.gen(function* () {
        const path = join(root, "remote.lock");
        writeLock(path, { pid: 999_999_999, host: `not-${hostname()}`, token: "remote" });
        expect((yield* Effect.flip(fs.lock(path, 50))).reason).toBe("Busy");
        nodeFs.rmSync(path);
      }),
    );

    it.live("an unreadable lock file is waited for while young and taken over once old", () =>
      Effect.gen(function* () {
        const path = join(root, "garbage.lock");
        nodeFs.writeFileSync(path, "");
        expect((yield* Effect.flip(fs.lock(path, 50))).reason).toBe("Busy");
        const old = new Date(Date.now() - 60_000);
        nodeFs.utimesSync(path, old, old);
        const release = yield* fs.lock(path, 0);
        yield* release;
        expect(nodeFs.existsSync(path)).toBe(false);
        // The stale file was moved aside and deleted, not left next to the lock.
        expect(nodeFs.readdirSync(root).filter((name) => name.startsWith("garbage.lock"))).toEqual(
          [],
        );
      }),
    );

    it.live("release leaves a lock file that is no longer ours", () =>
      Effect.gen(function* () {
        const path = join(root, "replaced.lock");
        const release = yield* fs.lock(path, 0);
        writeLock(path, { pid: process.ppid, host: hostname(), token: "someone-else" });
        yield* release;
        expect(nodeFs.readFileSync(path, "utf8")).toContain("someone-else");
        nodeFs.rmSync(path);
      }),
    );

    it.live("lock fails NotFound when its directory is missing", () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(fs.lock(join(root, "missing-dir", "x.lock"), 0));
        expect(error.reason).toBe("NotFound");
        expect(Option.isNone(yield* fs.info(join(root, "missing-dir")))).toBe(true);
      }),
    );
  });
});

describe("rooted tree with directory handles: a directory moved out right after its last check", () => {
  /** Every file below `dir` with its text, sorted by path; our temp files are nothing yet. */
  const contents = (dir: string): Record<string, string> =>
    Object.fromEntries(
      nodeFs
        .readdirSync(dir)
        .filter((name) => !leftoverTempName.test(name))
        .sort()
        .map((name) => [name, nodeFs.readFileSync(join(dir, name), "utf8")]),
    );

  // The unlink that ends a guarded replace or remove comes after the directory's last
  // check; a racing process that moves the directory out of the tree just then must find
  // it unchanged afterwards: what is unlinked by then lies in the copy's top directory.
  const raceAtUnlink = (
    change: (tree: RootedTree, expected: Expectation) => Effect.Effect<unknown, unknown>,
  ) =>
    Effect.gen(function* () {
      const root = freshRoot();
      nodeFs.mkdirSync(join(root, "tree", "copy", "d"), { recursive: true });
      nodeFs.mkdirSync(join(root, "outside"));
      nodeFs.writeFileSync(join(root, "tree", "copy", "d", "a.md"), "old\n");
      const moved = join(root, "outside", "d");
      let armed = false;
      let atMove: Record<string, string> | undefined;
      const fs = make({
        interpose: (calls) => ({
          ...calls,
          unlink: (path) => {
            if (armed) {
              armed = false;
              nodeFs.renameSync(join(root, "tree", "copy", "d"), moved);
              atMove = contents(moved);
            }
            calls.unlink(path);
          },
        }),
      });
      yield* Effect.scoped(
        Effect.gen(function* () {
          const top = yield* fs.openTree(join(root, "tree"));
          const tree = yield* top.subtree("copy");
          const info = Option.getOrThrow(yield* tree.info("d/a.md"));
          armed = true;
          yield* change(tree, {
            _tag: "File",
            ino: info.ino,
            size: info.size,
            mtimeMs: info.mtimeMs,
          });
        }),
      );
      expect(atMove).toBeDefined();
      expect(contents(moved)).toEqual(atMove);
      nodeFs.rmSync(root, { recursive: true, force: true });
    });

  it.effect("a guarded replace leaves it as it was when it left", () =>
    raceAtUnlink((tree, expected) =>
      tree.replaceFile("d/a.md", new TextEncoder().encode("new\n"), expected, 0o644),
    ),
  );

  it.effect("a guarded remove leaves it as it was when it left", () =>
    raceAtUnlink((tree, expected) => tree.removeFile("d/a.md", expected)),
  );
});

describe("rooted tree: a file appended to without end while a guard reads it", () => {
  // `yes >> note.md` during a pull: every read of the set-aside file finds more behind
  // it. A guard's read "to the end" then grew with the writer until the process ran out
  // of memory; it stops at the size the file had when the read began (what comes after
  // changes the size the guard or its watch list compares next, and is read then).
  it.effect(
    "the overtaken bytes are what the file held, never what is appended during the read",
    () =>
      Effect.gen(function* () {
        const root = freshRoot();
        nodeFs.mkdirSync(join(root, "tree"), { recursive: true });
        const note = join(root, "tree", "a.md");
        nodeFs.writeFileSync(note, "scanned\n");
        const appender = nodeFs.openSync(note, "a");
        const chunk = new Uint8Array(64 * 1024).fill(0x79);
        let appends = 0;
        // Bounded so that the previous code ends too (reading ~64 MB) and the test fails.
        const maxAppends = 1_000;
        const fs = make({
          interpose: (calls) => ({
            ...calls,
            read: (descriptor, buffer, offset, length, position) => {
              if (appends < maxAppends) {
                appends++;
                nodeFs.writeSync(appender, chunk);
              }
              return calls.read(descriptor, buffer, offset, length, position);
            },
          }),
        });
        const outcome = yield* Effect.scoped(
          Effect.gen(function* () {
            const tree = yield* fs.openTree(join(root, "tree"));
            const info = Option.getOrThrow(yield* tree.info("a.md"));
            return yield* tree.replaceFile(
              "a.md",
              new TextEncoder().encode("ours\n"),
              {
                _tag: "File",
                ino: info.ino,
                size: info.size,
                mtimeMs: info.mtimeMs,
                sameContent: (bytes) => new TextDecoder().decode(bytes) === "scanned\n",
              },
              0o644,
            );
          }),
        );
        nodeFs.closeSync(appender);
        expect(outcome._tag).toBe("Overtaken");
        if (outcome._tag === "Overtaken") {
          expect(outcome.bytes.length).toBeLessThan(1024 * 1024);
          expect(new TextDecoder().decode(outcome.bytes.subarray(0, 8))).toBe("scanned\n");
        }
        expect(appends).toBeLessThan(100);
        expect(nodeFs.readFileSync(note, "utf8")).toBe("ours\n");
        nodeFs.rmSync(root, { recursive: true, force: true });
      }),
  );
});

describe("rooted tree: a replaced file written late, still growing while its last check reads it", () => {
  // The watch list's last check closes the old file for good: a writer that appends a
  // little more while it is read is read to its end, as a read "to the end" did.
  it.effect("hands back everything written before the check ends, for a writer that stops", () =>
    Effect.gen(function* () {
      const root = freshRoot();
      nodeFs.mkdirSync(join(root, "tree"), { recursive: true });
      const note = join(root, "tree", "a.md");
      nodeFs.writeFileSync(note, "scanned\n");
      const editor = nodeFs.openSync(note, "a");
      let armed = false;
      let appends = 0;
      const fs = make({
        interpose: (calls) => ({
          ...calls,
          read: (descriptor, buffer, offset, length, position) => {
            if (armed && appends < 2) {
              appends++;
              nodeFs.writeSync(editor, `more ${appends}\n`);
            }
            return calls.read(descriptor, buffer, offset, length, position);
          },
        }),
      });
      const late = yield* Effect.scoped(
        Effect.gen(function* () {
          const tree = yield* fs.openTree(join(root, "tree"));
          const info = Option.getOrThrow(yield* tree.info("a.md"));
          const outcome = yield* tree.replaceFile(
            "a.md",
            new TextEncoder().encode("ours\n"),
            { _tag: "File", ino: info.ino, size: info.size, mtimeMs: info.mtimeMs },
            0o644,
          );
          expect(outcome._tag).toBe("Done");
          nodeFs.writeSync(editor, "late\n");
          armed = true;
          return yield* tree.lateWrites();
        }),
      );
      nodeFs.closeSync(editor);
      expect(late.map((l) => [l.path, new TextDecoder().decode(l.bytes)])).toEqual([
        ["a.md", "scanned\nlate\nmore 1\nmore 2\n"],
      ]);
      nodeFs.rmSync(root, { recursive: true, force: true });
    }),
  );
});
