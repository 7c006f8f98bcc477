/**
 * The contract of the FileSystem port's rooted trees (SPEC §4.1), run against every
 * adapter and strategy: nothing outside the tree is ever created, changed or removed,
 * whatever is swapped or moved between opening a directory and using it, and a guarded
 * change never overwrites or removes a file that is no longer what the caller expects.
 */
import { describe, expect, it } from "@effect/vitest";
import { Effect, Option } from "effect";
import type {
  Expectation,
  FileSystemService,
  PathInfo,
  RootedTree,
} from "../../src/ports/FileSystem.js";

/** What a test does behind the port's back, on the adapter's own file system. */
export interface TreeHost {
  write(path: string, text: string): void;
  read(path: string): string;
  exists(path: string): boolean;
  mkdir(path: string): void;
  rename(from: string, to: string): void;
  symlink(target: string, path: string): void;
  /** Sets a path's permission bits, and reads them back (`st_mode & 0o7777`). */
  chmod(path: string, mode: number): void;
  mode(path: string): number;
  /** Every entry below `directory`, relative, sorted (links not followed). */
  list(directory: string): ReadonlyArray<string>;
  /** Opens `path` for writing in place, without truncating it. */
  openForWrite(path: string): number;
  /** Truncates the open file and writes `text` into it at its start. */
  overwrite(descriptor: number, text: string): void;
  close(descriptor: number): void;
  /** Creates a file whose name is the raw bytes given (absent where names must be text). */
  writeRawName?(directory: string, name: Uint8Array): void;
  /**
   * Creates the directories `segments` one below the other in `directory`, however long
   * the path gets, and a file `file` in the deepest when given (test/helpers/deepChain.ts).
   */
  makeChain(directory: string, segments: ReadonlyArray<string>, file?: string): void;
}

/** A fresh directory `base` holding `tree/` (the root under test) and `outside/`. */
export interface TreeFixture {
  readonly fs: FileSystemService;
  readonly base: string;
  readonly host: TreeHost;
  /**
   * Whether the tree reaches paths longer than the host lets a call name (by directory
   * handle, or on memfs, which has no such limit); checked paths on a real host cannot.
   */
  readonly longPaths: boolean;
  cleanup(): Promise<void>;
}

const encoder = new TextEncoder();
const bytes = (text: string): Uint8Array => encoder.encode(text);
const text = (data: Uint8Array): string => new TextDecoder().decode(data);

const expectOf = (info: PathInfo, sameContent?: (bytes: Uint8Array) => boolean): Expectation => ({
  _tag: "File",
  ino: info.ino,
  size: info.size,
  mtimeMs: info.mtimeMs,
  ...(sameContent === undefined ? {} : { sameContent }),
});

const absent: Expectation = { _tag: "Absent" };

/** The info of `path` in `tree`, or a test failure. */
const infoOf = (tree: RootedTree, path: string) =>
  tree.info(path).pipe(
    Effect.map((info) => {
      if (Option.isNone(info)) throw new Error(`${path} is missing`);
      return info.value;
    }),
  );

/** Registers the rooted-tree contract for one adapter (`make` returns a fresh fixture). */
export const runRootedTreeContract = (name: string, make: () => Promise<TreeFixture>): void => {
  const withTree = <A, E>(
    body: (fixture: TreeFixture, tree: RootedTree) => Effect.Effect<A, E>,
  ): Effect.Effect<A, E> =>
    Effect.acquireUseRelease(
      Effect.promise(make),
      (fixture) =>
        Effect.scoped(
          fixture.fs.openTree(`${fixture.base}/tree`).pipe(
            Effect.orDie,
            Effect.flatMap((tree) => body(fixture, tree)),
          ),
        ),
      (fixture) => Effect.promise(() => fixture.cleanup()),
    );

  describe(`rooted tree contract: ${name}`, () => {
    it.effect("walks without following symlinks and skips the names asked", () =>
      withTree((f, tree) =>
        Effect.gen(function* () {
          f.host.mkdir(`${f.base}/tree/d/e`);
          f.host.mkdir(`${f.base}/tree/.git`);
          f.host.write(`${f.base}/tree/d/e/a.md`, "a");
          f.host.write(`${f.base}/tree/.git/HEAD`, "x");
          f.host.write(`${f.base}/outside/secret.md`, "s");
          f.host.symlink(`${f.base}/outside`, `${f.base}/tree/link`);
          const { entries, undecodable } = yield* tree.walk(new Set([".git"]));
          const kinds = Object.fromEntries(entries.map((e) => [e.relativePath, e.kind]));
          expect(kinds).toEqual({
            d: "directory",
            "d/e": "directory",
            "d/e/a.md": "file",
            ".git": "directory",
            link: "symlink",
          });
          expect(undecodable).toEqual([]);
        }),
      ),
    );

    it.effect(
      "lists only real directories, never a file or a symlink, skipping the names asked",
      () =>
        withTree((f, tree) =>
          Effect.gen(function* () {
            f.host.mkdir(`${f.base}/tree/d/e`);
            f.host.mkdir(`${f.base}/tree/.git/objects`);
            f.host.write(`${f.base}/tree/d/a.md`, "a");
            f.host.mkdir(`${f.base}/outside/deep`);
            f.host.symlink(`${f.base}/outside`, `${f.base}/tree/link`);
            const listed = yield* tree.listDirectories(new Set([".git"]));
            expect([...listed].sort()).toEqual(["d", "d/e"]);
          }),
        ),
    );

    it.effect("lists a directory whose name holds a typed U+FFFD (valid UTF-8)", () =>
      withTree((f, tree) =>
        Effect.gen(function* () {
          f.host.mkdir(`${f.base}/tree/x\uFFFDy/z`);
          if (f.host.writeRawName !== undefined)
            f.host.writeRawName(`${f.base}/tree`, Uint8Array.from([0x61, 0xff, 0x62]));
          const listed = yield* tree.listDirectories();
          expect([...listed].sort()).toEqual(["x\uFFFDy", "x\uFFFDy/z"]);
        }),
      ),
    );

    it.effect("reports names that are not UTF-8 apart, lossily, without descending into them", () =>
      withTree((f, tree) =>
        Effect.gen(function* () {
          if (f.host.writeRawName === undefined) return;
          f.host.mkdir(`${f.base}/tree/d`);
          f.host.writeRawName(`${f.base}/tree/d`, Uint8Array.from([0x61, 0xff, 0x62]));
          f.host.write(`${f.base}/tree/d/ok.md`, "ok");
          const { entries, undecodable } = yield* tree.walk();
          expect(entries.map((e) => e.relativePath).sort()).toEqual(["d", "d/ok.md"]);
          expect(undecodable).toEqual([{ directory: "d", lossyName: "a\uFFFDb" }]);
        }),
      ),
    );

    it.effect("reads a file with the stats of the very file read, never a final symlink", () =>
      withTree((f, tree) =>
        Effect.gen(function* () {
          f.host.write(`${f.base}/tree/a.md`, "hello");
          f.host.symlink(`${f.base}/tree/a.md`, `${f.base}/tree/l.md`);
          const read = yield* tree.readFile("a.md", 1024);
          expect(text(read.bytes)).toBe("hello");
          expect(read.info).toEqual(yield* infoOf(tree, "a.md"));
          const link = yield* Effect.flip(tree.readFile("l.md", 1024));
          expect(link.reason).toBe("NotRegularFile");
          expect((yield* Effect.flip(tree.readFile("missing.md", 1024))).reason).toBe("NotFound");
          // A bound: exactly at it is read, one byte more is TooLarge (never read whole).
          expect(text((yield* tree.readFile("a.md", 5)).bytes)).toBe("hello");
          expect((yield* Effect.flip(tree.readFile("a.md", 4))).reason).toBe("TooLarge");
          f.host.write(`${f.base}/tree/big.md`, "x".repeat(3 * 1024 * 1024));
          expect((yield* Effect.flip(tree.readFile("big.md", 2 * 1024 * 1024))).reason).toBe(
            "TooLarge",
          );
        }),
      ),
    );

    it.effect("creates with an Absent guard, and never replaces a file that exists", () =>
      withTree((f, tree) =>
        Effect.gen(function* () {
          const made = yield* tree.replaceFile("new.md", bytes("mine"), absent, 0o644);
          expect(made._tag).toBe("Done");
          expect(f.host.read(`${f.base}/tree/new.md`)).toBe("mine");
          if (made._tag === "Done")
            expect(Option.getOrThrow(made.info).ino).toBe((yield* infoOf(tree, "new.md")).ino);
          f.host.write(`${f.base}/tree/saved.md`, "the person's");
          const refused = yield* tree.replaceFile("saved.md", bytes("mine"), absent, 0o644);
          expect(refused._tag).toBe("Changed");
          expect(f.host.read(`${f.base}/tree/saved.md`)).toBe("the person's");
          expect(f.host.list(`${f.base}/tree`)).toEqual(["new.md", "saved.md"]);
        }),
      ),
    );

    it.effect(
      "a replaced file keeps its permission bits (never setuid); a new one gets the mode",
      () =>
        withTree((f, tree) =>
          Effect.gen(function* () {
            f.host.write(`${f.base}/tree/private.md`, "mine");
            f.host.chmod(`${f.base}/tree/private.md`, 0o600);
            f.host.write(`${f.base}/tree/setuid.md`, "x");
            f.host.chmod(`${f.base}/tree/setuid.md`, 0o4755);
            for (const name of ["private.md", "setuid.md"]) {
              const scanned = yield* infoOf(tree, name);
              const done = yield* tree.replaceFile(name, bytes("merged"), expectOf(scanned), 0o644);
              expect(done._tag).toBe("Done");
            }
            expect(f.host.mode(`${f.base}/tree/private.md`)).toBe(0o600);
            expect(f.host.mode(`${f.base}/tree/setuid.md`)).toBe(0o755);
            const made = yield* tree.replaceFile("new.md", bytes("n"), { _tag: "Absent" }, 0o640);
            expect(made._tag).toBe("Done");
            expect(f.host.mode(`${f.base}/tree/new.md`) & 0o777 & ~0o022).toBe(0o640);
          }),
        ),
    );

    it.effect("replaces a file that is what was expected, and leaves a newer one alone", () =>
      withTree((f, tree) =>
        Effect.gen(function* () {
          f.host.write(`${f.base}/tree/a.md`, "scanned");
          const scanned = yield* infoOf(tree, "a.md");
          const done = yield* tree.replaceFile("a.md", bytes("merged"), expectOf(scanned), 0o644);
          expect(done._tag).toBe("Done");
          expect(f.host.read(`${f.base}/tree/a.md`)).toBe("merged");
          // A stale expectation: the file was saved again since.
          const written = yield* infoOf(tree, "a.md");
          f.host.write(`${f.base}/tree/a.md`, "saved by a person");
          const stale = yield* tree.replaceFile("a.md", bytes("ours"), expectOf(written), 0o644);
          expect(stale._tag).toBe("Changed");
          expect(f.host.read(`${f.base}/tree/a.md`)).toBe("saved by a person");
          // Same size and times cannot tell: the content check can.
          const now = yield* infoOf(tree, "a.md");
          const byContent = yield* tree.replaceFile(
            "a.md",
            bytes("ours"),
            expectOf(now, (seen) => text(seen) === "something else"),
            0o644,
          );
          expect(byContent._tag).toBe("Changed");
          expect(f.host.read(`${f.base}/tree/a.md`)).toBe("saved by a person");
          expect(f.host.list(`${f.base}/tree`)).toEqual(["a.md"]);
        }),
      ),
    );

    it.effect("removes only what was expected", () =>
      withTree((f, tree) =>
        Effect.gen(function* () {
          f.host.write(`${f.base}/tree/a.md`, "a");
          f.host.write(`${f.base}/tree/b.md`, "b");
          const a = yield* infoOf(tree, "a.md");
          const b = yield* infoOf(tree, "b.md");
          expect((yield* tree.removeFile("a.md", expectOf(a)))._tag).toBe("Done");
          f.host.write(`${f.base}/tree/b.md`, "b, edited");
          expect((yield* tree.removeFile("b.md", expectOf(b)))._tag).toBe("Changed");
          expect(f.host.list(`${f.base}/tree`)).toEqual(["b.md"]);
          expect(f.host.read(`${f.base}/tree/b.md`)).toBe("b, edited");
        }),
      ),
    );

    it.effect("hands back an in-place write that reached the file while it was replaced", () =>
      withTree((f, tree) =>
        Effect.gen(function* () {
          f.host.write(`${f.base}/tree/a.md`, "scanned");
          const scanned = yield* infoOf(tree, "a.md");
          const editor = f.host.openForWrite(`${f.base}/tree/a.md`);
          let checks = 0;
          // The first content check runs once the file is set aside: the editor writes then.
          const expectation = expectOf(scanned, (seen) => {
            checks++;
            const same = text(seen) === "scanned";
            if (checks === 1) f.host.overwrite(editor, "edited in place, longer");
            return same;
          });
          const outcome = yield* tree.replaceFile("a.md", bytes("ours"), expectation, 0o644);
          f.host.close(editor);
          expect(outcome._tag).toBe("Overtaken");
          if (outcome._tag === "Overtaken")
            expect(text(outcome.bytes)).toBe("edited in place, longer");
          expect(f.host.read(`${f.base}/tree/a.md`)).toBe("ours");
          expect(f.host.list(`${f.base}/tree`)).toEqual(["a.md"]);
        }),
      ),
    );

    it.effect(
      "hands back a write that reached a replaced file late, with its path in the subtree that asks",
      () =>
        withTree((f, tree) =>
          Effect.gen(function* () {
            f.host.mkdir(`${f.base}/tree/wc/wc`);
            f.host.write(`${f.base}/tree/wc/a.md`, "scanned\n");
            f.host.write(`${f.base}/tree/wc/wc/a.md`, "another note\n");
            const copy = yield* tree.subtree("wc");
            const scanned = yield* infoOf(copy, "a.md");
            const editor = f.host.openForWrite(`${f.base}/tree/wc/a.md`);
            const outcome = yield* copy.replaceFile(
              "a.md",
              bytes("ours\n"),
              expectOf(scanned),
              0o644,
            );
            expect(outcome._tag).toBe("Done");
            // Written after the replace's last check, through a descriptor opened before.
            f.host.overwrite(editor, "late edit\n");
            f.host.close(editor);
            const late = yield* copy.lateWrites();
            expect(late.map((l) => [l.path, text(l.bytes)])).toEqual([["a.md", "late edit\n"]]);
            expect(yield* copy.lateWrites()).toEqual([]);
            expect(f.host.read(`${f.base}/tree/wc/wc/a.md`)).toBe("another note\n");
          }),
        ),
    );

    it.effect(
      "hands back the set-aside file when a writer appending to the name created it meanwhile",
      () =>
        withTree((f, tree) =>
          Effect.gen(function* () {
            f.host.write(`${f.base}/tree/a.md`, "scanned\n");
            const scanned = yield* infoOf(tree, "a.md");
            // Checked once the file is set aside: the name is free, and `>>` creates it.
            const expectation = expectOf(scanned, (seen) => {
              f.host.write(`${f.base}/tree/a.md`, "appended\n");
              return text(seen) === "scanned\n";
            });
            const outcome = yield* tree.replaceFile("a.md", bytes("ours\n"), expectation, 0o644);
            expect(outcome._tag).toBe("Displaced");
            if (outcome._tag === "Displaced") expect(text(outcome.bytes)).toBe("scanned\n");
            // Nothing of ours was written, the newcomer is kept, nothing is left aside.
            expect(f.host.read(`${f.base}/tree/a.md`)).toBe("appended\n");
            expect(f.host.list(`${f.base}/tree`)).toEqual(["a.md"]);
          }),
        ),
    );

    it.effect(
      "hands back a set-aside file that changed when a newcomer took its name meanwhile",
      () =>
        withTree((f, tree) =>
          Effect.gen(function* () {
            for (const change of ["replace", "remove"] as const) {
              f.host.write(`${f.base}/tree/a.md`, "scanned\n");
              const now = yield* infoOf(tree, "a.md");
              const expectation = expectOf(now, () => {
                f.host.write(`${f.base}/tree/a.md`, "appended\n");
                return false; // not what was expected: it goes back, but the name is taken
              });
              const outcome =
                change === "replace"
                  ? yield* tree.replaceFile("a.md", bytes("ours\n"), expectation, 0o644)
                  : yield* tree.removeFile("a.md", expectation);
              expect(outcome._tag, change).toBe("Displaced");
              if (outcome._tag === "Displaced") expect(text(outcome.bytes)).toBe("scanned\n");
              expect(f.host.read(`${f.base}/tree/a.md`)).toBe("appended\n");
              // Never left aside, where a later scan would take it for a finished replace's.
              expect(f.host.list(`${f.base}/tree`)).toEqual(["a.md"]);
            }
          }),
        ),
    );

    it.effect(
      "writes nothing outside when a directory is swapped for a symlink after it was opened",
      () =>
        withTree((f, tree) =>
          Effect.gen(function* () {
            f.host.mkdir(`${f.base}/tree/d/empty`);
            f.host.write(`${f.base}/tree/d/x.md`, "x");
            f.host.write(`${f.base}/tree/d/y.md`, "y");
            f.host.write(`${f.base}/outside/x.md`, "outside x");
            f.host.write(`${f.base}/outside/y.md`, "outside y");
            f.host.mkdir(`${f.base}/outside/empty`);
            yield* tree.walk();
            const x = yield* infoOf(tree, "d/x.md");
            const y = yield* infoOf(tree, "d/y.md");
            const before = f.host.list(`${f.base}/outside`);
            f.host.rename(`${f.base}/tree/d`, `${f.base}/tree/d.old`);
            f.host.symlink(`${f.base}/outside`, `${f.base}/tree/d`);
            yield* Effect.either(tree.replaceFile("d/new.md", bytes("n"), absent, 0o644));
            yield* Effect.either(tree.replaceFile("d/x.md", bytes("x2"), expectOf(x), 0o644));
            yield* Effect.either(tree.removeFile("d/y.md", expectOf(y)));
            yield* Effect.either(tree.makeDirectories("d/sub/deeper", 0o755));
            yield* Effect.either(tree.removeEmptyDirectory("d/empty"));
            expect(f.host.list(`${f.base}/outside`)).toEqual(before);
            expect(f.host.read(`${f.base}/outside/x.md`)).toBe("outside x");
            expect(f.host.read(`${f.base}/outside/y.md`)).toBe("outside y");
          }),
        ),
    );

    it.effect("creates and changes nothing in a directory moved out of the tree", () =>
      withTree((f, tree) =>
        Effect.gen(function* () {
          f.host.mkdir(`${f.base}/tree/d`);
          f.host.write(`${f.base}/tree/d/x.md`, "x");
          yield* tree.walk();
          const x = yield* infoOf(tree, "d/x.md");
          f.host.rename(`${f.base}/tree/d`, `${f.base}/outside/d`);
          const created = yield* tree.replaceFile("d/new.md", bytes("n"), absent, 0o644);
          const replaced = yield* tree.replaceFile("d/x.md", bytes("x2"), expectOf(x), 0o644);
          expect(created._tag).toBe("Changed");
          expect(replaced._tag).toBe("Changed");
          expect(f.host.list(`${f.base}/outside/d`)).toEqual(["x.md"]);
          expect(f.host.read(`${f.base}/outside/d/x.md`)).toBe("x");
        }),
      ),
    );

    it.effect("makes directories one at a time and never through a symlink", () =>
      withTree((f, tree) =>
        Effect.gen(function* () {
          yield* tree.makeDirectories("a/b/c", 0o755);
          expect(f.host.list(`${f.base}/tree`)).toEqual(["a", "a/b", "a/b/c"]);
          f.host.symlink(`${f.base}/outside`, `${f.base}/tree/link`);
          const through = yield* Effect.flip(tree.makeDirectories("link/new/deeper", 0o755));
          expect(through.reason).toBe("NotADirectory");
          f.host.write(`${f.base}/tree/file`, "f");
          const below = yield* Effect.flip(tree.makeDirectories("file/sub", 0o755));
          expect(below.reason).toBe("NotADirectory");
          expect(f.host.list(`${f.base}/outside`)).toEqual([]);
        }),
      ),
    );

    it.effect("removes only empty real directories", () =>
      withTree((f, tree) =>
        Effect.gen(function* () {
          f.host.mkdir(`${f.base}/tree/empty`);
          f.host.mkdir(`${f.base}/tree/full`);
          f.host.write(`${f.base}/tree/full/a.md`, "a");
          f.host.mkdir(`${f.base}/outside/target`);
          f.host.symlink(`${f.base}/outside/target`, `${f.base}/tree/link`);
          yield* tree.removeEmptyDirectory("empty");
          yield* tree.removeEmptyDirectory("full");
          yield* tree.removeEmptyDirectory("link");
          yield* tree.removeEmptyDirectory("missing");
          expect(f.host.list(`${f.base}/tree`)).toEqual(["full", "full/a.md", "link"]);
          expect(f.host.exists(`${f.base}/outside/target`)).toBe(true);
        }),
      ),
    );

    it.effect("removes its own root only while it is empty, a subtree's too", () =>
      withTree((f, tree) =>
        Effect.gen(function* () {
          f.host.mkdir(`${f.base}/tree/copy`);
          f.host.write(`${f.base}/tree/copy/a.md`, "a");
          const copy = yield* tree.subtree("copy");
          yield* copy.removeEmptyDirectory("");
          expect(f.host.read(`${f.base}/tree/copy/a.md`)).toBe("a");
          f.host.rename(`${f.base}/tree/copy/a.md`, `${f.base}/outside/a.md`);
          yield* copy.removeEmptyDirectory("");
          expect(f.host.exists(`${f.base}/tree/copy`)).toBe(false);
          f.host.write(`${f.base}/tree/b.md`, "b");
          yield* tree.removeEmptyDirectory("");
          expect(f.host.read(`${f.base}/tree/b.md`)).toBe("b");
          f.host.rename(`${f.base}/tree/b.md`, `${f.base}/outside/b.md`);
          yield* tree.removeEmptyDirectory("");
          expect(f.host.exists(`${f.base}/tree`)).toBe(false);
          expect(f.host.exists(`${f.base}/outside`)).toBe(true);
        }),
      ),
    );

    it.effect(
      "never removes an empty folder elsewhere as its root, a folder above swapped for a symlink",
      () =>
        withTree((f) =>
          Effect.scoped(
            Effect.gen(function* () {
              f.host.mkdir(`${f.base}/outside/up/copy`);
              const copy = yield* f.fs.openTree(`${f.base}/outside/up/copy`).pipe(Effect.orDie);
              // The folder above the copy moves away, and a symlink to another folder, holding
              // an empty `copy` of its own, takes its name: the root's path now leads there.
              f.host.rename(`${f.base}/outside/up`, `${f.base}/outside/moved`);
              f.host.mkdir(`${f.base}/outside/elsewhere/copy`);
              f.host.symlink(`${f.base}/outside/elsewhere`, `${f.base}/outside/up`);
              yield* Effect.either(copy.removeEmptyDirectory(""));
              expect(f.host.exists(`${f.base}/outside/elsewhere/copy`)).toBe(true);
            }),
          ),
        ),
    );

    it.effect("puts a set-aside file back only under a free name", () =>
      withTree((f, tree) =>
        Effect.gen(function* () {
          f.host.write(`${f.base}/tree/.a.md.quire-1.aside`, "old");
          expect(yield* tree.restoreName(".a.md.quire-1.aside", "a.md")).toBe(true);
          expect(f.host.list(`${f.base}/tree`)).toEqual(["a.md"]);
          f.host.write(`${f.base}/tree/.a.md.quire-2.aside`, "older");
          expect(yield* tree.restoreName(".a.md.quire-2.aside", "a.md")).toBe(false);
          expect(f.host.read(`${f.base}/tree/a.md`)).toBe("old");
        }),
      ),
    );

    it.effect("a subtree sees paths relative to itself", () =>
      withTree((f, tree) =>
        Effect.gen(function* () {
          f.host.mkdir(`${f.base}/tree/copy`);
          const copy = yield* tree.subtree("copy");
          yield* copy.makeDirectories("n", 0o755);
          yield* copy.replaceFile("n/a.md", bytes("a"), absent, 0o644);
          expect(f.host.read(`${f.base}/tree/copy/n/a.md`)).toBe("a");
          expect((yield* copy.walk()).entries.map((e) => e.relativePath).sort()).toEqual([
            "n",
            "n/a.md",
          ]);
          expect(copy.root).toBe(`${tree.root}/copy`);
          f.host.symlink(`${f.base}/outside`, `${f.base}/tree/link`);
          expect((yield* Effect.flip(tree.subtree("link"))).reason).toBe("NotADirectory");
        }),
      ),
    );

    it.effect(
      "refuses a root whose path now goes through a symlink, and touches nothing there",
      () =>
        Effect.acquireUseRelease(
          Effect.promise(make),
          (f) =>
            Effect.gen(function* () {
              f.host.mkdir(`${f.base}/outside/nb`);
              f.host.write(`${f.base}/outside/nb/p.md`, "victim");
              // `up` stands where a real directory was when the root was resolved.
              f.host.symlink(`${f.base}/outside`, `${f.base}/up`);
              const refused = yield* Effect.flip(Effect.scoped(f.fs.openTree(`${f.base}/up/nb`)));
              expect(refused.reason).toBe("Moved");
              expect(f.host.read(`${f.base}/outside/nb/p.md`)).toBe("victim");
              // The directory itself, by its own canonical path, opens.
              const listed = yield* Effect.scoped(
                f.fs.openTree(`${f.base}/outside/nb`).pipe(Effect.flatMap((tree) => tree.walk())),
              );
              expect(listed.entries.map((e) => e.relativePath)).toEqual(["p.md"]);
            }),
          (f) => Effect.promise(() => f.cleanup()),
        ),
    );

    // A chain of 30 levels of 200-byte names (6,029 bytes): the first 20 levels are named
    // (4,019 bytes), the 10 below are longer than a notebook path may be.
    const segment = "s".repeat(200);
    const chain: ReadonlyArray<string> = Array.from({ length: 30 }, () => segment);
    const named = chain.slice(0, 20).join("/");

    it.effect(
      "walks below directories too deep to name without naming them, reporting all but directories",
      () =>
        withTree((f, tree) =>
          Effect.gen(function* () {
            f.host.makeChain(`${f.base}/tree`, chain, "bottom.md");
            f.host.makeChain(`${f.base}/tree`, chain.slice(0, 25), "middle.md");
            f.host.makeChain(`${f.base}/tree`, [...chain.slice(0, 22), ".git", "objects"]);
            f.host.makeChain(`${f.base}/tree`, [...chain.slice(0, 22), "empty", "deeper"]);
            if (!f.longPaths) {
              // Checked paths name every path whole: the host refuses one this long.
              expect((yield* Effect.flip(tree.walk(new Set([".git"])))).reason).toBe("NameTooLong");
              return;
            }
            const { entries, undecodable, tooDeep, tooDeepDirectories } = yield* tree.walk(
              new Set([".git"]),
            );
            // Every level up to the limit is an entry, named whole; none below it is.
            expect(entries.map((e) => e.relativePath).sort()).toEqual(
              chain.map((_, level) => chain.slice(0, level + 1).join("/")).slice(0, 20),
            );
            expect(entries.every((e) => e.kind === "directory")).toBe(true);
            expect(undecodable).toEqual([]);
            // Nothing is hidden: both files, by the deepest named directory and how far below.
            expect([...tooDeep].sort((a, b) => a.levels - b.levels)).toEqual([
              { directory: named, levels: 5, name: "middle.md" },
              { directory: named, levels: 10, name: "bottom.md" },
            ]);
            // Levels 21 to 30, .git (not entered), empty and deeper.
            expect(tooDeepDirectories).toBe(13);
          }),
        ),
    );

    it.effect("lists no directory too deep to name, and enters none", () =>
      withTree((f, tree) =>
        Effect.gen(function* () {
          f.host.makeChain(`${f.base}/tree`, chain, "bottom.md");
          const listed = yield* tree.listDirectories();
          expect([...listed].sort()).toEqual(
            chain.map((_, level) => chain.slice(0, level + 1).join("/")).slice(0, 20),
          );
        }),
      ),
    );
  });
};
