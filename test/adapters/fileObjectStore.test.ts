import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { it } from "@effect/vitest";
import { Effect, Either, HashMap, Logger, Option } from "effect";
import { afterAll, beforeAll, describe, expect } from "vitest";
import { layer, make, mapError } from "../../src/adapters/fileObjectStore.js";
import { sharedFileSystemName } from "../../src/adapters/sharedFileSystems.js";
import { ObjectStore, type ObjectStoreService } from "../../src/ports/ObjectStore.js";
import { runObjectStoreContract } from "../contract/objectStoreContract.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../..");
const WORKER = path.join(here, "fixtures/fileStoreWorker.mjs");

const tempRoots: string[] = [];
const freshRoot = async (): Promise<string> => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "quire-file-store-"));
  tempRoots.push(dir);
  return path.join(dir, "store");
};
afterAll(async () => {
  await Promise.all(tempRoots.map((d) => fs.rm(d, { recursive: true, force: true })));
});

/** Opens a store; `prune` makes it prune as eagerly as possible (1 version, no grace). */
const open = (root: string, prune = false): Promise<ObjectStoreService> =>
  Effect.runPromise(make(prune ? { root, retainVersions: 1, pruneGraceMs: 0 } : { root }));

const contractFor = (prune: boolean) => {
  let latestRoot = "";
  return {
    makeStore: async () => {
      latestRoot = await freshRoot();
      const store = await open(latestRoot, prune);
      return {
        store,
        cleanup: () => fs.rm(path.dirname(latestRoot), { recursive: true, force: true }),
      };
    },
    // Another store instance on the same directory: shares nothing in memory.
    concurrentClients: () => open(latestRoot, prune),
  };
};

const defaults = contractFor(false);
runObjectStoreContract("file", defaults.makeStore, {
  concurrentClients: defaults.concurrentClients,
  lendsLocalFiles: true,
});
const pruning = contractFor(true);
runObjectStoreContract("file, pruning eagerly", pruning.makeStore, {
  concurrentClients: pruning.concurrentClients,
  lendsLocalFiles: true,
});

const text = (s: string) => new TextEncoder().encode(s);
const decode = (b: Uint8Array) => new TextDecoder().decode(b);
const unconditional = { _tag: "Unconditional" } as const;
const ifNoneMatch = { _tag: "IfNoneMatch" } as const;
const ifMatch = (etag: string) => ({ _tag: "IfMatch", etag }) as const;

const entriesOf = async (dir: string) => (await fs.readdir(dir)).sort();

describe("file object store", () => {
  it.effect("identity is file:<real absolute root>", () =>
    Effect.gen(function* () {
      const root = yield* Effect.promise(freshRoot);
      const store = yield* make({ root });
      expect(store.identity).toBe(`file:${yield* Effect.promise(() => fs.realpath(root))}`);
      expect(path.isAbsolute(store.identity.slice("file:".length))).toBe(true);
    }),
  );

  it.effect("stores each version as a plain file named by its number, ETag = number", () =>
    Effect.gen(function* () {
      const root = yield* Effect.promise(freshRoot);
      const store = yield* make({ root });
      const a = yield* store.put("packs/increments/1-x.pack", text("one"), ifNoneMatch);
      const b = yield* store.put("current", text("first"), ifNoneMatch);
      const c = yield* store.put("current", text("second"), ifMatch(b.etag));
      expect([a.etag, b.etag, c.etag]).toEqual(["1", "1", "2"]);
      const currentDir = path.join(root, "objects", "current@");
      expect(yield* Effect.promise(() => entriesOf(currentDir))).toEqual(["1", "2"]);
      const latest = yield* Effect.promise(() => fs.readFile(path.join(currentDir, "2"), "utf8"));
      expect(latest).toBe("second");
      const pack = path.join(root, "objects", "packs", "increments", "1-x.pack@", "1");
      expect(yield* Effect.promise(() => fs.readFile(pack, "utf8"))).toBe("one");
      // Files 0600, directories 0700 (before the umask, which can only remove bits).
      const mode = (yield* Effect.promise(() => fs.stat(pack))).mode & 0o777;
      expect(mode & ~0o600).toBe(0);
      // Nothing is left behind in tmp/.
      expect(yield* Effect.promise(() => fs.readdir(path.join(root, "tmp")))).toEqual([]);
    }),
  );

  it.effect("a key and keys below it as a prefix coexist", () =>
    Effect.gen(function* () {
      const store = yield* make({ root: yield* Effect.promise(freshRoot) });
      yield* store.put("a", text("A"), ifNoneMatch);
      yield* store.put("a/b", text("AB"), ifNoneMatch);
      yield* store.put("a/b/c", text("ABC"), ifNoneMatch);
      expect((yield* store.list("a")).map((i) => i.key)).toEqual(["a", "a/b", "a/b/c"]);
      yield* store.delete("a/b");
      expect((yield* store.list("")).map((i) => i.key)).toEqual(["a", "a/b/c"]);
      expect(Option.map(yield* store.get("a"), (o) => decode(o.body))).toEqual(Option.some("A"));
    }),
  );

  it.effect("invalid keys fail with Unavailable and touch nothing", () =>
    Effect.gen(function* () {
      const root = yield* Effect.promise(freshRoot);
      const store = yield* make({ root });
      const bad = [
        "",
        "/abs",
        "trailing/",
        "a//b",
        "../escape",
        "a/./b",
        "a/..",
        "\uD800",
        "x".repeat(1025),
      ];
      for (const key of bad) {
        for (const attempt of [
          store.get(key),
          store.head(key),
          store.put(key, text("x"), unconditional),
          store.delete(key),
        ]) {
          const error = yield* Effect.flip(attempt);
          expect(error.reason).toBe("Unavailable");
          expect(error.message).not.toContain("escape");
        }
      }
      expect(yield* Effect.promise(() => fs.readdir(path.join(root, "objects")))).toEqual([]);
      expect(yield* Effect.promise(() => fs.readdir(path.dirname(root)))).toEqual(["store"]);
      // A prefix that no valid key can start with lists nothing rather than failing.
      expect(yield* store.list("../")).toEqual([]);
    }),
  );

  it.effect("prunes old versions, keeping the newest, and stale ETags stay stale", () =>
    Effect.gen(function* () {
      const root = yield* Effect.promise(freshRoot);
      const store = yield* make({ root, retainVersions: 2, pruneGraceMs: 0 });
      const first = yield* store.put("k", text("0"), ifNoneMatch);
      let etag = first.etag;
      for (let i = 1; i <= 20; i++)
        etag = (yield* store.put("k", text(String(i)), ifMatch(etag))).etag;
      const names = yield* Effect.promise(() => entriesOf(path.join(root, "objects", "k@")));
      const versions = names.filter((n) => /^\d+$/.test(n)).map(Number);
      expect(versions.length).toBeLessThanOrEqual(4);
      expect(Math.max(...versions)).toBe(21);
      expect(names.filter((n) => n.startsWith("p"))).toHaveLength(1);
      for (const stale of [first.etag, "2", "19", "20"]) {
        const error = yield* Effect.flip(store.put("k", text("late"), ifMatch(stale)));
        expect(error.reason).toBe("PreconditionFailed");
      }
      const got = yield* store.get("k");
      expect(Option.map(got, (o) => [decode(o.body), o.etag])).toEqual(Option.some(["20", "21"]));
    }),
  );

  /**
   * Holds writer W between observing "k" and claiming the next number while another
   * store instance writes six versions. With eager pruning that vacates the very number
   * W is about to claim, so W's link succeeds into a slot nobody will ever read.
   */
  const heldWriter = (root: string, pruneGraceMs: number) =>
    Effect.gen(function* () {
      const config = { root, retainVersions: 1, pruneGraceMs };
      const other = yield* make(config);
      let held = false;
      const writer = yield* make({
        ...config,
        beforeClaim: (key) =>
          Effect.gen(function* () {
            if (held || key !== "k") return;
            held = true;
            for (let i = 0; i < 6; i++) {
              const current = yield* other.get("k");
              const etag = Option.getOrThrow(current).etag;
              yield* other.put("k", text(`other-${i}`), ifMatch(etag));
            }
          }).pipe(Effect.orDie),
      });
      return { other, writer };
    });

  for (const condition of [ifMatch("1"), unconditional]) {
    it.effect(
      `${condition._tag === "IfMatch" ? "an If-Match" : "an unconditional"} writer whose number was pruned while it waited fails Ambiguous, invisibly`,
      () =>
        Effect.gen(function* () {
          const root = yield* Effect.promise(freshRoot);
          const { other, writer } = yield* heldWriter(root, 0);
          yield* other.put("k", text("base"), ifNoneMatch);
          const error = yield* Effect.flip(writer.put("k", text("stale"), condition));
          expect(error.reason).toBe("Ambiguous");
          const got = yield* writer.get("k");
          expect(Option.map(got, (o) => [decode(o.body), o.etag])).toEqual(
            Option.some(["other-5", "7"]),
          );
          // Later writes proceed normally and prune the orphan.
          yield* writer.put("k", text("next"), ifMatch("7"));
          yield* writer.put("k", text("again"), unconditional);
          const names = yield* Effect.promise(() => entriesOf(path.join(root, "objects", "k@")));
          expect(names).not.toContain("2");
        }),
    );
  }

  it.effect("within the grace period nothing is pruned, so a held writer just loses", () =>
    Effect.gen(function* () {
      const root = yield* Effect.promise(freshRoot);
      const { other, writer } = yield* heldWriter(root, 60_000);
      yield* other.put("k", text("base"), ifNoneMatch);
      const error = yield* Effect.flip(writer.put("k", text("stale"), ifMatch("1")));
      expect(error.reason).toBe("PreconditionFailed");
      const names = yield* Effect.promise(() => entriesOf(path.join(root, "objects", "k@")));
      expect(names).toEqual(["1", "2", "3", "4", "5", "6", "7"]);
    }),
  );

  it("prunes versions once they are older than the grace period", async () => {
    const root = await freshRoot();
    const store = await Effect.runPromise(make({ root, retainVersions: 1, pruneGraceMs: 300 }));
    const keyDir = path.join(root, "objects", "k@");
    for (let i = 0; i < 5; i++)
      await Effect.runPromise(store.put("k", text(`${i}`), unconditional));
    expect(await entriesOf(keyDir)).toEqual(["1", "2", "3", "4", "5"]);
    await new Promise((resolve) => setTimeout(resolve, 400));
    await Effect.runPromise(store.put("k", text("5"), unconditional));
    expect(await entriesOf(keyDir)).toEqual(["6", "p6"]);
  });

  it.effect("delete writes a tombstone and frees the data; numbering continues", () =>
    Effect.gen(function* () {
      const root = yield* Effect.promise(freshRoot);
      const store = yield* make({ root, pruneGraceMs: 0 });
      yield* store.put("k", text("a"), ifNoneMatch);
      yield* store.put("k", text("b"), unconditional);
      yield* store.delete("k");
      const keyDir = path.join(root, "objects", "k@");
      expect(yield* Effect.promise(() => entriesOf(keyDir))).toEqual(["3", "p3"]);
      expect((yield* Effect.promise(() => fs.stat(path.join(keyDir, "3")))).isDirectory()).toBe(
        true,
      );
      yield* store.delete("k");
      expect(yield* Effect.promise(() => entriesOf(keyDir))).toEqual(["3", "p3"]);
      const again = yield* store.put("k", text("c"), ifNoneMatch);
      expect(again.etag).toBe("4");
    }),
  );

  it.effect(
    "delete forever leaves no trace of the key; a leftover of a crash is swept at the next start",
    () =>
      Effect.gen(function* () {
        const root = yield* Effect.promise(freshRoot);
        const store = yield* make({ root });
        yield* store.put("probe/p1", text("a"), ifNoneMatch);
        yield* store.put("probe/p1", text("b"), ifMatch("1"));
        yield* store.put("probe/p2", text("c"), ifNoneMatch);
        yield* store.delete("probe/p1", { forever: true });
        const probeDir = path.join(root, "objects", "probe");
        expect(yield* Effect.promise(() => entriesOf(probeDir))).toEqual(["p2@"]);
        const tmp = path.join(root, "tmp");
        expect(yield* Effect.promise(() => entriesOf(tmp))).toEqual([]);
        // The temp directory removed under us: forgetting still works.
        yield* Effect.promise(() => fs.rm(tmp, { recursive: true }));
        yield* store.delete("probe/p2", { forever: true });
        expect(yield* Effect.promise(() => entriesOf(probeDir))).toEqual([]);
        // A crash between moving a key away and removing it leaves a `.gone` directory.
        const leftover = path.join(tmp, "123-0b5e2f4c-1d2e-4f3a-9b8c-7d6e5f4a3b2c.gone");
        yield* Effect.promise(async () => {
          await fs.mkdir(path.join(leftover, "1"), { recursive: true });
          const old = new Date(Date.now() - 2 * 3600_000);
          await fs.utimes(leftover, old, old);
        });
        yield* make({ root });
        expect(yield* Effect.promise(() => entriesOf(tmp))).toEqual([]);
      }),
  );

  it.effect(
    "a version too large to read (over 2 GiB: put there by someone else) is Corrupt, not Unavailable",
    () =>
      Effect.gen(function* () {
        const root = yield* Effect.promise(freshRoot);
        const store = yield* make({ root });
        yield* store.put("packs/p", text("x"), ifNoneMatch);
        // Sparse: no disk space used, and the read fails before allocating anything.
        yield* Effect.promise(() =>
          fs.truncate(path.join(root, "objects", "packs", "p@", "1"), 3 * 1024 ** 3),
        );
        const error = yield* Effect.flip(store.get("packs/p"));
        expect(error.reason).toBe("Corrupt");
      }),
  );

  it.effect(
    "a version numbered at the last safe integer (put there by hand): writes fail, never land unseen",
    () =>
      Effect.gen(function* () {
        const root = yield* Effect.promise(freshRoot);
        const store = yield* make({ root });
        yield* store.put("current", text("one"), ifNoneMatch);
        const last = String(Number.MAX_SAFE_INTEGER);
        yield* Effect.promise(() =>
          fs.writeFile(path.join(root, "objects", "current@", last), "two"),
        );
        const got = yield* store.get("current");
        expect(Option.map(got, (o) => [decode(o.body), o.etag])).toEqual(
          Option.some(["two", last]),
        );
        // The next number would not read back as a version: the write would be invisible,
        // and its writer told it succeeded.
        for (const write of [
          store.put("current", text("three"), ifMatch(last)),
          store.put("current", text("three"), unconditional),
          store.delete("current"),
        ]) {
          const error = yield* Effect.flip(write);
          expect(error.reason).toBe("Corrupt");
        }
        const after = yield* store.get("current");
        expect(Option.map(after, (o) => decode(o.body))).toEqual(Option.some("two"));
      }),
  );

  it.effect(
    "a prune marker above every version (put there by hand) is Corrupt, not a retryable Throttled",
    () =>
      Effect.gen(function* () {
        const root = yield* Effect.promise(freshRoot);
        const store = yield* make({ root });
        yield* store.put("current", text("one"), ifNoneMatch);
        yield* Effect.promise(() =>
          fs.writeFile(path.join(root, "objects", "current@", "p100"), ""),
        );
        // Every listing now looks torn by a prune, and no retry changes that.
        const error = yield* Effect.flip(store.get("current"));
        expect(error.reason).toBe("Corrupt");
      }),
  );

  it.effect("ignores foreign files in the tree and in key directories", () =>
    Effect.gen(function* () {
      const root = yield* Effect.promise(freshRoot);
      const store = yield* make({ root });
      yield* store.put("dir/k", text("x"), ifNoneMatch);
      const objects = path.join(root, "objects");
      yield* Effect.promise(async () => {
        await fs.writeFile(path.join(objects, "dir", "k@", "notes.txt"), "junk");
        await fs.writeFile(path.join(objects, "dir", "k@", "0"), "junk");
        await fs.writeFile(path.join(objects, "README"), "junk");
        await fs.mkdir(path.join(objects, "UPPER@"));
        await fs.mkdir(path.join(objects, "dir", "empty@"));
      });
      expect((yield* store.list("")).map((i) => i.key)).toEqual(["dir/k"]);
      const got = yield* store.get("dir/k");
      expect(Option.map(got, (o) => [decode(o.body), o.etag])).toEqual(Option.some(["x", "1"]));
      expect((yield* store.put("dir/k", text("y"), ifMatch("1"))).etag).toBe("2");
      expect(Option.isNone(yield* store.get("dir/empty"))).toBe(true);
    }),
  );

  it.effect(
    "a key whose current version is no file is left out of a listing, not fatal to it",
    () =>
      Effect.gen(function* () {
        const root = yield* Effect.promise(freshRoot);
        const store = yield* make({ root });
        yield* store.put("staging/a", text("a"), ifNoneMatch);
        yield* store.put("staging/c", text("c"), ifNoneMatch);
        const staging = path.join(root, "objects", "staging");
        // Planted by hand (or a hostile process): a symlink and a marker above every version.
        yield* Effect.promise(async () => {
          await fs.mkdir(path.join(staging, "b@"));
          await fs.symlink("/dev/zero", path.join(staging, "b@", "1"));
          await fs.mkdir(path.join(staging, "bb@"));
          await fs.writeFile(path.join(staging, "bb@", "1"), "x");
          await fs.writeFile(path.join(staging, "bb@", "p5"), "");
        });
        // One broken key must not blind every listing of its prefix (staged publications).
        expect((yield* store.list("staging/")).map((i) => i.key)).toEqual([
          "staging/a",
          "staging/c",
        ]);
        // Read directly, it is still reported as corrupt.
        const read = yield* Effect.either(store.get("staging/b"));
        expect(Either.isLeft(read) && read.left.reason).toBe("Corrupt");
      }),
  );

  it.effect("removes temp files orphaned by dead writers when opened, keeps fresh ones", () =>
    Effect.gen(function* () {
      const root = yield* Effect.promise(freshRoot);
      yield* make({ root });
      const tmp = path.join(root, "tmp");
      const old = "4242-0b5e2f4c-1d2e-4f3a-9b8c-7d6e5f4a3b2c";
      const fresh = "4242-1c6f3a5d-2e3f-4a4b-8c9d-8e7f6a5b4c3d";
      yield* Effect.promise(async () => {
        await fs.writeFile(path.join(tmp, old), "x");
        const longAgo = new Date(Date.now() - 2 * 3600_000);
        await fs.utimes(path.join(tmp, old), longAgo, longAgo);
        await fs.writeFile(path.join(tmp, fresh), "x");
        // Not a name the store gives: someone else's file, however old, is not removed.
        await fs.writeFile(path.join(tmp, "notes.txt"), "x");
        await fs.utimes(path.join(tmp, "notes.txt"), longAgo, longAgo);
      });
      yield* make({ root });
      expect(yield* Effect.promise(() => entriesOf(tmp))).toEqual([fresh, "notes.txt"]);
    }),
  );

  it.effect(
    "a temp directory that is a symlink: opening the store removes nothing where it leads",
    () =>
      Effect.gen(function* () {
        const root = yield* Effect.promise(freshRoot);
        const elsewhere = yield* Effect.promise(freshRoot);
        const tmp = path.join(root, "tmp");
        // Old files in the directory the link leads to (someone linked tmp to /tmp, say),
        // some of them named as the store names its own.
        const names = [
          "notes.txt",
          "4242-0b5e2f4c-1d2e-4f3a-9b8c-7d6e5f4a3b2c",
          "1-0b5e2f4c-1d2e-4f3a-9b8c-7d6e5f4a3b2c.gone",
        ];
        yield* Effect.promise(async () => {
          await fs.mkdir(elsewhere, { recursive: true });
          const longAgo = new Date(Date.now() - 2 * 3600_000);
          for (const name of names) {
            if (name.endsWith(".gone"))
              await fs.mkdir(path.join(elsewhere, name, "1"), { recursive: true });
            else await fs.writeFile(path.join(elsewhere, name), "keep me");
            await fs.utimes(path.join(elsewhere, name), longAgo, longAgo);
          }
          await fs.mkdir(root, { recursive: true });
          await fs.symlink(elsewhere, tmp);
        });
        yield* make({ root });
        expect(yield* Effect.promise(() => entriesOf(elsewhere))).toEqual([...names].sort());
      }),
  );

  it.effect(
    "a version replaced by a FIFO or a symlink while it is read: the read fails as Corrupt, never blocks or reads outside",
    () =>
      Effect.gen(function* () {
        const root = yield* Effect.promise(freshRoot);
        const store = yield* make({ root });
        yield* store.put("k", text("the body"), unconditional);
        const scratch = path.dirname(root);
        const { version, fifo, copy } = yield* Effect.promise(async () => {
          const files = await fs.readdir(root, { recursive: true, withFileTypes: true });
          const found = files.filter((d) => d.isFile() && /\/k@?\//.test(`/${d.parentPath}/`));
          expect(found.length).toBe(1);
          const names = {
            version: path.join(found[0]!.parentPath, found[0]!.name),
            fifo: path.join(scratch, "fifo"),
            copy: path.join(scratch, "copy"),
          };
          execFileSync("mkfifo", [names.fifo]);
          await fs.copyFile(names.version, names.copy);
          await fs.writeFile(path.join(scratch, "outside"), "outside the store");
          return names;
        });
        // Another process swaps, as fast as it can, a FIFO, a symlink leading out of the
        // store or the real file under the version's name, each atomically.
        const swapper = spawn(
          process.execPath,
          [
            "-e",
            `const fs = require("node:fs");
            const [version, fifo, copy, outside] = process.argv.slice(1);
            process.stdout.write("swapping\\n");
            for (let round = 0; ; round++) {
              const staged = version + ".swap";
              const kind = round % 3;
              if (kind === 1) fs.symlinkSync(outside, staged);
              else fs.linkSync(kind === 0 ? fifo : copy, staged);
              fs.renameSync(staged, version);
            }`,
            version,
            fifo,
            copy,
            path.join(scratch, "outside"),
          ],
          { stdio: ["ignore", "pipe", "ignore"] },
        );
        yield* Effect.promise(() => new Promise((resolve) => swapper.stdout.once("data", resolve)));
        const answers = new Set<string>();
        yield* Effect.gen(function* () {
          // Until a read met a swapped-in file, with enough reads for every kind to turn up.
          for (let read = 0; read < 300 || (!answers.has("Corrupt") && read < 5000); read++) {
            const got = yield* Effect.either(store.get("k"));
            answers.add(
              Either.isLeft(got)
                ? got.left.reason
                : Option.isSome(got.right)
                  ? new TextDecoder().decode(got.right.value.body)
                  : "none",
            );
          }
        }).pipe(Effect.ensuring(Effect.sync(() => swapper.kill("SIGKILL"))));
        // Some reads met a swapped-in file (the race was exercised); none met anything else.
        expect(answers).toContain("Corrupt");
        for (const answer of answers) expect(["the body", "Corrupt"]).toContain(answer);
      }),
    20_000,
  );

  it.effect("a root that cannot be a directory: make fails, layer refuses every call", () =>
    Effect.gen(function* () {
      const root = yield* Effect.promise(freshRoot);
      yield* Effect.promise(() => fs.mkdir(path.dirname(root), { recursive: true }));
      yield* Effect.promise(() => fs.writeFile(root, "a file, not a directory"));
      const error = yield* Effect.flip(make({ root }));
      expect(error.reason).toBe("Corrupt");
      expect(error.message).not.toContain(root);
      const store = yield* Effect.provide(ObjectStore, layer({ root }));
      expect(store.identity).toBe(`file:${root}`);
      expect((yield* Effect.flip(store.get("k"))).reason).toBe("Corrupt");
      expect((yield* Effect.flip(store.put("k", text("x"), unconditional))).reason).toBe("Corrupt");
    }),
  );

  // root ignores permission bits, so this check needs an ordinary user.
  it.effect.skipIf(process.getuid?.() === 0)(
    "a read-only key directory is AccessDenied and changes nothing",
    () =>
      Effect.gen(function* () {
        const root = yield* Effect.promise(freshRoot);
        const store = yield* make({ root });
        const { etag } = yield* store.put("k", text("x"), ifNoneMatch);
        const keyDir = path.join(root, "objects", "k@");
        yield* Effect.promise(() => fs.chmod(keyDir, 0o500));
        const error = yield* Effect.flip(store.put("k", text("y"), ifMatch(etag)));
        yield* Effect.promise(() => fs.chmod(keyDir, 0o700));
        expect(error.reason).toBe("AccessDenied");
        expect(Option.map(yield* store.get("k"), (o) => o.etag)).toEqual(Option.some(etag));
      }),
  );

  // The same check where the suite runs as root (CI does): the denied write is made by a
  // worker process running as `nobody`, on a store that user owns.
  it.runIf(process.getuid?.() === 0)(
    "a read-only key directory is AccessDenied and changes nothing (as root: a worker as nobody)",
    async () => {
      const root = await freshRoot();
      const store = await open(root);
      const { etag } = await Effect.runPromise(store.put("k", text("x"), ifNoneMatch));
      const nobody = { uid: 65534, gid: 65534 };
      const owned = path.dirname(root);
      const chownAll = async (at: string): Promise<void> => {
        await fs.lchown(at, nobody.uid, nobody.gid);
        if ((await fs.lstat(at)).isDirectory())
          for (const name of await fs.readdir(at)) await chownAll(path.join(at, name));
      };
      await chownAll(owned);
      const keyDir = path.join(root, "objects", "k@");
      await fs.chmod(keyDir, 0o500);
      const worker = startWorker(root, nobody);
      try {
        await worker.ready;
        const denied = await worker.request({
          op: "put",
          key: "k",
          text: "y",
          condition: ifMatch(etag),
        });
        expect(denied).toMatchObject({ ok: false, reason: "AccessDenied" });
        // The user itself can still read it, unchanged.
        expect(await worker.request({ op: "get", key: "k" })).toMatchObject({
          ok: true,
          text: "x",
          etag,
        });
      } finally {
        await stopWorker(worker);
        await fs.chmod(keyDir, 0o700);
      }
      expect(Option.map(await Effect.runPromise(store.get("k")), (o) => o.etag)).toEqual(
        Option.some(etag),
      );
    },
  );

  it("names network, cluster and FUSE file systems by their statfs type, and only those", () => {
    expect(sharedFileSystemName(0x6969)).toBe("NFS");
    expect(sharedFileSystemName(0xff534d42)).toBe("CIFS");
    expect(sharedFileSystemName(0xff534d42 | 0)).toBe("CIFS"); // read as a signed 32-bit int
    expect(sharedFileSystemName(0x65735546)).toBe("FUSE");
    for (const local of [0xef53, 0x01021994, 0x58465342, 0x9123683e, 0x794c7630, 0, -1, 0.5])
      expect(sharedFileSystemName(local)).toBeUndefined(); // ext4, tmpfs, xfs, btrfs, overlay
  });

  it("warns (module store) when opened on a network or FUSE file system, and only then", async () => {
    const opened = async (fileSystemType?: (root: string) => Promise<number>) => {
      const records: Array<{ level: string; message: string; fields: Record<string, unknown> }> =
        [];
      const capture = Logger.make(({ logLevel, message, annotations }) => {
        records.push({
          level: logLevel.label,
          message: Array.isArray(message) ? message.join(" ") : String(message),
          fields: Object.fromEntries(HashMap.toEntries(annotations)),
        });
      });
      const root = await freshRoot();
      const store = await Effect.runPromise(
        make({ root, ...(fileSystemType ? { fileSystemType } : {}) }).pipe(
          Effect.provide(Logger.replace(Logger.defaultLogger, capture)),
        ),
      );
      // The store works the same either way.
      await Effect.runPromise(store.put("k", text("x"), ifNoneMatch));
      return { records, root: await fs.realpath(root) };
    };
    const nfs = await opened(async () => 0x6969);
    expect(nfs.records).toHaveLength(1);
    expect(nfs.records[0]).toMatchObject({
      level: "WARN",
      fields: { module: "store", fileSystem: "NFS", root: nfs.root },
    });
    expect(nfs.records[0]?.message).toMatch(/safe only for quire processes on this one host/);
    // With the real statfs: a warning exactly when the test's temp directory is shared.
    const real = await opened();
    const realName = sharedFileSystemName((await fs.statfs(real.root)).type);
    expect(real.records.map((r) => r.fields["fileSystem"])).toEqual(
      realName === undefined ? [] : [realName],
    );
    expect((await opened(async () => 0xef53)).records).toEqual([]);
    expect((await opened(() => Promise.reject(new Error("ENOSYS")))).records).toEqual([]);
  });

  it("maps errno codes in one place; after the commit point everything is Ambiguous", () => {
    const cases: ReadonlyArray<[string, string]> = [
      ["ENOENT", "NotFound"],
      ["EACCES", "AccessDenied"],
      ["EPERM", "AccessDenied"],
      ["EROFS", "AccessDenied"],
      ["ENOTDIR", "Corrupt"],
      ["EISDIR", "Corrupt"],
      ["ERR_FS_FILE_TOO_LARGE", "Corrupt"],
      ["ENOSPC", "Unavailable"],
      ["EDQUOT", "Unavailable"],
      ["EIO", "Unavailable"],
      ["EMFILE", "Unavailable"],
      ["UNKNOWN", "Unavailable"],
    ];
    for (const [code, reason] of cases) {
      expect(mapError("write temp file", code, "beforeCommit").reason).toBe(reason);
      expect(mapError("sync directory", code, "afterCommit").reason).toBe("Ambiguous");
    }
    expect(mapError("write temp file", "ENOSPC", "beforeCommit").message).toBe(
      "file store: write temp file failed (ENOSPC)",
    );
  });
});

// ---------------------------------------------------------------------------------------
// Cross-process tests: real node processes running the compiled adapter.

interface Reply {
  readonly id?: number;
  readonly ok?: boolean;
  readonly etag?: string;
  readonly reason?: string;
  readonly text?: string;
  readonly absent?: boolean;
  readonly succeeded?: number;
  readonly ambiguous?: number;
  readonly looping?: boolean;
  readonly ready?: boolean;
}

interface Worker {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  readonly request: (command: Record<string, unknown>) => Promise<Reply>;
  readonly exited: Promise<NodeJS.Signals | number | null>;
}

let nextId = 1;
/**
 * A worker process on `root`; eager pruning (1 version, no grace) for maximum churn.
 * `as` runs it as another user (the test process must be root).
 */
const startWorker = (root: string, as?: { readonly uid: number; readonly gid: number }): Worker => {
  const child = spawn(process.execPath, [WORKER, root, "1", "0"], {
    stdio: ["pipe", "pipe", "inherit"],
    ...as,
  });
  const pending = new Map<number, (reply: Reply) => void>();
  let signalReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => (signalReady = resolve));
  createInterface({ input: child.stdout! }).on("line", (line) => {
    const reply = JSON.parse(line) as Reply;
    if (reply.ready === true) return signalReady();
    if (reply.id !== undefined) {
      pending.get(reply.id)?.(reply);
      pending.delete(reply.id);
    }
  });
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.on("exit", (code, signal) => resolve(signal ?? code)),
  );
  const request = (command: Record<string, unknown>) =>
    new Promise<Reply>((resolve) => {
      const id = nextId++;
      pending.set(id, resolve);
      child.stdin!.write(`${JSON.stringify({ ...command, id })}\n`);
    });
  return { child, ready, request, exited };
};

const stopWorker = async (worker: Worker): Promise<void> => {
  if (worker.child.exitCode === null && worker.child.signalCode === null) {
    worker.child.stdin!.end();
    await worker.exited;
  }
};

const COMPILED = [
  "src/adapters/fileObjectStore",
  "src/adapters/fileStoreLayout",
  "src/adapters/keyOrder",
];

describe("file object store across processes", () => {
  beforeAll(() => {
    for (const module of COMPILED) {
      const built = path.join(repo, "dist", `${module}.js`);
      if (!existsSync(built)) throw new Error(`${built} is missing: run \`npm run build\` first`);
      if (statSync(path.join(repo, `${module}.ts`)).mtimeMs > statSync(built).mtimeMs) {
        throw new Error(`${built} is older than its source: run \`npm run build\` first`);
      }
    }
  });

  const PROCESSES = 8;

  it("8 processes racing If-Match / If-None-Match on one key: exactly one winner each round", async () => {
    const root = await freshRoot();
    const store = await open(root, true);
    const workers = Array.from({ length: PROCESSES }, () => startWorker(root));
    try {
      await Promise.all(workers.map((w) => w.ready));
      let { etag } = await Effect.runPromise(store.put("race", text("base"), ifNoneMatch));
      for (let round = 0; round < 12; round++) {
        const replies = await Promise.all(
          workers.map((w, i) =>
            w.request({
              op: "put",
              key: "race",
              text: `r${round}-w${i}`,
              condition: ifMatch(etag),
            }),
          ),
        );
        const winners = replies.flatMap((r, i) => (r.ok === true ? [{ i, etag: r.etag }] : []));
        expect(winners).toHaveLength(1);
        expect(replies.filter((r) => r.ok !== true).map((r) => r.reason)).toEqual(
          Array.from({ length: PROCESSES - 1 }, () => "PreconditionFailed"),
        );
        const got = await Effect.runPromise(store.get("race"));
        const winner = winners[0]!;
        expect(Option.map(got, (o) => [decode(o.body), o.etag])).toEqual(
          Option.some([`r${round}-w${winner.i}`, winner.etag]),
        );
        etag = winner.etag!;

        const creates = await Promise.all(
          workers.map((w, i) =>
            w.request({ op: "put", key: `create/${round}`, text: `w${i}`, condition: ifNoneMatch }),
          ),
        );
        expect(creates.filter((r) => r.ok === true)).toHaveLength(1);
      }
      // An ETag from one process is usable by another.
      const seen = await workers[0]!.request({ op: "get", key: "race" });
      const next = await workers[1]!.request({
        op: "put",
        key: "race",
        text: "cross",
        condition: ifMatch(seen.etag!),
      });
      expect(next.ok).toBe(true);
    } finally {
      await Promise.all(workers.map(stopWorker));
    }
  });

  it("8 processes running compare-and-swap loops never lose an increment", async () => {
    const root = await freshRoot();
    const store = await open(root, true);
    const workers = Array.from({ length: PROCESSES }, () => startWorker(root));
    try {
      await Promise.all(workers.map((w) => w.ready));
      await Effect.runPromise(store.put("counter", text("0"), ifNoneMatch));
      const times = 15;
      const replies = await Promise.all(
        workers.map((w) => w.request({ op: "increment", key: "counter", times })),
      );
      expect(replies.map((r) => r.ok)).toEqual(workers.map(() => true));
      // An Ambiguous increment (its number pruned mid-write) may or may not have counted.
      const succeeded = replies.reduce((sum, r) => sum + (r.succeeded ?? 0), 0);
      const ambiguous = replies.reduce((sum, r) => sum + (r.ambiguous ?? 0), 0);
      expect(succeeded + ambiguous).toBe(PROCESSES * times);
      expect(ambiguous).toBeLessThan(PROCESSES * times);
      const got = await Effect.runPromise(store.get("counter"));
      const final = Number(Option.getOrThrow(Option.map(got, (o) => decode(o.body))));
      expect(final).toBeGreaterThanOrEqual(succeeded);
      expect(final).toBeLessThanOrEqual(succeeded + ambiguous);
    } finally {
      await Promise.all(workers.map(stopWorker));
    }
  });

  it("survives SIGKILL of writers at random instants: reads stay whole, nothing blocks", async () => {
    const root = await freshRoot();
    const store = await open(root, true);
    const size = 256 * 1024;
    await Effect.runPromise(store.put("current", loopBody(0, size), ifNoneMatch));
    const counterOf = async (): Promise<{ counter: number; etag: string }> => {
      const got = await Effect.runPromise(store.get("current"));
      if (Option.isNone(got)) throw new Error("current vanished");
      const counter = checkLoopBody(got.value.body, size);
      const info = await Effect.runPromise(store.head("current"));
      expect(Option.map(info, (i) => i.size)).toEqual(Option.some(size));
      return { counter, etag: got.value.etag };
    };

    let last = 0;
    for (let round = 0; round < 6; round++) {
      // Two writers at once: killing one must never stall the other.
      const victim = startWorker(root);
      const survivor = startWorker(root);
      try {
        await Promise.all([victim.ready, survivor.ready]);
        await Promise.all([
          victim.request({ op: "loop", key: "current", size }),
          survivor.request({ op: "loop", key: "current", size }),
        ]);
        await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 150));
        victim.child.kill("SIGKILL");
        expect(await victim.exited).toBe("SIGKILL");

        const before = await counterOf();
        expect(before.counter).toBeGreaterThanOrEqual(last);
        // The survivor keeps committing after the kill (bounded wait, not a timing check).
        let after = before;
        for (let i = 0; i < 500 && after.counter === before.counter; i++) {
          await new Promise((resolve) => setTimeout(resolve, 10));
          after = await counterOf();
        }
        expect(after.counter).toBeGreaterThan(before.counter);
        survivor.child.kill("SIGKILL");
        await survivor.exited;

        // With both writers dead, this process's conditional writes go straight through.
        const now = await counterOf();
        const replaced = await Effect.runPromise(
          store.put("current", loopBody(now.counter + 1, size), ifMatch(now.etag)),
        );
        const check = await counterOf();
        expect(check).toEqual({ counter: now.counter + 1, etag: replaced.etag });
        last = check.counter;
        await Effect.runPromise(store.put(`after-kill/${round}`, text("x"), ifNoneMatch));
        await Effect.runPromise(store.delete(`after-kill/${round}`));
      } finally {
        for (const w of [victim, survivor]) if (w.child.exitCode === null) w.child.kill("SIGKILL");
        await Promise.all([victim.exited, survivor.exited]);
      }
    }
    // Every surviving key still reads whole; orphaned temp files never show as keys.
    const keys = await Effect.runPromise(store.list(""));
    expect(keys.map((k) => k.key)).toContain("current");
    expect(keys.every((k) => k.key === "current" || k.key.startsWith("side/"))).toBe(true);
    for (const k of keys) {
      const got = await Effect.runPromise(Effect.either(store.get(k.key)));
      expect(Either.isRight(got)).toBe(true);
    }
  });
});

/** The worker's body format: counter in 16 bytes, "\n", then counter % 251 repeated. */
const loopBody = (counter: number, size: number): Uint8Array => {
  const body = new Uint8Array(size).fill(counter % 251);
  body.set(text(`${String(counter).padStart(16)}\n`));
  return body;
};

const checkLoopBody = (body: Uint8Array, size: number): number => {
  expect(body.length).toBe(size);
  const counter = Number(decode(body.subarray(0, 16)).trim());
  expect(Number.isSafeInteger(counter)).toBe(true);
  expect(Buffer.from(body).equals(Buffer.from(loopBody(counter, size)))).toBe(true);
  return counter;
};
