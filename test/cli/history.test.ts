/**
 * SPEC §11 through real `quire` processes: authors (`--author`, QUIRE_AUTHOR, the OS
 * user), `quire log` in text and JSON, its filters, and the history segments that keep
 * the log whole across checkpoints (and what a store from before them still shows).
 */
import {
  closeSync,
  existsSync,
  openSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { execFileSync, spawn } from "node:child_process";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  assertBuilt,
  binPath,
  commit,
  errorHead,
  makeWorld,
  pull,
  read,
  runCli,
  write,
  type World,
} from "../helpers/cli.js";

beforeAll(assertBuilt);

const worlds: World[] = [];
afterAll(() => {
  for (const world of worlds) world.cleanup();
});

const user = (() => {
  try {
    return os.userInfo().username;
  } catch {
    return process.env["USER"] ?? "unknown";
  }
})();

interface LoggedFile {
  path: string;
  change: string;
  insertions: number;
  deletions: number;
}
interface Logged {
  generation: number;
  time: string;
  author: { name: string; version: string };
  message: string;
  files: LoggedFile[];
}
interface LogJson {
  path: string;
  generation: number;
  publications: Logged[];
  unrecordedThrough?: number;
}

/** The documented shape of `quire status --json` (docs/history.md), key by key. */
const validStatus = (text: string): Record<string, unknown> => {
  expect(text.endsWith("\n") && !text.slice(0, -1).includes("\n")).toBe(true);
  const status = JSON.parse(text) as Record<string, unknown>;
  const keys = [
    "path",
    "generation",
    "remoteGeneration",
    "ahead",
    "changes",
    "markers",
    "invalid",
    "recoveryPending",
  ];
  expect(Object.keys(status).sort()).toEqual(
    [
      ...keys,
      ...("aheadAtLeast" in status ? ["aheadAtLeast"] : []),
      ...("held" in status ? ["held"] : []),
    ].sort(),
  );
  return status;
};

/** Checks the documented shape (docs/history.md) field by field, nothing more, nothing less. */
const validLog = (text: string): LogJson => {
  expect(text.endsWith("\n") && !text.slice(0, -1).includes("\n")).toBe(true);
  const log = JSON.parse(text) as LogJson;
  expect(Object.keys(log).sort()).toEqual(
    [
      "generation",
      "path",
      "publications",
      ...("unrecordedThrough" in log ? ["unrecordedThrough"] : []),
    ].sort(),
  );
  for (const p of log.publications) {
    expect(Object.keys(p).sort()).toEqual(["author", "files", "generation", "message", "time"]);
    expect(Number.isInteger(p.generation) && p.generation >= 1).toBe(true);
    expect(new Date(p.time).toISOString()).toBe(p.time);
    expect(Object.keys(p.author).sort()).toEqual(["name", "version"]);
    for (const f of p.files) {
      expect(Object.keys(f).sort()).toEqual(["change", "deletions", "insertions", "path"]);
      expect(["added", "modified", "deleted"]).toContain(f.change);
    }
  }
  return log;
};

const ok = async (run: Promise<{ code: number | null; stdout: string; stderr: string }>) => {
  const result = await run;
  expect(result.code, result.stderr).toBe(0);
  return result;
};

describe("history: authors and quire log", () => {
  it(
    "two copies, three authors, five commits: log lists them newest first with authors, messages and counts",
    { timeout: 180_000 },
    async () => {
      const world = makeWorld();
      worlds.push(world);
      const [one, two] = [world.copy("one"), world.copy("two")];
      await ok(pull(world, one));
      write(one, "notes/a.md", "1\n2\n3\n");
      write(one, "notes/b.md", "b1\nb2\n");
      await ok(runCli(world, ["commit", one, "-m", "alice starts", "--author", "alice"]));
      await ok(pull(world, two));
      write(two, "notes/a.md", "1\nTWO\n3\n");
      await ok(
        runCli(world, ["commit", two, "-m", "bob edits a\n\nwith a body", "--author", "bob"]),
      );
      write(one, "c.md", "c\n");
      await ok(commit(world, one, "carol adds c", { env: { QUIRE_AUTHOR: "carol" } }));
      await ok(pull(world, two));
      unlinkSync(path.join(two, "notes/b.md"));
      await ok(runCli(world, ["commit", two, "-m", "bob deletes b", "--author", "bob"]));
      await ok(pull(world, one));
      write(one, "notes/a.md", "1\nTWO\n3\n4\n");
      await ok(commit(world, one, "the OS user appends"));

      const json = validLog((await ok(runCli(world, ["log", one, "--json"]))).stdout);
      expect(json.path).toBe(one);
      expect(json.generation).toBe(5);
      expect(json.unrecordedThrough).toBeUndefined();
      expect(json.publications.map((p) => [p.generation, p.author.name, p.message])).toEqual([
        [5, "cli", "the OS user appends"],
        [4, "bob", "bob deletes b"],
        [3, "carol", "carol adds c"],
        [2, "bob", "bob edits a\n\nwith a body"],
        [1, "alice", "alice starts"],
      ]);
      expect(json.publications[0]?.author.version).toBe(user);
      expect(json.publications[1]?.author.version).toBe(`cli ${user}`);
      expect(json.publications.map((p) => p.files)).toEqual([
        [{ path: "notes/a.md", change: "modified", insertions: 1, deletions: 0 }],
        [{ path: "notes/b.md", change: "deleted", insertions: 0, deletions: 2 }],
        [{ path: "c.md", change: "added", insertions: 1, deletions: 0 }],
        [{ path: "notes/a.md", change: "modified", insertions: 1, deletions: 1 }],
        [
          { path: "notes/a.md", change: "added", insertions: 3, deletions: 0 },
          { path: "notes/b.md", change: "added", insertions: 2, deletions: 0 },
        ],
      ]);
      // The other copy sees the same history.
      expect(
        validLog((await ok(runCli(world, ["log", two, "--json"]))).stdout).publications,
      ).toEqual(json.publications);

      const text = (await ok(runCli(world, ["log", one, "-n", "2"]))).stdout;
      expect(text).toBe(
        [
          `generation 5  ${json.publications[0]?.time}  cli (${user})`,
          "    the OS user appends",
          "",
          "    M notes/a.md  +1",
          "",
          `generation 4  ${json.publications[1]?.time}  bob (cli ${user})`,
          "    bob deletes b",
          "",
          "    D notes/b.md  -2",
          "",
        ].join("\n"),
      );
      const short = (await ok(runCli(world, ["log", one, "--file", "notes/b.md"]))).stdout;
      expect(short.match(/^generation \d+/gm)).toEqual(["generation 4", "generation 1"]);
      const dir = validLog(
        (await ok(runCli(world, ["log", one, "--file", "notes/", "--json"]))).stdout,
      );
      expect(dir.publications.map((p) => p.generation)).toEqual([5, 4, 2, 1]);
      const full = (
        await ok(runCli(world, ["log", one, "--full", "--file", "notes/a.md", "-n", "2"]))
      ).stdout;
      expect(full).toContain("    bob edits a\n\n    with a body\n");
      expect((await ok(runCli(world, ["log", one, "-n", "2"]))).stdout).not.toContain(
        "with a body",
      );

      // show: the deleting publication, its header as the log's and its diff.
      const shown = (await ok(runCli(world, ["show", one, "4"]))).stdout;
      expect(shown).toBe(
        [
          `generation 4  ${json.publications[1]?.time}  bob (cli ${user})`,
          "    bob deletes b",
          "",
          "diff --git a/notes/b.md b/notes/b.md",
          "deleted file mode 100644",
          "--- a/notes/b.md",
          "+++ /dev/null",
          "@@ -1,2 +0,0 @@",
          "-b1",
          "-b2",
          "",
        ].join("\n"),
      );
      const shownJson = JSON.parse(
        (await ok(runCli(world, ["show", one, "2", "--json"]))).stdout,
      ) as Record<string, unknown>;
      expect(shownJson).toEqual({
        path: one,
        generation: 2,
        time: json.publications[3]?.time,
        author: { name: "bob", version: `cli ${user}` },
        message: "bob edits a\n\nwith a body",
        files: [
          {
            path: "notes/a.md",
            change: "modified",
            insertions: 1,
            deletions: 1,
            diff: "diff --git a/notes/a.md b/notes/a.md\n--- a/notes/a.md\n+++ b/notes/a.md\n@@ -1,3 +1,3 @@\n 1\n-2\n+TWO\n 3\n",
          },
        ],
      });
      const first = (await ok(runCli(world, ["show", one, "1", "notes/b.md"]))).stdout;
      expect(first).toContain("+++ b/notes/b.md");
      expect(first).not.toContain("notes/a.md");
      for (const gen of ["6", "0", "x", "02", "+2", "2.0"]) {
        const refused = await runCli(world, ["show", one, gen]);
        expect(refused.code, gen).toBe(gen === "6" ? 1 : 2);
      }

      // restore: the deleted file comes back as it was at generation 1; the next commit
      // publishes it.
      const restored = await ok(runCli(world, ["restore", one, "notes/b.md", "--from", "1"]));
      expect(restored.stdout).toBe(
        "restored from generation 1:\n  A notes/b.md\nquire commit publishes it\n",
      );
      expect(read(one, "notes/b.md")).toBe("b1\nb2\n");
      await ok(commit(world, one, "b is back"));
      const afterRestore = validLog(
        (await ok(runCli(world, ["log", one, "-n", "1", "--json"]))).stdout,
      );
      expect(afterRestore.publications[0]?.files).toEqual([
        { path: "notes/b.md", change: "added", insertions: 2, deletions: 0 },
      ]);
      // revert: generation 2 changed line 2; generation 5 appended line 4, which stays.
      expect(read(one, "notes/a.md")).toBe("1\nTWO\n3\n4\n");
      const reverted = await ok(runCli(world, ["revert", one, "2"]));
      expect(reverted.stdout).toBe(
        "generation 2 undone:\n  M notes/a.md\nquire commit publishes it\n",
      );
      expect(read(one, "notes/a.md")).toBe("1\n2\n3\n4\n");
      await ok(commit(world, one, "undo bob's edit"));
      expect((await ok(runCli(world, ["status", one, "--json"]))).stdout).toContain('"changes":[]');
      // A note deleted by mistake and not yet published comes back without --force:
      // nothing of it is replaced.
      unlinkSync(path.join(one, "notes", "a.md"));
      const undeleted = await ok(runCli(world, ["restore", one, "notes/a.md", "--from", "7"]));
      expect(undeleted.stdout).toBe(
        "restored from generation 7:\n  A notes/a.md\nquire commit publishes it\n",
      );
      expect(read(one, "notes/a.md")).toBe("1\n2\n3\n4\n");
      expect((await ok(runCli(world, ["status", one, "--json"]))).stdout).toContain('"changes":[]');
      // restore refuses to replace unpublished changes without --force.
      write(one, "notes/a.md", "mine\n");
      const refused = await runCli(world, ["restore", one, "notes", "--from", "1"]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain("INVALID_REQUEST · UNPUBLISHED_CHANGES");
      expect(read(one, "notes/a.md")).toBe("mine\n");
      const forced = await ok(
        runCli(world, ["restore", one, "notes/a.md", "--from", "1", "--force", "--json"]),
      );
      expect(JSON.parse(forced.stdout)).toEqual({
        path: one,
        generation: 1,
        files: [{ path: "notes/a.md", change: "modified" }],
        held: [],
      });
      expect(read(one, "notes/a.md")).toBe("1\n2\n3\n");
      // A path held by a symlink is refused (with --force too), never written through and
      // never "held" as if someone had saved it during the call.
      const nowhere = path.join(os.tmpdir(), `quire-nowhere-${process.pid}-${Date.now()}.md`);
      unlinkSync(path.join(one, "notes", "b.md"));
      symlinkSync(nowhere, path.join(one, "notes", "b.md"));
      for (const extra of [[], ["--force"]]) {
        const blocked = await runCli(world, [
          "restore",
          one,
          "notes/b.md",
          "--from",
          "1",
          ...extra,
        ]);
        expect(blocked.code, blocked.stdout + blocked.stderr).toBe(1);
        expect(blocked.stderr).toContain("INVALID_CONTENT · INVALID_FILES");
        expect(blocked.stderr).toContain("notes/b.md");
      }
      expect(existsSync(nowhere)).toBe(false);
      unlinkSync(path.join(one, "notes", "b.md"));
      // Its deletion is an unpublished change now: putting it back needs --force.
      await ok(runCli(world, ["restore", one, "notes/b.md", "--from", "1", "--force"]));
      expect(read(one, "notes/b.md")).toBe("b1\nb2\n");
      // A file brought back whose name equals a kept one's but for case is refused: on a
      // case-insensitive disk one would overwrite the other. (The directory restored whole
      // is fine: B.md did not exist at generation 1, so it goes.)
      renameSync(path.join(one, "notes", "b.md"), path.join(one, "notes", "B.md"));
      const clash = await runCli(world, ["restore", one, "notes/b.md", "--from", "1", "--force"]);
      expect(clash.code, clash.stdout + clash.stderr).toBe(1);
      expect(clash.stderr).toContain("INVALID_CONTENT · INVALID_FILES");
      expect(clash.stderr).toContain("file: notes/B.md · CASE_COLLISION");
      expect(clash.stderr).toContain("file: notes/b.md · CASE_COLLISION");
      expect(readdirSync(path.join(one, "notes")).sort()).toEqual(["B.md", "a.md"]);
      expect(read(one, "notes/a.md")).toBe("1\n2\n3\n");
      renameSync(path.join(one, "notes", "B.md"), path.join(one, "notes", "b.md"));
      // revert of a publication whose lines changed since: conflict markers, as a pull's.
      write(one, "notes/a.md", "1\nTWO again\n3\n");
      await ok(commit(world, one, "edit line 2 again"));
      const conflict = await runCli(world, ["revert", one, "2"]);
      expect(conflict.code).toBe(1);
      expect(conflict.stderr).toContain("CONTENT_CONFLICT · MERGE_CONFLICT");
      expect(conflict.stderr).toContain("notes/a.md");
      expect(read(one, "notes/a.md")).toContain("<<<<<<< local");
      // Run again before resolving: refused, and the blocks are not nested in new ones.
      const marked = read(one, "notes/a.md");
      const again = await runCli(world, ["revert", one, "2"]);
      expect(again.code).toBe(1);
      expect(again.stderr).toContain("CONTENT_CONFLICT · UNRESOLVED_MARKERS");
      expect(again.stderr).toMatch(/file: notes\/a\.md · MARKER_BLOCK · lines \d+-\d+/);
      expect(read(one, "notes/a.md")).toBe(marked);
    },
  );

  it(
    "a file argument that is not a notebook path is refused with the rule it breaks; ./F and F/ name F",
    { timeout: 120_000 },
    async () => {
      const world = makeWorld();
      worlds.push(world);
      const copy = world.copy("c");
      await ok(pull(world, copy));
      write(copy, "notes/a.md", "1\n");
      await ok(commit(world, copy, "one"));
      write(copy, "notes/a.md", "1\n2\n");
      await ok(commit(world, copy, "two"));
      const generations = async (file: string) =>
        validLog(
          (await ok(runCli(world, ["log", copy, "--file", file, "--json"]))).stdout,
        ).publications.map((p) => p.generation);
      expect(await generations("notes/a.md")).toEqual([2, 1]);
      expect(await generations("./notes/a.md")).toEqual([2, 1]);
      expect(await generations("./notes/")).toEqual([2, 1]);
      for (const args of [
        ["log", copy, "--file", "../x"],
        ["log", copy, "--file", "notes//a.md"],
        ["log", copy, "--file", "notes/../a.md"],
        ["show", copy, "2", "../x"],
        ["diff", copy, "notes/./a.md"],
        ["restore", copy, "../notes/a.md", "--from", "1"],
      ]) {
        const refused = await runCli(world, args);
        expect(refused.code, args.join(" ")).toBe(1);
        expect(refused.stderr, args.join(" ")).toContain("INVALID_REQUEST · INVALID_ARGUMENT");
        expect(refused.stderr, args.join(" ")).toContain("is not a notebook path");
        // Advice in the CLI's words: `quire log`, never the MCP tool `notes_log`.
        expect(refused.stderr, args.join(" ")).toContain("as quire log lists them");
        expect(refused.stderr, args.join(" ")).not.toContain("notes_");
        expect(refused.stdout, args.join(" ")).toBe("");
      }
      // The copy's top is no file: one error that says so (not "repaired", then "reserved").
      for (const args of [
        ["log", copy, "--file", "./"],
        ["diff", copy, "./"],
        ["show", copy, "2", "."],
        ["restore", copy, "./", "--from", "1"],
      ]) {
        const refused = await runCli(world, args);
        expect(refused.code, args.join(" ")).toBe(1);
        expect(refused.stderr, args.join(" ")).toContain(
          `"${args.includes(".") ? "." : "./"}" names the working copy's top, not a file in it`,
        );
        expect(refused.stderr, args.join(" ")).not.toContain("reserved");
        expect(refused.stderr, args.join(" ")).not.toContain("notes_");
      }
      // Nothing was written by the refused restores.
      expect(read(copy, "notes/a.md")).toBe("1\n2\n");
    },
  );

  it(
    "restore and revert refuse to bring back a file beside one that differs only in case",
    { timeout: 60_000 },
    async () => {
      const world = makeWorld();
      worlds.push(world);
      const copy = world.copy("c");
      await ok(pull(world, copy));
      write(copy, "k.md", "keep\n");
      write(copy, "x.md", "hi\n");
      await ok(commit(world, copy, "one"));
      unlinkSync(path.join(copy, "x.md"));
      await ok(commit(world, copy, "two"));
      write(copy, "X.md", "mine\n");
      await ok(commit(world, copy, "three"));
      for (const args of [
        ["revert", copy, "2"],
        ["restore", copy, "x.md", "--from", "1"],
        ["restore", copy, "x.md", "--from", "1", "--force"],
      ]) {
        const clash = await runCli(world, args);
        expect(clash.code, args.join(" ") + clash.stdout + clash.stderr).toBe(1);
        expect(clash.stderr).toContain("INVALID_CONTENT · INVALID_FILES");
        expect(clash.stderr).toContain("file: X.md · CASE_COLLISION");
        expect(clash.stderr).toContain("file: x.md · CASE_COLLISION");
        expect(
          readdirSync(copy)
            .filter((name) => !name.startsWith("."))
            .sort(),
        ).toEqual(["X.md", "k.md"]);
      }
      expect(read(copy, "X.md")).toBe("mine\n");
    },
  );

  it(
    "a conflicting revert lists every file it wrote, the clean ones too, in the text and with --json",
    { timeout: 60_000 },
    async () => {
      const world = makeWorld();
      worlds.push(world);
      const [one, two] = [world.copy("one"), world.copy("two")];
      await ok(pull(world, one));
      write(one, "a.md", "1\n2\n3\n");
      write(one, "b.md", "x\ny\n");
      await ok(commit(world, one, "one"));
      write(one, "a.md", "1\nTWO\n3\n");
      write(one, "b.md", "X\ny\n");
      await ok(commit(world, one, "two"));
      write(one, "a.md", "1\nTWO again\n3\n");
      await ok(commit(world, one, "three"));
      await ok(pull(world, two));

      const text = await runCli(world, ["revert", one, "2"]);
      expect(text.code, text.stderr).toBe(1);
      expect(text.stdout).toBe("");
      expect(text.stderr).toContain("CONTENT_CONFLICT · MERGE_CONFLICT");
      expect(text.stderr).toContain("file: a.md · TEXT_CONFLICT · lines 2-6");
      expect(text.stderr).toContain("changed: a.md · modified\nchanged: b.md · modified\n");
      expect(read(one, "b.md")).toBe("x\ny\n");

      const json = await runCli(world, ["revert", two, "2", "--json"]);
      expect(json.code, json.stderr).toBe(1);
      // With --json the error object on stdout is the whole answer (stderr: log lines only).
      expect(json.stderr).not.toContain("changed: b.md");
      expect(json.stdout.endsWith("\n") && !json.stdout.slice(0, -1).includes("\n")).toBe(true);
      const answer = JSON.parse(json.stdout) as Record<string, unknown>;
      expect(answer).toMatchObject({
        code: "CONTENT_CONFLICT",
        reason: "MERGE_CONFLICT",
        files: [{ path: "a.md", reason: "TEXT_CONFLICT", ranges: [{ start: 2, end: 6 }] }],
        changed: [
          { path: "a.md", change: "modified" },
          { path: "b.md", change: "modified" },
        ],
        held: [],
      });
      expect(read(two, "b.md")).toBe("x\ny\n");
    },
  );

  it(
    "restore refuses a file below a name the copy holds as a file; an empty directory where it goes gives way",
    { timeout: 60_000 },
    async () => {
      const world = makeWorld();
      worlds.push(world);
      const copy = world.copy("c");
      await ok(pull(world, copy));
      write(copy, "k.md", "keep\n");
      write(copy, "a/b.md", "old\n");
      write(copy, "p.md", "note\n");
      await ok(commit(world, copy, "one"));
      rmSync(path.join(copy, "a"), { recursive: true });
      unlinkSync(path.join(copy, "p.md"));
      await ok(commit(world, copy, "two"));
      write(copy, "a", "a file now\n");
      await ok(commit(world, copy, "three"));
      const listing = () =>
        readdirSync(copy)
          .filter((name) => !name.startsWith("."))
          .sort();
      for (const args of [
        ["restore", copy, "a/b.md", "--from", "1"],
        ["restore", copy, "a/b.md", "--from", "1", "--force"],
      ]) {
        const clash = await runCli(world, args);
        expect(clash.code, args.join(" ") + clash.stdout + clash.stderr).toBe(1);
        expect(clash.stderr).toContain("INVALID_CONTENT · INVALID_FILES");
        expect(clash.stderr).toContain("file: a · FILE_DIRECTORY_CLASH");
        expect(clash.stderr).toContain("file: a/b.md · FILE_DIRECTORY_CLASH");
        expect(listing()).toEqual(["a", "k.md"]);
      }
      expect(read(copy, "a")).toBe("a file now\n");
      // A directory holding a symlink where the file goes: refused, nothing written (it
      // answered OK with the file "held", as if someone had saved it during the call).
      mkdirSync(path.join(copy, "p.md", "empty", "deeper"), { recursive: true });
      symlinkSync(os.tmpdir(), path.join(copy, "p.md", "empty", "link"));
      for (const args of [
        ["restore", copy, "p.md", "--from", "1"],
        ["restore", copy, "p.md", "--from", "1", "--force"],
      ]) {
        const refused = await runCli(world, args);
        expect(refused.code, args.join(" ") + refused.stdout + refused.stderr).toBe(1);
        expect(refused.stderr).toContain("file: p.md/empty/link · SYMLINK");
      }
      unlinkSync(path.join(copy, "p.md", "empty", "link"));
      // A directory holding nothing but directories is no note: the restored one takes its place.
      const restored = await ok(runCli(world, ["restore", copy, "p.md", "--from", "1"]));
      expect(restored.stdout).toContain("A p.md");
      expect(restored.stdout).not.toContain("left as they were");
      expect(read(copy, "p.md")).toBe("note\n");
    },
  );

  it(
    "with --json every error is one JSON object on stdout: the error object, or a usage error's",
    { timeout: 120_000 },
    async () => {
      const world = makeWorld();
      worlds.push(world);
      const copy = world.copy("c");
      mkdirSync(copy);
      const oneLine = (stdout: string): Record<string, unknown> => {
        expect(stdout.endsWith("\n") && !stdout.slice(0, -1).includes("\n"), stdout).toBe(true);
        const parsed: unknown = JSON.parse(stdout);
        if (typeof parsed !== "object" || parsed === null) throw new Error(stdout);
        return Object.fromEntries(Object.entries(parsed));
      };
      // A domain error: the library's (and MCP's) error object, in the CLI's words.
      for (const args of [
        ["log", copy, "--json"],
        ["status", copy, "--json"],
        ["diff", copy, "--json"],
        ["show", copy, "1", "--json"],
        ["restore", copy, "a.md", "--from", "1", "--json"],
        ["revert", copy, "1", "--json"],
      ]) {
        const refused = await runCli(world, args);
        expect(refused.code, args.join(" ")).toBe(1);
        const error = oneLine(refused.stdout);
        expect(Object.keys(error), args.join(" ")).toEqual([
          "code",
          "reason",
          "action",
          "diagnosticId",
          "retryable",
          "message",
          "files",
          "readOnly",
          "writable",
        ]);
        expect(error).toMatchObject({
          code: "INVALID_REQUEST",
          reason: "NOT_PULLED",
          action: "PULL_FIRST",
          retryable: false,
          files: [],
          readOnly: [],
          writable: [],
        });
        expect(String(error["diagnosticId"])).toMatch(/^[0-9a-f]{16}$/);
        expect(String(error["message"])).not.toContain("notes_pull");
        // The text form is not printed as well.
        expect(refused.stderr).not.toContain("INVALID_REQUEST · NOT_PULLED");
      }
      await ok(pull(world, copy));
      const file = await runCli(world, ["log", copy, "--file", "../x", "--json"]);
      expect(file.code).toBe(1);
      expect(oneLine(file.stdout)).toMatchObject({
        code: "INVALID_REQUEST",
        reason: "INVALID_ARGUMENT",
        message: expect.stringContaining('"../x" is not a notebook path'),
      });
      // A usage error (exit 2) or a failed start: the same fields but those of a run.
      const usageFields = ["code", "reason", "action", "retryable", "message", "files"];
      for (const [args, message] of [
        [
          ["log", copy, "-n", "0", "--json"],
          "--max-count must be a whole number from 1 to 1000000",
        ],
        [["show", copy, "x", "--json"], "GEN must be a whole number from 1 to 999999999"],
        [["status", "--json"], "quire status needs a PATH"],
        [["log", copy, "--bogus", "--json"], 'unknown option "--bogus"'],
        [
          ["diff", copy, "--json", "--workspace-root", path.join(world.root, "nowhere")],
          "is not an existing directory",
        ],
      ] as const) {
        const refused = await runCli(world, args);
        expect(refused.code, args.join(" ")).toBe(2);
        const error = oneLine(refused.stdout);
        expect(Object.keys(error)).toEqual(usageFields);
        expect(error).toMatchObject({
          code: "INVALID_REQUEST",
          reason: "INVALID_ARGUMENT",
          action: "FIX_REQUEST",
          retryable: false,
          files: [],
        });
        expect(String(error["message"])).toContain(message);
        expect(refused.stderr).not.toContain("invalid configuration");
      }
      const blocked = path.join(world.root, "a-file");
      writeFileSync(blocked, "");
      const store = await runCli(world, ["status", copy, "--json", "--store", `file:${blocked}`]);
      expect(store.code).toBe(1);
      expect(oneLine(store.stdout)).toMatchObject({
        code: "STORAGE_FAILURE",
        reason: "STORE_UNAVAILABLE",
        action: "RETRY_LATER",
      });
      // Without --json, or for a command that has none, a usage error stays a line on stderr.
      for (const args of [
        ["log", copy, "-n", "0"],
        ["pull", copy, "--json"],
      ]) {
        const plain = await runCli(world, args);
        expect(plain.code).toBe(2);
        expect(plain.stdout).toBe("");
        expect(plain.stderr).toMatch(/^quire: invalid configuration: /);
      }
    },
  );

  it(
    "refuses bad log arguments and bad authors, and a copy never pulled",
    { timeout: 60_000 },
    async () => {
      const world = makeWorld();
      worlds.push(world);
      const copy = world.copy("c");
      for (const args of [
        ["log", copy, "-n", "0"],
        ["log", copy, "-n", "x"],
        ["log", copy, "--file", "/abs"],
        ["log", copy, "--author", "x"],
        ["pull", copy, "--json"],
        ["commit", copy, "-m", "m", "--author", "two\nlines"],
        ["commit", copy, "-m", "m", "--author", "  "],
        ["commit", copy, "-m", "m", "--author", "x".repeat(257)],
      ]) {
        const result = await runCli(world, args);
        expect(result.code, args.join(" ")).toBe(2);
        expect(result.stderr).toMatch(/^quire: invalid configuration: /);
      }
      const bad = await runCli(world, ["commit", copy, "-m", "m"], {
        env: { QUIRE_AUTHOR: "a\u001bb" },
      });
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain("QUIRE_AUTHOR must not contain control characters");
      await ok(runCli(world, ["pull", world.copy("other")]));
      const never = await runCli(world, ["log", copy]);
      expect(never.code).toBe(1);
      expect(never.stderr).toContain("NOT_PULLED");
      const empty = await ok(runCli(world, ["log", world.copy("other")]));
      expect(empty.stdout).toBe("no publications\n");
      // A directory inside a copy is no copy of its own: the answer names the copy it is
      // in, instead of "pull first" (a pull there is refused as nested).
      const other = world.copy("other");
      write(other, "d/x.md", "x\n");
      // So is a path inside the copy that does not exist (a typo, a deleted folder).
      for (const args of [
        ["status", path.join(other, "d")],
        ["log", path.join(other, "d")],
        ["commit", path.join(other, "d"), "-m", "m"],
        ["log", path.join(other, "d", "missing")],
        ["status", path.join(other, "gone", "deeper")],
        ["diff", path.join(other, "nothere.md")],
      ]) {
        const inside = await runCli(world, args);
        expect(inside.code, args.join(" ")).toBe(1);
        expect(inside.stderr).toContain("INVALID_REQUEST · NESTED_WORKING_COPY");
        expect(inside.stderr).toContain(`inside the working copy ${other}`);
      }
      expect(existsSync(path.join(other, "gone"))).toBe(false);
      // A missing directory outside every copy is still "never pulled".
      const nowhere = await runCli(world, ["status", world.copy("nowhere")]);
      expect(nowhere.stderr).toContain("INVALID_REQUEST · NOT_PULLED");
      // Its parent is no copy either, and the answer names the copy inside it.
      const above = await runCli(world, ["status", path.dirname(other)]);
      expect(above.code).toBe(1);
      expect(above.stderr).toContain("INVALID_REQUEST · NESTED_WORKING_COPY");
      expect(above.stderr).toContain(`contains the working copy ${other}`);
    },
  );

  it(
    "checkpoints keep the log whole (history segments); a store from before them says what it lacks",
    { timeout: 240_000 },
    async () => {
      const world = makeWorld();
      worlds.push(world);
      const copy = world.copy("c");
      const env = { QUIRE_CHECKPOINT_PACKS: "2" };
      await ok(pull(world, copy, { env }));
      const commits = 14;
      for (let i = 1; i <= commits; i++) {
        write(copy, `n${i % 3}.md`, `line ${i}\n`);
        await ok(commit(world, copy, `m${i}`, { env }));
      }
      const history = path.join(world.store, "objects", "history");
      expect(existsSync(history)).toBe(true);
      const log = validLog(
        (await ok(runCli(world, ["log", copy, "-n", "100", "--json"], { env }))).stdout,
      );
      expect(log.publications.map((p) => p.message)).toEqual(
        Array.from({ length: commits }, (_, i) => `m${commits - i}`),
      );
      // Checkpoints add generations of their own: the publications' are increasing, not dense.
      const gens = log.publications.map((p) => p.generation);
      expect([...gens].sort((a, b) => b - a)).toEqual(gens);
      expect(log.generation).toBeGreaterThan(commits);
      expect(log.unrecordedThrough).toBeUndefined();
      // The oldest content is pruned (one chain retained): a clear error; a recent one shows.
      const pruned = await runCli(world, ["show", copy, String(gens[gens.length - 1])]);
      expect(pruned.code).toBe(1);
      expect(pruned.stderr).toContain("INVALID_REQUEST · GENERATION_PRUNED");
      expect(pruned.stderr).toContain("quire log still lists its record");
      // A generation no publication had (a checkpoint's), pruned too: not a publication,
      // never "the log still lists its record" (it does not).
      const checkpointGeneration = Array.from({ length: gens[0] ?? 0 }, (_, i) => i + 1).find(
        (g) => !gens.includes(g),
      );
      expect(checkpointGeneration).toBeDefined();
      const notOne = await runCli(world, ["show", copy, String(checkpointGeneration)]);
      expect(notOne.code).toBe(1);
      expect(notOne.stderr).toContain("INVALID_REQUEST · INVALID_ARGUMENT");
      expect(notOne.stderr).toContain("a checkpoint's generation, not a publication");
      expect((await ok(runCli(world, ["show", copy, String(gens[0])]))).stdout).toContain(
        "    m14\n",
      );
      const limited = validLog(
        (await ok(runCli(world, ["log", copy, "-n", "5", "--json"]))).stdout,
      );
      expect(limited.publications.map((p) => p.message)).toEqual([
        "m14",
        "m13",
        "m12",
        "m11",
        "m10",
      ]);

      // A store written before history segments: the log lists what the packs still hold.
      rmSync(history, { recursive: true });
      const old = validLog((await ok(runCli(world, ["log", copy, "-n", "100", "--json"]))).stdout);
      expect(old.publications.length).toBeGreaterThan(0);
      expect(old.publications.length).toBeLessThan(commits);
      expect(old.publications.map((p) => p.message)).toEqual(
        Array.from({ length: old.publications.length }, (_, i) => `m${commits - i}`),
      );
      expect(old.unrecordedThrough).toBeGreaterThan(0);
      const text = (await ok(runCli(world, ["log", copy, "-n", "100"]))).stdout;
      expect(text).toContain(
        `publications up to generation ${old.unrecordedThrough} have no record`,
      );
      // And the next checkpoints start a history again, which says the same.
      for (let i = 1; i <= 4; i++) {
        write(copy, "again.md", `again ${i}\n`);
        await ok(commit(world, copy, `again ${i}`, { env }));
      }
      expect(existsSync(history)).toBe(true);
      const after = validLog(
        (await ok(runCli(world, ["log", copy, "-n", "100", "--json"]))).stdout,
      );
      expect(after.publications.slice(0, 4).map((p) => p.message)).toEqual([
        "again 4",
        "again 3",
        "again 2",
        "again 1",
      ]);
      expect(after.unrecordedThrough).toBeGreaterThan(0);
    },
  );

  it(
    "status: unpublished changes, marker blocks, files a commit refuses, and how far the notebook is ahead",
    { timeout: 120_000 },
    async () => {
      const world = makeWorld();
      worlds.push(world);
      const [one, two] = [world.copy("one"), world.copy("two")];
      await ok(pull(world, one));
      write(one, "keep.md", "k\n");
      write(one, "edit.md", "e\n");
      write(one, "gone.md", "g\n");
      await ok(commit(world, one, "seed"));
      await ok(pull(world, two));
      const clean = validStatus((await ok(runCli(world, ["status", two, "--json"]))).stdout);
      expect(clean).toMatchObject({ generation: 1, remoteGeneration: 1, ahead: 0, changes: [] });
      expect((await ok(runCli(world, ["status", two]))).stdout).toBe(
        "generation 1; up to date with the notebook\nnothing to commit\n",
      );
      // Others publish twice; this copy edits, adds, deletes, leaves markers and a symlink.
      for (const i of [1, 2]) {
        write(one, "keep.md", `k${i}\n`);
        await ok(commit(world, one, `more ${i}`));
      }
      write(two, "edit.md", "e\nmore\n");
      write(two, "new.md", "<<<<<<< local\na\n=======\nb\n>>>>>>> remote\n");
      unlinkSync(path.join(two, "gone.md"));
      symlinkSync("/etc/passwd", path.join(two, "link.md"));
      writeFileSync(path.join(two, "bin.md"), Buffer.from([0, 1, 2]));
      const status = validStatus((await ok(runCli(world, ["status", two, "--json"]))).stdout);
      expect(status).toEqual({
        path: two,
        generation: 1,
        remoteGeneration: 3,
        ahead: 2,
        changes: [
          { path: "edit.md", change: "modified" },
          { path: "gone.md", change: "deleted" },
          { path: "new.md", change: "added" },
        ],
        markers: [{ path: "new.md", ranges: [{ start: 1, end: 5 }] }],
        invalid: [
          { path: "bin.md", reason: "CONTAINS_NUL" },
          { path: "link.md", reason: "SYMLINK" },
        ],
        recoveryPending: false,
      });
      expect((await ok(runCli(world, ["status", two]))).stdout).toBe(
        [
          "generation 1; the notebook is 2 publications ahead (quire pull brings them in)",
          "unpublished changes:",
          "  M edit.md",
          "  D gone.md",
          "  A new.md",
          "unresolved conflict markers (resolve them before committing):",
          "  new.md  lines 1-5",
          "cannot be committed as they are:",
          "  bin.md  CONTAINS_NUL",
          "  link.md  SYMLINK",
          "",
        ].join("\n"),
      );
      // Nothing was published or written by looking.
      const again = validStatus((await ok(runCli(world, ["status", two, "--json"]))).stdout);
      expect(again).toEqual(status);
      expect(existsSync(path.join(two, "gone.md"))).toBe(false);
      const never = await runCli(world, ["status", world.copy("never")]);
      expect(never.code).toBe(1);
      expect(never.stderr).toContain("NOT_PULLED");
    },
  );

  it(
    "diff: git's unified diff of unpublished changes, --stat, --json, FILE filters",
    { timeout: 120_000 },
    async () => {
      const world = makeWorld();
      worlds.push(world);
      const copy = world.copy("c");
      await ok(pull(world, copy));
      const lines = Array.from({ length: 12 }, (_, i) => `line ${i + 1}\n`).join("");
      write(copy, "notes/a.md", lines);
      write(copy, "gone.md", "bye\n");
      await ok(commit(world, copy, "seed"));
      expect((await ok(runCli(world, ["diff", copy]))).stdout).toBe("");
      write(
        copy,
        "notes/a.md",
        lines.replace("line 2\n", "LINE 2\n").replace("line 11\n", "line 11\nadded\n"),
      );
      write(copy, "new.md", "fresh\nno newline");
      unlinkSync(path.join(copy, "gone.md"));
      const diff = (await ok(runCli(world, ["diff", copy]))).stdout;
      expect(diff).toBe(
        [
          "diff --git a/gone.md b/gone.md",
          "deleted file mode 100644",
          "--- a/gone.md",
          "+++ /dev/null",
          "@@ -1 +0,0 @@",
          "-bye",
          "diff --git a/new.md b/new.md",
          "new file mode 100644",
          "--- /dev/null",
          "+++ b/new.md",
          "@@ -0,0 +1,2 @@",
          "+fresh",
          "+no newline",
          "\\ No newline at end of file",
          "diff --git a/notes/a.md b/notes/a.md",
          "--- a/notes/a.md",
          "+++ b/notes/a.md",
          "@@ -1,5 +1,5 @@",
          " line 1",
          "-line 2",
          "+LINE 2",
          " line 3",
          " line 4",
          " line 5",
          "@@ -9,4 +9,5 @@ line 8",
          " line 9",
          " line 10",
          " line 11",
          "+added",
          " line 12",
          "",
        ].join("\n"),
      );
      const only = (await ok(runCli(world, ["diff", copy, "notes"]))).stdout;
      expect(only.startsWith("diff --git a/notes/a.md b/notes/a.md\n")).toBe(true);
      expect(only).not.toContain("gone.md");
      expect((await ok(runCli(world, ["diff", copy, "--stat"]))).stdout).toBe(
        [
          " gone.md    | 1 -",
          " new.md     | 2 ++",
          " notes/a.md | 3 ++-",
          " 3 files changed, 4 insertions(+), 2 deletions(-)",
          "",
        ].join("\n"),
      );
      const json = JSON.parse(
        (await ok(runCli(world, ["diff", copy, "--json", "new.md"]))).stdout,
      ) as Record<string, unknown>;
      expect(json).toEqual({
        path: copy,
        generation: 1,
        files: [
          {
            path: "new.md",
            change: "added",
            insertions: 2,
            deletions: 0,
            diff: "diff --git a/new.md b/new.md\nnew file mode 100644\n--- /dev/null\n+++ b/new.md\n@@ -0,0 +1,2 @@\n+fresh\n+no newline\n\\ No newline at end of file\n",
          },
        ],
      });
      const bad = await runCli(world, ["diff", copy, "/etc/passwd"]);
      expect(bad.code).toBe(2);
      const stat = await runCli(world, ["log", copy, "--stat"]);
      expect(stat.code).toBe(2);
    },
  );
});

describe("history: restore and revert never answer OK for what they did not do", () => {
  it(
    "revert refuses a generation the copy has not pulled; a FIFO or symlink where they would act is refused",
    { timeout: 120_000 },
    async () => {
      const world = makeWorld();
      worlds.push(world);
      const one = world.copy("one");
      const two = world.copy("two");
      await ok(pull(world, one));
      write(one, "f.md", "l1\nl2\n");
      await ok(commit(world, one, "g1"));
      await ok(pull(world, two));
      write(one, "f.md", "l1\nl2\nl3\n");
      await ok(commit(world, one, "g2"));
      // Two is at generation 1: generation 2 is not in its files, nothing there to undo.
      const early = await runCli(world, ["revert", two, "2"]);
      expect(early.code, early.stdout).toBe(1);
      expect(early.stderr).toContain("INVALID_REQUEST · PULL_NEEDED");
      expect(early.stderr).toContain("has not pulled generation 2 yet");
      expect(read(two, "f.md")).toBe("l1\nl2\n");
      await ok(pull(world, two));
      // A note generation 3 added is now a FIFO: reverting generation 3 would remove it.
      write(one, "w.md", "w\n");
      await ok(commit(world, one, "g3"));
      unlinkSync(path.join(one, "w.md"));
      execFileSync("mkfifo", [path.join(one, "w.md")]);
      const fifo = await runCli(world, ["revert", one, "3"]);
      expect(fifo.code, fifo.stdout).toBe(1);
      expect(fifo.stderr).toContain("INVALID_CONTENT · INVALID_FILES");
      expect(fifo.stderr).toContain("w.md");
      unlinkSync(path.join(one, "w.md"));
      // Restore of a folder holding a FIFO and a symlink that were not there at GEN.
      write(one, "dd/a.md", "a\n");
      await ok(commit(world, one, "g4"));
      execFileSync("mkfifo", [path.join(one, "dd", "f.md")]);
      symlinkSync(path.join(world.root, "outside.md"), path.join(one, "dd", "l.md"));
      for (const file of ["dd", "dd/l.md", "dd/f.md"]) {
        const refused = await runCli(world, ["restore", one, file, "--from", "4"]);
        expect(refused.code, `${file}: ${refused.stdout}`).toBe(1);
        expect(refused.stderr, file).toContain("INVALID_CONTENT · INVALID_FILES");
      }
      expect(existsSync(path.join(world.root, "outside.md"))).toBe(false);
      expect(read(one, "dd/a.md")).toBe("a\n");
      // A folder replaced by a symlink (quire never follows one): its notes are listed
      // as deleted and the link as what a commit refuses; a commit is refused for it.
      unlinkSync(path.join(one, "dd", "f.md"));
      unlinkSync(path.join(one, "dd", "l.md"));
      renameSync(path.join(one, "dd"), path.join(world.root, "dd-elsewhere"));
      symlinkSync(path.join(world.root, "dd-elsewhere"), path.join(one, "dd"));
      const status = validStatus((await ok(runCli(world, ["status", one, "--json"]))).stdout);
      expect(status["changes"]).toEqual([{ path: "dd/a.md", change: "deleted" }]);
      expect(status["invalid"]).toEqual([{ path: "dd", reason: "SYMLINK" }]);
      const commitRefused = await commit(world, one, "not with a link");
      expect(commitRefused.stderr).toContain("INVALID_CONTENT · INVALID_FILES");
    },
  );
});

describe("history: a refusal's advice names commands that run", () => {
  it(
    "restore of a FILE that exists nowhere points to quire commands and options the CLI accepts",
    { timeout: 120_000 },
    async () => {
      const world = makeWorld();
      worlds.push(world);
      const one = world.copy("one");
      await ok(pull(world, one));
      write(one, "f.md", "l1\n");
      await ok(commit(world, one, "g1"));
      const refused = await runCli(world, ["restore", one, "typo.md", "--from", "1"]);
      expect(refused.code, refused.stdout).toBe(1);
      expect(refused.stderr).toContain("typo.md");
      // Each `quire CMD [--option…]` the message suggests runs on this copy as written
      // (until 2026-12-06 it said "as quire log --stat lists them": log has no --stat).
      const lines = refused.stderr.split("\n");
      const message = lines[lines.indexOf("INVALID_REQUEST · INVALID_ARGUMENT") + 1] ?? "";
      const hints = [...message.matchAll(/quire ([a-z]+)((?: --[a-z-]+)*)/g)];
      expect(hints.length).toBeGreaterThan(0);
      for (const [hint, command, options] of hints) {
        const words = (options ?? "").split(" ").filter((word) => word !== "");
        const run = await runCli(world, [command ?? "", one, ...words]);
        expect(run.code, `${hint}: ${run.stderr}`).toBe(0);
      }
    },
  );
});

describe("history: a store that went back behind the copy", () => {
  it("log and show answer STORAGE_INTEGRITY/MANIFEST_INVALID, as status, restore and revert do, in text and --json", async () => {
    const world = makeWorld();
    worlds.push(world);
    const a = world.copy("a");
    await ok(pull(world, a));
    const versions = () =>
      readdirSync(path.join(world.store, "objects", "current@"))
        .filter((name) => /^\d+$/.test(name))
        .map(Number)
        .sort((x, y) => x - y);
    const latest = () => path.join(world.store, "objects", "current@", String(versions().at(-1)));
    write(a, "x.md", "one\n");
    await ok(commit(world, a, "one"));
    const first = readFileSync(latest());
    for (const text of ["two", "three"]) {
      write(a, "x.md", `${text}\n`);
      await ok(commit(world, a, text));
    }
    // The store restored from a backup taken at generation 1: a newer version of
    // `current` that holds the old manifest.
    writeFileSync(
      path.join(world.store, "objects", "current@", String((versions().at(-1) ?? 0) + 1)),
      first,
    );
    const status = await runCli(world, ["status", a]);
    expect(errorHead(status.stderr)).toBe("STORAGE_INTEGRITY · MANIFEST_INVALID");
    for (const args of [
      ["log", a],
      ["show", a, "1"],
      ["show", a, "3"],
    ]) {
      const text = await runCli(world, args);
      expect(text.code, `${args.join(" ")}: ${text.stdout}`).toBe(1);
      expect(text.stdout).toBe("");
      expect(errorHead(text.stderr)).toBe("STORAGE_INTEGRITY · MANIFEST_INVALID");
      const json = await runCli(world, [...args, "--json"]);
      expect(json.code).toBe(1);
      expect(JSON.parse(json.stdout)).toMatchObject({
        code: "STORAGE_INTEGRITY",
        reason: "MANIFEST_INVALID",
      });
    }
    expect(read(a, "x.md")).toBe("three\n");
  });
});

describe("history: a report that cannot be written (stdout on a full disk)", () => {
  /** `quire args` with stdout on /dev/full (every write fails with ENOSPC). */
  const toFullDisk = (world: World, args: ReadonlyArray<string>) => {
    const full = openSync("/dev/full", "w");
    return new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [binPath, ...args], {
        cwd: world.ws,
        env: world.env,
        stdio: ["ignore", full, "pipe"],
      });
      let stderr = "";
      child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
      child.on("error", reject);
      child.on("close", (code) => resolve({ code, stderr }));
    }).finally(() => closeSync(full));
  };

  it.runIf(existsSync("/dev/full"))(
    "restore > /dev/full restores, exits 74 (an output failure, not a bug) and says the restore is done",
    { timeout: 120_000 },
    async () => {
      const world = makeWorld();
      worlds.push(world);
      const copy = world.copy("c");
      await ok(pull(world, copy));
      write(copy, "f.md", "one\n");
      await ok(commit(world, copy, "g1"));
      write(copy, "f.md", "two\n");
      await ok(commit(world, copy, "g2"));
      const restored = await toFullDisk(world, ["restore", copy, "f.md", "--from", "1"]);
      expect(restored.code, restored.stderr).toBe(74);
      expect(read(copy, "f.md")).toBe("one\n");
      const lines = restored.stderr.split("\n").filter((line) => line.startsWith("quire:"));
      expect(lines, restored.stderr).toHaveLength(1);
      expect(lines[0]).toContain("cannot write the output (ENOSPC)");
      expect(lines[0]).toContain("the restore itself is done");
      expect(restored.stderr).not.toContain("internal error");
      // A read-only command: its output is incomplete, which is what it says.
      const logged = await toFullDisk(world, ["log", copy]);
      expect(logged.code, logged.stderr).toBe(74);
      expect(logged.stderr).toContain("cannot write the output (ENOSPC)");
      // An error report (--json puts it on stdout) that is lost is still said on stderr,
      // and the run keeps the error's status.
      const refused = await toFullDisk(world, ["show", copy, "99", "--json"]);
      expect(refused.code, refused.stderr).toBe(1);
      expect(refused.stderr).toContain("cannot write the output (ENOSPC)");
      // A restore refused (no generation 99) lost its error report: never said done.
      const failed = await toFullDisk(world, ["restore", copy, "f.md", "--from", "99", "--json"]);
      expect(failed.code, failed.stderr).toBe(1);
      expect(failed.stderr).toContain("cannot write the output (ENOSPC)");
      expect(failed.stderr).toContain("did not succeed");
      expect(failed.stderr).not.toContain("itself is done");
      expect(read(copy, "f.md")).toBe("one\n");
    },
  );
});

describe("history: a reader that went away (stdout a closed pipe, as `quire log | head`)", () => {
  /** `quire args` with stdout a pipe whose reader has gone before quire writes. */
  const toClosedPipe = (world: World, args: ReadonlyArray<string>) =>
    new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>(
      (resolve, reject) => {
        const child = spawn(process.execPath, [binPath, ...args], {
          cwd: world.ws,
          env: world.env,
          stdio: ["ignore", "pipe", "pipe"],
        });
        // The read end closes at once: every write of the child fails with EPIPE.
        child.stdout?.destroy();
        let stderr = "";
        child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
        child.on("error", reject);
        child.on("close", (code, signal) => resolve({ code, signal, stderr }));
      },
    );

  it(
    "is not a failure: log, status and a pull end as they would have (0), with no stack trace",
    { timeout: 120_000 },
    async () => {
      const world = makeWorld();
      worlds.push(world);
      const copy = world.copy("c");
      const other = world.copy("d");
      await ok(pull(world, copy));
      write(copy, "f.md", "one\n".repeat(2000));
      await ok(commit(world, copy, "g1"));
      write(copy, "f.md", "two\n".repeat(2000));
      await ok(commit(world, copy, "g2"));
      for (const args of [
        ["log", copy],
        ["show", copy, "2"],
        ["log", copy, "--json"],
        ["status", copy],
        ["mcp", "status"],
      ]) {
        const run = await toClosedPipe(world, args);
        expect(run.signal, args.join(" ")).toBeNull();
        expect(run.code, `${args.join(" ")}: ${run.stderr}`).toBe(0);
        expect(run.stderr).not.toMatch(/internal error|\n\s+at |EPIPE/);
      }
      // A command that changes files does its work whatever became of its report.
      const pulled = await toClosedPipe(world, ["pull", other]);
      expect(pulled.code, pulled.stderr).toBe(0);
      expect(read(other, "f.md")).toBe("two\n".repeat(2000));
    },
  );
});

describe("history: restoring a deleted file from a generation that never had it", () => {
  it(
    "says the file did not exist at GEN and stays deleted, not a bare 'restored already'",
    { timeout: 120_000 },
    async () => {
      const world = makeWorld();
      worlds.push(world);
      const copy = world.copy("c");
      await ok(pull(world, copy));
      write(copy, "old.md", "old\n");
      await ok(commit(world, copy, "g1"));
      write(copy, "new.md", "new\n");
      await ok(commit(world, copy, "g2"));
      unlinkSync(path.join(copy, "new.md"));
      const text = await ok(runCli(world, ["restore", copy, "new.md", "--from", "1"]));
      expect(text.stdout).not.toContain("restored from generation 1 already");
      expect(text.stdout).toContain("not in generation 1, so left deleted:\n  new.md\n");
      expect(existsSync(path.join(copy, "new.md"))).toBe(false);
      const json = await ok(runCli(world, ["restore", copy, "new.md", "--from", "1", "--json"]));
      expect(JSON.parse(json.stdout)).toMatchObject({ files: [], absentThen: ["new.md"] });
    },
  );
});
