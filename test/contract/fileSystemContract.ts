/**
 * The FileSystem port contract, run against every adapter (SPEC §1, §4, §8). Import it
 * from an adapter's test file and call {@link runFileSystemContract} once.
 */
import { describe, expect, it } from "@effect/vitest";
import { Effect, Fiber, Option } from "effect";
import type { FileSystemService, FsErrorReason, WalkEntry } from "../../src/ports/FileSystem.js";

/** A process (or stand-in) holding a lock, that can be killed without releasing it. */
export interface LockHolder {
  /** Kills the holder abruptly (SIGKILL for a process) and resolves once it is gone. */
  kill(): Promise<void>;
}

/** A fresh, empty directory `root` on the adapter under test, plus the hooks the suite needs. */
export interface FileSystemFixture {
  readonly fs: FileSystemService;
  readonly root: string;
  /** The umask the adapter's file system applies to created modes (0 if none). */
  readonly umask: number;
  cleanup(): Promise<void>;
  /** Permission bits (`mode & 0o777`) of a path, read behind the port's back. */
  modeOf(path: string): Promise<number>;
  /** Creates a symlink at `path` pointing to `target` (required with `symlinks`). */
  symlink?(target: string, path: string): Promise<void>;
  /** Creates a FIFO at `path` (required with `fifos`). */
  mkfifo?(path: string): Promise<void>;
  /** Starts another process holding the lock at `lockPath` (required with `crossProcess`). */
  spawnLockHolder?(lockPath: string): Promise<LockHolder>;
}

/** What the adapter's host can do, deciding which parts of the suite run. */
export interface FileSystemCapabilities {
  readonly symlinks: boolean;
  readonly fifos: boolean;
  readonly crossProcess: boolean;
}

const encoder = new TextEncoder();
const bytes = (text: string): Uint8Array => encoder.encode(text);
const text = (data: Uint8Array): string => new TextDecoder().decode(data);

const required = <A>(hook: A | undefined, name: string): A => {
  if (hook === undefined) throw new Error(`the fixture must provide ${name} for this capability`);
  return hook;
};

/** The reason of a failed effect, or a test failure if it succeeded. */
const failureReason = <A>(
  effect: Effect.Effect<A, { readonly reason: FsErrorReason; readonly path: string }>,
) => Effect.flip(effect).pipe(Effect.map((error) => error.reason));

const byPath = (entries: ReadonlyArray<WalkEntry>): Map<string, WalkEntry> =>
  new Map(entries.map((entry) => [entry.relativePath, entry]));

/**
 * Registers the contract tests for one adapter. `make` is called once per test and must
 * return a fresh empty `root`; `cleanup` is always called afterwards.
 */
export const runFileSystemContract = (
  name: string,
  make: () => Promise<FileSystemFixture>,
  capabilities: FileSystemCapabilities,
): void => {
  const withFixture = <A, E>(
    body: (fixture: FileSystemFixture) => Effect.Effect<A, E>,
  ): Effect.Effect<A, E> =>
    Effect.acquireUseRelease(Effect.promise(make), body, (fixture) =>
      Effect.promise(() => fixture.cleanup()),
    );

  /** Writes `files` (relative path → content) below the root, creating parents. */
  const seed = (fixture: FileSystemFixture, files: Readonly<Record<string, string>>) =>
    Effect.forEach(Object.entries(files), ([path, content]) => {
      const absolute = `${fixture.root}/${path}`;
      return fixture.fs
        .makeDirectory(absolute.slice(0, absolute.lastIndexOf("/")), 0o755)
        .pipe(
          Effect.zipRight(
            fixture.fs.writeFileAtomic(absolute, bytes(content), { mode: 0o644, durable: false }),
          ),
        );
    });

  describe(`FileSystem contract: ${name}`, () => {
    describe("walk", () => {
      it.live("lists nested files and directories with relative / paths", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            yield* seed(fixture, { "a/b/c.txt": "ccc", "a/d.md": "dd", "e.txt": "" });
            yield* fixture.fs.makeDirectory(`${fixture.root}/f/g`, 0o755);
            const entries = yield* fixture.fs.walk(fixture.root);
            const found = byPath(entries);
            expect([...found.keys()].sort()).toEqual([
              "a",
              "a/b",
              "a/b/c.txt",
              "a/d.md",
              "e.txt",
              "f",
              "f/g",
            ]);
            expect(entries).toHaveLength(7);
            expect(found.get("a")?.kind).toBe("directory");
            expect(found.get("a")?.size).toBe(0);
            expect(found.get("a/b/c.txt")).toMatchObject({ kind: "file", size: 3 });
            expect(found.get("e.txt")).toMatchObject({ kind: "file", size: 0 });
            expect(found.get("a/d.md")?.mtimeMs).toBeGreaterThan(0);
          }),
        ),
      );

      it.live("spells names exactly as stored, without Unicode normalisation", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            const decomposed = "cafe\u0301.md";
            const composed = "caf\u00e9 2.md";
            yield* seed(fixture, { [decomposed]: "x", [`dir/${composed}`]: "y" });
            const paths = (yield* fixture.fs.walk(fixture.root))
              .map((entry) => entry.relativePath)
              .sort();
            expect(paths).toEqual(["cafe\u0301.md", "dir", "dir/caf\u00e9 2.md"].sort());
          }),
        ),
      );

      it.live("does not descend into skipNames but reports them as directories", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            yield* seed(fixture, {
              ".git/HEAD": "ref",
              "sub/.git/config": "x",
              "sub/note.md": "n",
              "keep.md": "k",
            });
            const paths = (yield* fixture.fs.walk(fixture.root, new Set([".git"])))
              .map((entry) => `${entry.relativePath}:${entry.kind}`)
              .sort();
            expect(paths).toEqual(
              [
                ".git:directory",
                "keep.md:file",
                "sub/.git:directory",
                "sub/note.md:file",
                "sub:directory",
              ].sort(),
            );
          }),
        ),
      );

      it.live("fails NotFound for a missing root and NotADirectory for a file root", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            yield* seed(fixture, { "file.md": "x" });
            const missing = yield* Effect.flip(fixture.fs.walk(`${fixture.root}/missing`));
            expect(missing).toMatchObject({ _tag: "FsError", reason: "NotFound" });
            expect(missing.path).toContain("missing");
            expect(yield* failureReason(fixture.fs.walk(`${fixture.root}/file.md`))).toBe(
              "NotADirectory",
            );
          }),
        ),
      );

      it.live.runIf(capabilities.symlinks)(
        "reports symlinks as symlink and never follows them",
        () =>
          withFixture((fixture) =>
            Effect.gen(function* () {
              const symlink = required(fixture.symlink, "symlink");
              yield* seed(fixture, { "real/inner.md": "i", "note.md": "n" });
              yield* Effect.promise(() =>
                symlink(`${fixture.root}/real`, `${fixture.root}/linkdir`),
              );
              yield* Effect.promise(() =>
                symlink(`${fixture.root}/note.md`, `${fixture.root}/linkfile`),
              );
              yield* Effect.promise(() =>
                symlink(`${fixture.root}/nowhere`, `${fixture.root}/dangling`),
              );
              const found = byPath(yield* fixture.fs.walk(fixture.root));
              expect([...found.keys()].sort()).toEqual([
                "dangling",
                "linkdir",
                "linkfile",
                "note.md",
                "real",
                "real/inner.md",
              ]);
              expect(found.get("linkdir")?.kind).toBe("symlink");
              expect(found.get("linkfile")?.kind).toBe("symlink");
              expect(found.get("dangling")?.kind).toBe("symlink");
              expect(found.get("linkfile")?.size).toBe(0);
            }),
          ),
      );

      it.live.runIf(capabilities.fifos)("reports FIFOs as fifo", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            yield* Effect.promise(() => required(fixture.mkfifo, "mkfifo")(`${fixture.root}/pipe`));
            const entries = yield* fixture.fs.walk(fixture.root);
            expect(entries.map((entry) => [entry.relativePath, entry.kind])).toEqual([
              ["pipe", "fifo"],
            ]);
          }),
        ),
      );
    });

    describe("info", () => {
      it.live("describes files and directories and is None for missing paths", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            yield* seed(fixture, { "d/f.md": "hello" });
            const file = yield* fixture.fs.info(`${fixture.root}/d/f.md`);
            expect(Option.getOrThrow(file)).toMatchObject({ kind: "file", size: 5 });
            expect(Option.getOrThrow(yield* fixture.fs.info(`${fixture.root}/d`)).kind).toBe(
              "directory",
            );
            expect(Option.isNone(yield* fixture.fs.info(`${fixture.root}/missing`))).toBe(true);
            expect(
              Option.isNone(yield* fixture.fs.info(`${fixture.root}/d/f.md/below-a-file`)),
            ).toBe(true);
          }),
        ),
      );

      it.live.runIf(capabilities.symlinks)("describes a symlink itself, not its target", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            yield* seed(fixture, { "f.md": "hello" });
            yield* Effect.promise(() =>
              required(fixture.symlink, "symlink")(`${fixture.root}/f.md`, `${fixture.root}/l`),
            );
            expect(Option.getOrThrow(yield* fixture.fs.info(`${fixture.root}/l`)).kind).toBe(
              "symlink",
            );
          }),
        ),
      );
    });

    describe("readFile and readRange", () => {
      it.live("read regular files byte for byte", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            const content = new Uint8Array([
              0xef, 0xbb, 0xbf, 0x61, 0x0d, 0x0a, 0xe2, 0x82, 0xac, 0x00, 0xff,
            ]);
            yield* fixture.fs.writeFileAtomic(`${fixture.root}/b.bin`, content, {
              mode: 0o644,
              durable: true,
            });
            yield* seed(fixture, { "empty.md": "" });
            expect([...(yield* fixture.fs.readFile(`${fixture.root}/b.bin`))]).toEqual([
              ...content,
            ]);
            expect((yield* fixture.fs.readFile(`${fixture.root}/empty.md`)).length).toBe(0);
            expect([...(yield* fixture.fs.readRange(`${fixture.root}/b.bin`, 3, 4))]).toEqual([
              0x61, 0x0d, 0x0a, 0xe2,
            ]);
            expect((yield* fixture.fs.readRange(`${fixture.root}/b.bin`, 11, 0)).length).toBe(0);
          }),
        ),
      );

      // Adapters may read small and large files by different paths (node: synchronously
      // up to 1 MiB); both must return every byte.
      it.live("read files and ranges larger than 1 MiB whole", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            const size = 1024 * 1024 * 2 + 3;
            const content = new Uint8Array(size);
            for (let index = 0; index < size; index++) content[index] = (index * 7 + 3) % 251;
            const path = `${fixture.root}/large.bin`;
            yield* fixture.fs.writeFileAtomic(path, content, { mode: 0o644, durable: false });
            expect(Buffer.from(yield* fixture.fs.readFile(path)).equals(content)).toBe(true);
            const range = yield* fixture.fs.readRange(path, 5, size - 6);
            expect(Buffer.from(range).equals(content.subarray(5, size - 1))).toBe(true);
            expect(yield* failureReason(fixture.fs.readRange(path, 5, size))).toBe("Other");
          }),
        ),
      );

      it.live("fail with the right reasons", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            yield* seed(fixture, { "d/f.md": "0123456789" });
            const missing = yield* Effect.flip(fixture.fs.readFile(`${fixture.root}/d/missing.md`));
            expect(missing).toMatchObject({
              reason: "NotFound",
              path: `${fixture.root}/d/missing.md`,
            });
            expect(missing.message).not.toContain("\n    at ");
            expect(yield* failureReason(fixture.fs.readFile(`${fixture.root}/d/f.md/x`))).toBe(
              "NotADirectory",
            );
            expect(yield* failureReason(fixture.fs.readFile(`${fixture.root}/d`))).toBe(
              "IsADirectory",
            );
            expect(yield* failureReason(fixture.fs.readRange(`${fixture.root}/d/f.md`, 8, 5))).toBe(
              "Other",
            );
            expect(
              yield* failureReason(fixture.fs.readRange(`${fixture.root}/d/missing.md`, 0, 1)),
            ).toBe("NotFound");
          }),
        ),
      );

      it.live.runIf(capabilities.symlinks)("refuse symlinks, even to regular files", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            const symlink = required(fixture.symlink, "symlink");
            yield* seed(fixture, { "f.md": "secret" });
            yield* Effect.promise(() => symlink(`${fixture.root}/f.md`, `${fixture.root}/l`));
            yield* Effect.promise(() =>
              symlink(`${fixture.root}/nowhere`, `${fixture.root}/dangling`),
            );
            expect(yield* failureReason(fixture.fs.readFile(`${fixture.root}/l`))).toBe(
              "NotRegularFile",
            );
            expect(yield* failureReason(fixture.fs.readRange(`${fixture.root}/l`, 0, 1))).toBe(
              "NotRegularFile",
            );
            expect(yield* failureReason(fixture.fs.readFile(`${fixture.root}/dangling`))).toBe(
              "NotRegularFile",
            );
          }),
        ),
      );

      it.live.runIf(capabilities.fifos)("refuse a FIFO without blocking on it", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            yield* Effect.promise(() => required(fixture.mkfifo, "mkfifo")(`${fixture.root}/pipe`));
            // A blocking open would never return: no writer ever comes.
            const reason = yield* failureReason(fixture.fs.readFile(`${fixture.root}/pipe`)).pipe(
              Effect.timeoutFail({
                duration: "10 seconds",
                onTimeout: () => new Error("readFile blocked on a FIFO"),
              }),
            );
            expect(reason).toBe("NotRegularFile");
            const rangeReason = yield* failureReason(
              fixture.fs.readRange(`${fixture.root}/pipe`, 0, 1),
            ).pipe(
              Effect.timeoutFail({
                duration: "10 seconds",
                onTimeout: () => new Error("readRange blocked on a FIFO"),
              }),
            );
            expect(rangeReason).toBe("NotRegularFile");
          }),
        ),
      );
    });

    describe("writeFileAtomic", () => {
      it.live("creates and replaces content and leaves no temp file", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            const path = `${fixture.root}/note.md`;
            yield* fixture.fs.writeFileAtomic(path, bytes("first version, longer"), {
              mode: 0o644,
              durable: true,
            });
            yield* fixture.fs.writeFileAtomic(path, bytes("second"), {
              mode: 0o644,
              durable: false,
            });
            expect(text(yield* fixture.fs.readFile(path))).toBe("second");
            yield* fixture.fs.writeFileAtomic(path, bytes("third"), { mode: 0o644, durable: true });
            expect(text(yield* fixture.fs.readFile(path))).toBe("third");
            const paths = (yield* fixture.fs.walk(fixture.root)).map((entry) => entry.relativePath);
            expect(paths).toEqual(["note.md"]);
          }),
        ),
      );

      it.live("creates files with the requested mode (subject to the umask)", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            for (const mode of [0o600, 0o644, 0o640]) {
              const path = `${fixture.root}/m${mode.toString(8)}`;
              yield* fixture.fs.writeFileAtomic(path, bytes("x"), { mode, durable: false });
              expect((yield* Effect.promise(() => fixture.modeOf(path))).toString(8)).toBe(
                (mode & ~fixture.umask).toString(8),
              );
            }
            // Replacing gives the new file the requested mode, whatever the old one had.
            const path = `${fixture.root}/m600`;
            yield* fixture.fs.writeFileAtomic(path, bytes("y"), { mode: 0o644, durable: true });
            expect((yield* Effect.promise(() => fixture.modeOf(path))).toString(8)).toBe(
              (0o644 & ~fixture.umask).toString(8),
            );
          }),
        ),
      );

      it.live("accepts a name of 255 bytes", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            const name = `${"é".repeat(126)}abc`;
            expect(Buffer.byteLength(name)).toBe(255);
            yield* fixture.fs.writeFileAtomic(`${fixture.root}/${name}`, bytes("long"), {
              mode: 0o644,
              durable: true,
            });
            expect(text(yield* fixture.fs.readFile(`${fixture.root}/${name}`))).toBe("long");
            expect(
              (yield* fixture.fs.walk(fixture.root)).map((entry) => entry.relativePath),
            ).toEqual([name]);
          }),
        ),
      );

      it.live(
        "fails NotFound without a parent and IsADirectory over a directory, leaving nothing",
        () =>
          withFixture((fixture) =>
            Effect.gen(function* () {
              const options = { mode: 0o644, durable: true } as const;
              expect(
                yield* failureReason(
                  fixture.fs.writeFileAtomic(`${fixture.root}/no/x.md`, bytes("x"), options),
                ),
              ).toBe("NotFound");
              yield* seed(fixture, { "dir/inside.md": "i" });
              expect(
                yield* failureReason(
                  fixture.fs.writeFileAtomic(`${fixture.root}/dir`, bytes("x"), options),
                ),
              ).toBe("IsADirectory");
              const paths = (yield* fixture.fs.walk(fixture.root))
                .map((entry) => entry.relativePath)
                .sort();
              expect(paths).toEqual(["dir", "dir/inside.md"]);
            }),
          ),
      );

      it.live.runIf(capabilities.symlinks)(
        "replaces a symlink itself, never writing through it",
        () =>
          withFixture((fixture) =>
            Effect.gen(function* () {
              yield* seed(fixture, { "target.md": "untouched" });
              yield* Effect.promise(() =>
                required(fixture.symlink, "symlink")(
                  `${fixture.root}/target.md`,
                  `${fixture.root}/l.md`,
                ),
              );
              yield* fixture.fs.writeFileAtomic(`${fixture.root}/l.md`, bytes("new"), {
                mode: 0o644,
                durable: false,
              });
              expect(text(yield* fixture.fs.readFile(`${fixture.root}/target.md`))).toBe(
                "untouched",
              );
              expect(text(yield* fixture.fs.readFile(`${fixture.root}/l.md`))).toBe("new");
            }),
          ),
      );
    });

    describe("linkFile and syncDirectory", () => {
      it.live("gives a file a second name that outlives the first, refusing what exists", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            yield* seed(fixture, { "a/source.pack": "pack bytes", "b/taken.pack": "other" });
            const source = `${fixture.root}/a/source.pack`;
            const linked = `${fixture.root}/b/linked.pack`;
            yield* fixture.fs.linkFile(source, linked);
            yield* fixture.fs.syncDirectory(`${fixture.root}/b`);
            yield* fixture.fs.removeFile(source);
            expect(text(yield* fixture.fs.readFile(linked))).toBe("pack bytes");
            expect(
              yield* failureReason(fixture.fs.linkFile(linked, `${fixture.root}/b/taken.pack`)),
            ).toBe("Exists");
            expect(text(yield* fixture.fs.readFile(`${fixture.root}/b/taken.pack`))).toBe("other");
            expect(
              yield* failureReason(fixture.fs.linkFile(source, `${fixture.root}/b/again.pack`)),
            ).toBe("NotFound");
            expect(Option.isNone(yield* fixture.fs.info(`${fixture.root}/b/again.pack`))).toBe(
              true,
            );
            expect(yield* failureReason(fixture.fs.syncDirectory(`${fixture.root}/missing`))).toBe(
              "NotFound",
            );
          }),
        ),
      );
    });

    describe("removal and directories", () => {
      it.live("removeFile removes files and accepts missing ones", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            yield* seed(fixture, { "a.md": "a", "d/b.md": "b" });
            yield* fixture.fs.removeFile(`${fixture.root}/a.md`);
            yield* fixture.fs.removeFile(`${fixture.root}/a.md`);
            yield* fixture.fs.removeFile(`${fixture.root}/never.md`);
            expect(Option.isNone(yield* fixture.fs.info(`${fixture.root}/a.md`))).toBe(true);
            expect(yield* failureReason(fixture.fs.removeFile(`${fixture.root}/d`))).toBe(
              "IsADirectory",
            );
          }),
        ),
      );

      it.live.runIf(capabilities.symlinks)(
        "removeFile and removeTree remove links, not their targets",
        () =>
          withFixture((fixture) =>
            Effect.gen(function* () {
              const symlink = required(fixture.symlink, "symlink");
              yield* seed(fixture, { "keep/k.md": "k", "tree/t.md": "t" });
              yield* Effect.promise(() =>
                symlink(`${fixture.root}/keep/k.md`, `${fixture.root}/l`),
              );
              yield* Effect.promise(() =>
                symlink(`${fixture.root}/keep`, `${fixture.root}/tree/ldir`),
              );
              yield* fixture.fs.removeFile(`${fixture.root}/l`);
              yield* fixture.fs.removeTree(`${fixture.root}/tree`);
              const paths = (yield* fixture.fs.walk(fixture.root))
                .map((entry) => entry.relativePath)
                .sort();
              expect(paths).toEqual(["keep", "keep/k.md"]);
            }),
          ),
      );

      it.live(
        "makeDirectory creates parents, accepts existing directories and applies the mode",
        () =>
          withFixture((fixture) =>
            Effect.gen(function* () {
              const path = `${fixture.root}/p/q/r`;
              yield* fixture.fs.makeDirectory(path, 0o700);
              yield* fixture.fs.makeDirectory(path, 0o700);
              expect(Option.getOrThrow(yield* fixture.fs.info(path)).kind).toBe("directory");
              expect((yield* Effect.promise(() => fixture.modeOf(path))).toString(8)).toBe("700");
              yield* seed(fixture, { "file.md": "f" });
              expect(
                yield* failureReason(fixture.fs.makeDirectory(`${fixture.root}/file.md`, 0o755)),
              ).toBe("Exists");
              expect(
                yield* failureReason(
                  fixture.fs.makeDirectory(`${fixture.root}/file.md/sub`, 0o755),
                ),
              ).toBe("NotADirectory");
            }),
          ),
      );

      it.live("removeEmptyDirectory removes only empty directories", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            yield* seed(fixture, { "full/f.md": "f" });
            yield* fixture.fs.makeDirectory(`${fixture.root}/empty`, 0o755);
            yield* fixture.fs.removeEmptyDirectory(`${fixture.root}/empty`);
            yield* fixture.fs.removeEmptyDirectory(`${fixture.root}/full`);
            yield* fixture.fs.removeEmptyDirectory(`${fixture.root}/missing`);
            const paths = (yield* fixture.fs.walk(fixture.root))
              .map((entry) => entry.relativePath)
              .sort();
            expect(paths).toEqual(["full", "full/f.md"]);
          }),
        ),
      );

      it.live("removeTree removes a whole tree and accepts a missing one", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            yield* seed(fixture, { "t/a/b/c.md": "c", "t/d.md": "d", "other.md": "o" });
            yield* fixture.fs.removeTree(`${fixture.root}/t`);
            yield* fixture.fs.removeTree(`${fixture.root}/t`);
            const paths = (yield* fixture.fs.walk(fixture.root)).map((entry) => entry.relativePath);
            expect(paths).toEqual(["other.md"]);
          }),
        ),
      );

      it.live("realPath resolves existing paths and fails NotFound for missing ones", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            yield* seed(fixture, { "d/f.md": "f" });
            const root = yield* fixture.fs.realPath(fixture.root);
            expect(yield* fixture.fs.realPath(`${fixture.root}/d/../d/f.md`)).toBe(
              `${root}/d/f.md`,
            );
            expect(yield* failureReason(fixture.fs.realPath(`${fixture.root}/missing`))).toBe(
              "NotFound",
            );
            if (fixture.symlink !== undefined && capabilities.symlinks) {
              yield* Effect.promise(() =>
                required(fixture.symlink, "symlink")(`${fixture.root}/d`, `${fixture.root}/l`),
              );
              expect(yield* fixture.fs.realPath(`${fixture.root}/l/f.md`)).toBe(`${root}/d/f.md`);
            }
          }),
        ),
      );
    });

    describe("lock", () => {
      it.live("is exclusive until released, and release is idempotent", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            const path = `${fixture.root}/lock`;
            const release = yield* fixture.fs.lock(path, 1_000);
            const busy = yield* Effect.flip(fixture.fs.lock(path, 100));
            expect(busy).toMatchObject({ _tag: "FsError", reason: "Busy", path });
            yield* release;
            yield* release;
            expect(Option.isNone(yield* fixture.fs.info(path))).toBe(true);
            const again = yield* fixture.fs.lock(path, 0);
            yield* again;
          }),
        ),
      );

      it.live("makes a waiter wait for the holder, then succeed", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            const path = `${fixture.root}/lock`;
            const release = yield* fixture.fs.lock(path, 1_000);
            const waiter = yield* Effect.fork(fixture.fs.lock(path, 30_000));
            yield* Effect.sleep("150 millis");
            expect(waiter.unsafePoll()).toBeNull();
            yield* release;
            const releaseWaiter = yield* Fiber.join(waiter);
            yield* releaseWaiter;
          }),
        ),
      );

      it.live("never lets two fibers hold it at once", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            const path = `${fixture.root}/lock`;
            let holders = 0;
            let maxHolders = 0;
            // Many rounds of many short holds: a lock one fiber just released must never
            // look stale to another (that once let two fibers hold it under load).
            for (let round = 0; round < 30; round++)
              yield* Effect.forEach(
                Array.from({ length: 12 }, (_, index) => index),
                () =>
                  Effect.acquireUseRelease(
                    fixture.fs.lock(path, 30_000),
                    () =>
                      Effect.gen(function* () {
                        holders += 1;
                        maxHolders = Math.max(maxHolders, holders);
                        yield* Effect.sleep("1 millis");
                        holders -= 1;
                      }),
                    (release) => release,
                  ),
                { concurrency: "unbounded", discard: true },
              );
            expect(maxHolders).toBe(1);
          }),
        ),
      );

      it.live("removeDeadLock leaves a lock this process holds and removes it once released", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            const path = `${fixture.root}/lock`;
            const release = yield* fixture.fs.lock(path, 1_000);
            expect(yield* fixture.fs.removeDeadLock(path)).toBe(false);
            expect(Option.isSome(yield* fixture.fs.info(path))).toBe(true);
            yield* release;
            expect(yield* fixture.fs.removeDeadLock(path)).toBe(true);
            const again = yield* fixture.fs.lock(path, 0);
            yield* again;
          }),
        ),
      );

      /** `<root>/lock`, held by another process (required with `crossProcess`). */
      const heldElsewhere = (fixture: FileSystemFixture) => {
        const path = `${fixture.root}/lock`;
        return Effect.promise(() =>
          required(fixture.spawnLockHolder, "spawnLockHolder")(path),
        ).pipe(Effect.map((holder) => ({ path, holder })));
      };

      it.live("locks at different paths are independent", () =>
        withFixture((fixture) =>
          Effect.gen(function* () {
            const first = yield* fixture.fs.lock(`${fixture.root}/one`, 0);
            const second = yield* fixture.fs.lock(`${fixture.root}/two`, 0);
            yield* first;
            yield* second;
          }),
        ),
      );

      it.live.runIf(capabilities.crossProcess)(
        "a live holder in another process makes it fail Busy",
        () =>
          withFixture((fixture) =>
            Effect.gen(function* () {
              const { path, holder } = yield* heldElsewhere(fixture);
              const busy = yield* Effect.flip(fixture.fs.lock(path, 300)).pipe(
                Effect.ensuring(Effect.promise(() => holder.kill())),
              );
              expect(busy).toMatchObject({ reason: "Busy", path });
            }),
          ),
      );

      it.live.runIf(capabilities.crossProcess)(
        "a holder killed without releasing never blocks anyone",
        () =>
          withFixture((fixture) =>
            Effect.gen(function* () {
              const { path, holder } = yield* heldElsewhere(fixture);
              yield* Effect.promise(() => holder.kill());
              expect(Option.isSome(yield* fixture.fs.info(path))).toBe(true);
              const release = yield* fixture.fs.lock(path, 10_000);
              yield* release;
            }),
          ),
      );

      it.live.runIf(capabilities.crossProcess)(
        "removeDeadLock removes a killed holder's file, never a live holder's",
        () =>
          withFixture((fixture) =>
            Effect.gen(function* () {
              const { path, holder } = yield* heldElsewhere(fixture);
              const whileLive = yield* fixture.fs
                .removeDeadLock(path)
                .pipe(Effect.ensuring(Effect.promise(() => holder.kill())));
              expect(whileLive).toBe(false);
              expect(Option.isSome(yield* fixture.fs.info(path))).toBe(true);
              expect(yield* fixture.fs.removeDeadLock(path)).toBe(true);
              expect(Option.isNone(yield* fixture.fs.info(path))).toBe(true);
              // Nothing is left beside it either (no set-aside file).
              const left = yield* fixture.fs.walk(fixture.root);
              expect(left.map((entry) => entry.relativePath)).toEqual([]);
            }),
          ),
      );
    });
  });
};
