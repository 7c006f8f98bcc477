/**
 * The stat cache and saves that land in the clock tick of the version a scan read
 * (workingCopy.ts `trustedStamps`, the racy-git rule). On a file system with coarse
 * timestamps (ext4, xfs and tmpfs before Linux 6.13 tick every few ms; FAT keeps two
 * seconds) a second save of the same size in the same tick leaves size, times and inode
 * as they were. A stamp taken of the first save must then never be trusted by a later
 * scan, or the second save is never read: no commit publishes it, and the next pull that
 * changes the note replaces it.
 *
 * This machine's kernel may stamp every write apart (multigrain timestamps), so the test
 * makes the tick coarse itself: the node adapter's calls are interposed, and once the
 * second save is written every `stat` of that inode answers the first save's times.
 */
import * as nodeFs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Effect } from "effect";
import { afterEach, describe, expect, it } from "vitest";
import type { StatsLike } from "../../src/adapters/fsStats.js";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import * as nodeFileSystem from "../../src/adapters/nodeFileSystem.js";
import type { FileSystemService } from "../../src/ports/FileSystem.js";
import { hookedNotebook, openOn } from "./memNotebook.js";

const author = { name: "t", version: "1" };
const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) nodeFs.rmSync(dir, { recursive: true, force: true });
});

/** Times one inode answers, whatever is written to it, while set (a coarse clock tick). */
interface Tick {
  ino: number;
  mtimeMs: number;
  ctimeMs: number;
}

const inTick = (stats: StatsLike, tick: Tick | undefined): StatsLike =>
  tick === undefined || stats.ino !== tick.ino
    ? stats
    : {
        isFile: () => stats.isFile(),
        isDirectory: () => stats.isDirectory(),
        isSymbolicLink: () => stats.isSymbolicLink(),
        isFIFO: () => stats.isFIFO(),
        isSocket: () => stats.isSocket(),
        size: stats.size,
        mtimeMs: tick.mtimeMs,
        ctimeMs: tick.ctimeMs,
        ino: stats.ino,
        mode: stats.mode,
      };

const rest = "- [ ] tea\n- [ ] rice\n";
const unchecked = `- [ ] milk\n- [ ] eggs\n${rest}`;
const first = `- [x] milk\n- [ ] eggs\n${rest}`;
const second = `- [x] milk\n- [x] eggs\n${rest}`;

type Interpose = NonNullable<nodeFileSystem.NodeFileSystemOptions["interpose"]>;

/**
 * Alice's and Bob's copies of one store, Alice's through `interpose(note)` (her note's
 * path), both at the generation where her note is `unchecked` (saved a minute ago).
 */
const twoCopies = async (interpose: (note: string) => Interpose) => {
  const base = nodeFs.realpathSync(nodeFs.mkdtempSync(join(tmpdir(), "quire-racy-")));
  made.push(base);
  const ws = join(base, "ws");
  nodeFs.mkdirSync(ws);
  const note = join(ws, "alice", "note.md");
  const store = memoryStore.make();
  const open = (fs: FileSystemService, name: string) =>
    openOn(store, fs, {
      workspaceRoot: ws,
      notebookDirectory: join(ws, name),
      privateRoot: join(base, `private-${name}`),
      homeDirectory: join(base, "home"),
    });
  const alice = open(nodeFileSystem.make({ interpose: interpose(note) }), "alice");
  const bob = open(nodeFileSystem.make(), "bob");
  const [aliceDir, bobDir] = [join(ws, "alice"), join(ws, "bob")];
  await Effect.runPromise(alice.pull({ path: aliceDir }));
  nodeFs.writeFileSync(note, unchecked);
  const old = new Date(Date.now() - 60_000);
  nodeFs.utimesSync(note, old, old);
  await Effect.runPromise(alice.commit({ path: aliceDir, message: "list", author }));
  await Effect.runPromise(bob.pull({ path: bobDir }));
  return { alice, bob, aliceDir, bobDir, note };
};

/** The times of `note` as it is now, for the tick every later stat of it answers. */
const tickOf = (note: string): Tick => {
  const saved = nodeFs.statSync(note);
  return { ino: saved.ino, mtimeMs: saved.mtimeMs, ctimeMs: saved.ctimeMs };
};

/**
 * Alice's copy, whose note gets two saves of one size in one tick around the scan of her
 * next call: the first as the scan lists the note, the second right after the scan has
 * read the first.
 */
const twoSavesInOneTick = async () => {
  const at: { armed: boolean; tick?: Tick; reading?: number } = { armed: false };
  const copies = await twoCopies((note) => (calls) => ({
    ...calls,
    lstat: (path) => {
      if (at.armed && at.tick === undefined && path.endsWith("/note.md")) {
        nodeFs.writeFileSync(note, first);
        at.tick = tickOf(note);
      }
      return inTick(calls.lstat(path), at.tick);
    },
    fstat: (descriptor) => inTick(calls.fstat(descriptor), at.tick),
    open: (path, flags, mode) => {
      const descriptor = calls.open(path, flags, mode);
      if (at.armed && at.tick !== undefined && path.endsWith("/note.md")) at.reading = descriptor;
      return descriptor;
    },
    close: (descriptor) => {
      calls.close(descriptor);
      if (at.armed && descriptor === at.reading) {
        at.armed = false;
        // In place, the same size, in the same tick: nothing a stat shows changes.
        nodeFs.writeFileSync(note, second);
      }
    },
  }));
  at.armed = true;
  return { ...copies, tickUsed: () => at.tick };
};

/**
 * Alice's copy, whose next pull that writes her note is followed, in the same tick, by her
 * own save of the same size (checking "milk"); the call then goes on for a while (a slow
 * store), so that its end is well past the tick.
 */
const saveAfterPullWrite = async () => {
  const at: { armed: boolean; tick?: Tick } = { armed: false };
  const copies = await twoCopies((note) => (calls) => ({
    ...calls,
    lstat: (path) => inTick(calls.lstat(path), at.tick),
    fstat: (descriptor) => inTick(calls.fstat(descriptor), at.tick),
    // A replaced note is linked into place from its temp file (rootedTree.ts swapIn).
    link: (existing, path) => {
      calls.link(existing, path);
      if (!at.armed || !path.endsWith("/note.md")) return;
      at.armed = false;
      const written = nodeFs.readFileSync(note, "utf8");
      at.tick = tickOf(note);
      nodeFs.writeFileSync(note, written.replace("- [ ] milk", "- [x] milk"));
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
    },
  }));
  at.armed = true;
  return { ...copies, settle: () => at.tick !== undefined };
};

describe("the stat cache and saves it must not miss", () => {
  it("reads the second save again: a later commit publishes it, a pull keeps it", async () => {
    const { alice, bob, aliceDir, bobDir, note, tickUsed } = await twoSavesInOneTick();
    // The scan of this commit reads the first save; the second lands just after.
    const published = await Effect.runPromise(
      alice.commit({ path: aliceDir, message: "milk", author }),
    );
    expect(tickUsed()).toBeDefined();
    expect(published.files.map((file) => file.path)).toEqual(["note.md"]);
    expect(nodeFs.readFileSync(note, "utf8")).toBe(second);

    const status = await Effect.runPromise(alice.status({ path: aliceDir }));
    expect(status.changes.map((change) => change.path)).toEqual(["note.md"]);
    const again = await Effect.runPromise(
      alice.commit({ path: aliceDir, message: "eggs", author }),
    );
    expect(again.files.map((file) => file.path)).toEqual(["note.md"]);

    // Bob adds a line; Alice's pull merges it into her note, both saves kept.
    await Effect.runPromise(bob.pull({ path: bobDir }));
    nodeFs.appendFileSync(join(bobDir, "note.md"), "- [ ] bread\n");
    await Effect.runPromise(bob.commit({ path: bobDir, message: "bread", author }));
    await Effect.runPromise(alice.pull({ path: aliceDir }));
    expect(nodeFs.readFileSync(note, "utf8")).toBe(`${second}- [ ] bread\n`);
  });

  it("keeps the second save when the next call is a pull of another change", async () => {
    const { alice, bob, aliceDir, bobDir, note } = await twoSavesInOneTick();
    await Effect.runPromise(alice.commit({ path: aliceDir, message: "milk", author }));
    await Effect.runPromise(bob.pull({ path: bobDir }));
    nodeFs.appendFileSync(join(bobDir, "note.md"), "- [ ] bread\n");
    await Effect.runPromise(bob.commit({ path: bobDir, message: "bread", author }));
    // The pull must see the second save as Alice's own edit and merge, not replace it.
    await Effect.runPromise(alice.pull({ path: aliceDir }));
    expect(nodeFs.readFileSync(note, "utf8")).toBe(`${second}- [ ] bread\n`);
    const published = await Effect.runPromise(
      alice.commit({ path: aliceDir, message: "eggs", author }),
    );
    expect(published.files.map((file) => file.path)).toEqual(["note.md"]);
  });

  it("reads a save made in the tick of a file the pull wrote", async () => {
    const { alice, bob, aliceDir, bobDir, note, settle } = await saveAfterPullWrite();
    await Effect.runPromise(bob.pull({ path: bobDir }));
    nodeFs.appendFileSync(join(bobDir, "note.md"), "- [ ] bread\n");
    await Effect.runPromise(bob.commit({ path: bobDir, message: "bread", author }));
    // Alice's pull writes Bob's line; she checks "milk" in that very tick.
    await Effect.runPromise(alice.pull({ path: aliceDir }));
    expect(settle()).toBe(true);
    const checked = `- [x] milk\n- [ ] eggs\n${rest}- [ ] bread\n`;
    expect(nodeFs.readFileSync(note, "utf8")).toBe(checked);
    nodeFs.appendFileSync(join(bobDir, "note.md"), "- [ ] jam\n");
    await Effect.runPromise(bob.commit({ path: bobDir, message: "jam", author }));
    await Effect.runPromise(alice.pull({ path: aliceDir }));
    expect(nodeFs.readFileSync(note, "utf8")).toBe(`${checked}- [ ] jam\n`);
    const published = await Effect.runPromise(
      alice.commit({ path: aliceDir, message: "milk", author }),
    );
    expect(published.files.map((file) => file.path)).toEqual(["note.md"]);
  });

  it("keeps the path of a file it does not trust: a save caught between its delete and its write is no deletion", async () => {
    let deleteNow: (() => void) | undefined;
    let writeNow: (() => void) | undefined;
    const { notebook, vol, read } = hookedNotebook((tree) => ({
      // The save's delete as the scan walks; its write at the next look after that.
      walk: (skip) =>
        Effect.suspend(() => {
          if (deleteNow !== undefined) {
            deleteNow();
            deleteNow = undefined;
            writeNow = () => vol.writeFileSync("/ws/b/n.md", "one\ntwo\nthree\n");
          }
          return tree.walk(skip);
        }),
      info: (path) =>
        Effect.suspend(() => {
          writeNow?.();
          writeNow = undefined;
          return tree.info(path);
        }),
    }));
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    vol.writeFileSync("/ws/a/n.md", "one\ntwo\n");
    vol.writeFileSync("/ws/a/other.md", "other\n");
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "seed", author }));
    // b's pull writes n.md: its stamp is not trusted, its path stays in the cache.
    await Effect.runPromise(notebook.pull({ path: "/ws/b" }));
    deleteNow = () => vol.unlinkSync("/ws/b/n.md");
    const committed = await Effect.runPromise(
      notebook.commit({ path: "/ws/b", message: "three", author }),
    );
    expect(committed.files).toMatchObject([{ path: "n.md", insertions: 1, deletions: 0 }]);
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    expect(read("/ws/a/n.md")).toBe("one\ntwo\nthree\n");
  });
});
