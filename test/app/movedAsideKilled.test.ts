/**
 * A pull that moves a person's note aside (`~local`: the notebook has a folder of that
 * name, or a name equal under case folding) writes the note under its new name before it
 * removes the old one: a process killed at any moment of the rewrite leaves the note
 * under one name or both, never under none. A first pull (a directory never pulled
 * that already holds a person's notes) has no rewrite intent to bring a note back from,
 * so the order is all that keeps it.
 */
import { Effect } from "effect";
import { describe, expect, it } from "vitest";
import { writesAroundRemovals } from "../../src/app/usecases/workingCopy/rewrite.js";
import type { FileSystemService } from "../../src/ports/FileSystem.js";
import { hookedFileSystem, openOn } from "./memNotebook.js";
import { commit, pull, world, type World } from "../durability/harness.js";

const mine = {
  d: "my note d\n",
  "Notes.md": "my Notes\n",
  "dir/Plan.md": "my plan\n",
  "Shared/same.md": "my same\n",
};

/** A file system whose trees at or below `root` are killed once `allowed` files were written or removed. */
const killedAfter = (fs: FileSystemService, root: string, allowed: number) => {
  let done = 0;
  let killed = false;
  const service = hookedFileSystem(fs, (tree) => {
    const inCopy = tree.root === root || tree.root.startsWith(`${root}/`);
    const step = <A, E>(op: Effect.Effect<A, E>): Effect.Effect<A, E> =>
      Effect.suspend(() => {
        if (!inCopy) return op;
        if (done >= allowed) {
          killed = true;
          return Effect.interrupt;
        }
        done++;
        return op;
      });
    return {
      replaceFile: (path, bytes, expected, mode) =>
        step(tree.replaceFile(path, bytes, expected, mode)),
      removeFile: (path, expected) => step(tree.removeFile(path, expected)),
    };
  });
  return { service, wasKilled: () => killed };
};

/**
 * A publishes notes in the way of B's; B holds its person's notes, never pulled before
 * (`first`) or pulled before they were written.
 */
const setUp = async (pulled: "first" | "later"): Promise<World> => {
  const w = world();
  const a = w.open();
  await pull(a);
  if (pulled === "later") await pull(w.open(), "/ws/b");
  w.write("/ws/a/d/n.md", "theirs\n");
  w.write("/ws/a/notes.md", "their notes\n");
  w.write("/ws/a/Dir/other.md", "theirs too\n");
  w.write("/ws/a/shared/same.md", "their same\n");
  for (let n = 0; n < 5; n++) w.write(`/ws/a/x${n}.md`, `x${n}\n`);
  await commit(a);
  for (const [name, text] of Object.entries(mine)) w.write(`/ws/b/${name}`, text);
  return w;
};

const heldSomewhere = (w: World): void => {
  const texts = Object.values(w.files("/ws/b"));
  for (const text of Object.values(mine)) expect(texts).toContain(text);
};

describe("a note moved aside by a pull killed part way", () => {
  for (const pulled of ["first", "later"] as const)
    it(`is never lost, whichever file the ${pulled} pull was killed after`, async () => {
      let kills = 0;
      for (let allowed = 0; ; allowed++) {
        const w = await setUp(pulled);
        const killing = killedAfter(w.fs, "/ws/b", allowed);
        await Effect.runPromiseExit(openOn(w.store, killing.service).pull({ path: "/ws/b" }));
        if (!killing.wasKilled()) break;
        kills++;
        // On disk at once: a first pull has nothing else to bring it back from.
        heldSomewhere(w);
        // The next pull, with nothing killing it, still keeps every note of the person's.
        await Effect.runPromise(Effect.either(w.open().pull({ path: "/ws/b" })));
        heldSomewhere(w);
        expect(w.read("/ws/b/d/n.md")).toBe("theirs\n");
      }
      // Every file the rewrite writes or removes was a moment to be killed at.
      expect(kills).toBeGreaterThanOrEqual(11);
    });
});

describe("a note whose new name is taken while the pull moves it there", () => {
  it("keeps its old name, and the newcomer keeps the new one", async () => {
    const w = await setUp("first");
    const notebook = w.openHooked((tree) => ({
      replaceFile: (path, bytes, expected, mode) =>
        Effect.sync(() => {
          if (path === "d~local" && !w.exists("/ws/b/d~local"))
            w.write("/ws/b/d~local", "newcomer\n");
        }).pipe(Effect.zipRight(tree.replaceFile(path, bytes, expected, mode))),
    }));
    await Effect.runPromise(Effect.either(notebook.pull({ path: "/ws/b" })));
    expect(w.read("/ws/b/d")).toBe("my note d\n");
    expect(w.read("/ws/b/d~local")).toBe("newcomer\n");
    heldSomewhere(w);
  });
});

describe("writesAroundRemovals", () => {
  /**
   * The removals' scanned files (content `was <path>`) and the target: each write holds
   * the content of the removal `moves` names for it, or new content.
   */
  const order = (
    writes: ReadonlyArray<string>,
    removals: ReadonlyArray<string>,
    moves: Readonly<Record<string, string>>,
    replaced: ReadonlyArray<string> = [],
  ) => {
    const before = new Map(
      [...removals, ...replaced].map((path) => [path, { id: `was ${path}` }] as const),
    );
    const target = new Map(
      writes.map((path) => {
        const from = moves[path];
        return [path, from === undefined ? `new ${path}` : `was ${from}`] as const;
      }),
    );
    return writesAroundRemovals(writes, removals, before, target);
  };

  it("puts a note's new name before the removal of its old one", () => {
    expect(order(["d~local", "d/n.md"], ["d"], { "d~local": "d" })).toEqual({
      early: ["d~local"],
      late: ["d/n.md"],
    });
  });

  it("keeps late every move a removal stands in the way of, compared case-folded", () => {
    const writes = [
      "notes.md", // the removed name, spelt otherwise
      "a/b", // below a removed file
      "dir", // a directory above a removal
      "DIR/other.md", // below a directory above a removal, spelt otherwise
      "dir/new.md", // below it, spelt the same: free
      "Notes.md~local",
    ];
    const moves = Object.fromEntries(writes.map((path) => [path, "Notes.md"]));
    expect(order(writes, ["Notes.md", "A", "dir/Plan.md"], moves)).toEqual({
      early: ["dir/new.md", "Notes.md~local"],
      late: ["notes.md", "a/b", "dir", "DIR/other.md"],
    });
  });

  it("keeps late new content, a replaced file, and every write without removals", () => {
    expect(order(["fresh.md", "x"], ["z"], { x: "z" }, ["x"])).toEqual({
      early: [],
      late: ["fresh.md", "x"],
    });
    expect(order(["x", "y"], [], { x: "z" })).toEqual({ early: [], late: ["x", "y"] });
  });
});
