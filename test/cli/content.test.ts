/**
 * Issue 2, Done-when 4 through real `quire` processes: a binary file, invalid UTF-8, a
 * U+0000, a symlink (to a file, to a directory, dangling) and a FIFO in the working
 * copy each give INVALID_CONTENT naming the file with its reason; nothing is
 * published; the FIFO never blocks the call. Also invalid names, a case collision,
 * and the empty file (valid, published, 0 lines).
 */
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync, symlinkSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CliResult,
  type World,
  assertBuilt,
  commit,
  currentVersions,
  errorHead,
  expectedReport,
  fileLines,
  makeWorld,
  pull,
  readTree,
  storeFingerprint,
  write,
} from "../helpers/cli.js";

beforeAll(assertBuilt);

/** The first bytes of a real PNG: invalid UTF-8 and NULs. */
const pngBytes = Uint8Array.from([
  0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
  0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
]);

/** A FIFO that nobody ever opens for writing: reading it would block forever. */
const mkfifo = (file: string): void => {
  execFileSync("mkfifo", [file]);
};

/** Generous, so a hang fails the test (the child is killed) instead of blocking it. */
const fifoTimeout = { timeoutMs: 20_000 };

interface Case {
  readonly name: string;
  /** Creates the offending entries in the working copy; returns what to remove afterwards. */
  readonly make: (dir: string) => ReadonlyArray<string>;
  /** The exact `file:` lines of the error, in order. */
  readonly files: ReadonlyArray<string>;
}

const cases: ReadonlyArray<Case> = [
  {
    name: "a binary file",
    make: (dir) => (write(dir, "img.png", pngBytes), ["img.png"]),
    files: ["file: img.png · CONTAINS_NUL"],
  },
  {
    name: "invalid UTF-8 (Latin-1 text)",
    make: (dir) => (
      write(dir, "latin1.md", Uint8Array.from([0x63, 0x61, 0x66, 0xe9, 0x0a])),
      ["latin1.md"]
    ),
    files: ["file: latin1.md · NOT_UTF8"],
  },
  {
    name: "a U+0000 in otherwise valid text",
    make: (dir) => (write(dir, "notes/zero.md", "before\u0000after\n"), ["notes/zero.md"]),
    files: ["file: notes/zero.md · CONTAINS_NUL"],
  },
  {
    name: "a symlink to a file, below a directory",
    make: (dir) => {
      write(dir, "deep/er/placeholder.md", "x\n");
      symlinkSync("../../ok.md", `${dir}/deep/er/link.md`);
      return ["deep"];
    },
    files: ["file: deep/er/link.md · SYMLINK"],
  },
  {
    name: "a symlink to a directory (never followed)",
    make: (dir) => {
      write(dir, "real/inside.md", "x\n");
      symlinkSync("real", `${dir}/linked`);
      return ["real", "linked"];
    },
    files: ["file: linked · SYMLINK"],
  },
  {
    name: "a dangling symlink",
    make: (dir) => (symlinkSync("nowhere.md", `${dir}/dangling.md`), ["dangling.md"]),
    files: ["file: dangling.md · SYMLINK"],
  },
  {
    name: "a FIFO",
    make: (dir) => (mkfifo(`${dir}/pipe.md`), ["pipe.md"]),
    files: ["file: pipe.md · SPECIAL_FILE"],
  },
  {
    name: "invalid names (a colon, a Windows device name, a trailing dot)",
    make: (dir) => {
      write(dir, "a:b.md", "x\n");
      write(dir, "CON.txt", "x\n");
      write(dir, "sub/trailing.", "x\n");
      return ["a:b.md", "CON.txt", "sub"];
    },
    files: [
      "file: CON.txt · INVALID_NAME",
      "file: a:b.md · INVALID_NAME",
      "file: sub/trailing. · INVALID_NAME",
    ],
  },
  {
    name: "a case collision",
    make: (dir) => (write(dir, "A.md", "upper\n"), write(dir, "a.md", "lower\n"), ["A.md", "a.md"]),
    files: ["file: A.md · CASE_COLLISION", "file: a.md · CASE_COLLISION"],
  },
];

describe("invalid content in a working copy", () => {
  let world: World;
  let W: string;
  let setup: CliResult;
  let published: { readonly current: ReturnType<typeof currentVersions>; readonly store: string };
  beforeAll(async () => {
    world = makeWorld();
    W = world.copy("W");
    await pull(world, "W");
    write(W, "ok.md", "fine\n");
    write(W, "empty.md", "");
    setup = await commit(world, "W", "base");
    if (setup.code !== 0) throw new Error(`setup commit failed: ${setup.stderr}`);
    // A valid pending edit: without the offending entry, the commit would publish it.
    write(W, "ok.md", "fine\nand edited\n");
    published = { current: currentVersions(world), store: storeFingerprint(world) };
  });
  afterAll(() => world.cleanup());

  const expectInvalid = (result: CliResult, files: ReadonlyArray<string>) => {
    expect(result.code, result.stderr).toBe(1);
    expect(result.stdout).toBe("");
    expect(errorHead(result.stderr)).toBe("INVALID_CONTENT · INVALID_FILES");
    expect(fileLines(result.stderr)).toEqual(files);
    expect(result.stderr).toContain("\naction: EDIT_FILES\nretryable: false\n");
    // Nothing published: `current` and every stored object are as they were.
    expect(currentVersions(world)).toEqual(published.current);
    expect(storeFingerprint(world)).toBe(published.store);
  };

  // Each kind alone, in a fresh copy (its first pull scans it the same way commit does);
  // the cases run concurrently. The commit path is the all-at-once test below.
  it.concurrent.each(cases.map((c, index) => ({ ...c, copy: `case${index}` })))(
    "$name → INVALID_CONTENT naming the file; nothing written or published",
    async (c) => {
      const dir = world.copy(c.copy);
      write(dir, "valid.md", "valid\n");
      c.make(dir);
      const before = readTree(dir);
      expectInvalid(await pull(world, c.copy, fifoTimeout), c.files);
      // The refused pull wrote nothing into the copy (the notebook's ok.md is not there).
      expect([...readTree(dir).keys()]).toEqual([...before.keys()]);
    },
  );

  it("a commit meeting every kind at once names each file, sorted, publishes nothing, never blocks", async () => {
    const made = cases.flatMap((c) => (c.name === "a case collision" ? [] : c.make(W)));
    try {
      expectInvalid(
        // The FIFO is among them: a commit that opened it would hang and be killed.
        await commit(world, "W", "all at once", fifoTimeout),
        cases
          .filter((c) => c.name !== "a case collision")
          .flatMap((c) => c.files)
          .sort(),
      );
    } finally {
      for (const entry of made) rmSync(`${W}/${entry}`, { recursive: true, force: true });
    }
    // The working copy's own files were left alone.
    expect(readFileSync(`${W}/ok.md`, "utf8")).toBe("fine\nand edited\n");
  });

  it("an empty file is valid: published as a file with 0 lines", () => {
    // The setup commit published it next to ok.md (another copy pulling an empty file is
    // in scenarios.test.ts).
    expect(setup.stdout).toBe(
      expectedReport(1, [
        { path: "empty.md", insertions: 0, deletions: 0 },
        { path: "ok.md", insertions: 1, deletions: 0 },
      ]),
    );
    expect(setup.stdout).toContain("  empty.md  0\n");
    expect(setup.stdout).toMatch(/^2 files changed, 1 insertion\(\+\)$/m);
  });
});
