/**
 * A save caught between its steps by a scan (workingCopy/savesInFlight.ts,
 * docs/working-copy.md "A save in progress"): vim's default save renames the note to
 * `note.md~` before it writes the new one and removes the backup after; a shell's `>`
 * truncates before it writes. A commit that scanned in between published the deletion
 * and the backup (or the empty note) to everyone. The scan now looks again once the save
 * moved on, and publishes what the person saved.
 */
import { Effect } from "effect";
import { describe, expect, it } from "vitest";
import { hookedNotebook } from "./memNotebook.js";

const author = { name: "test", version: "1" };

/**
 * Two copies on one store, whose person starts a save (`start`) just before a scan
 * walks the copy, and finishes it (`finish`) when quire next looks at a single path.
 */
const personSaving = () => {
  let armed: { readonly start: () => void; readonly finish: () => void } | undefined;
  let finishing: (() => void) | undefined;
  const { notebook, vol, read } = hookedNotebook((tree) => ({
    walk: (skip) =>
      Effect.suspend(() => {
        if (armed !== undefined) {
          armed.start();
          finishing = armed.finish;
          armed = undefined;
        }
        return tree.walk(skip);
      }),
    info: (path) =>
      Effect.suspend(() => {
        finishing?.();
        finishing = undefined;
        return tree.info(path);
      }),
  }));
  const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect);
  const setup = async () => {
    await run(notebook.pull({ path: "/ws/a" }));
    vol.writeFileSync("/ws/a/n.md", "one\ntwo\n");
    vol.writeFileSync("/ws/a/other.md", "other\n");
    await run(notebook.commit({ path: "/ws/a", message: "seed", author }));
    await run(notebook.pull({ path: "/ws/b" }));
  };
  const saveDuringNextScan = (start: () => void, finish: () => void) => {
    armed = { start, finish };
  };
  return { notebook, vol, read, run, setup, saveDuringNextScan };
};

describe("a save in progress as a commit scans", () => {
  it("vim's rename-then-write: the saved note is published, never its deletion nor the backup", async () => {
    const { notebook, vol, read, run, setup, saveDuringNextScan } = personSaving();
    await setup();
    saveDuringNextScan(
      () => vol.renameSync("/ws/a/n.md", "/ws/a/n.md~"),
      () => {
        vol.writeFileSync("/ws/a/n.md", "one\ntwo\nthree\n");
        vol.unlinkSync("/ws/a/n.md~");
      },
    );
    const committed = await run(notebook.commit({ path: "/ws/a", message: "m", author }));
    expect(committed.files.map((f) => f.path)).toEqual(["n.md"]);
    await run(notebook.pull({ path: "/ws/b" }));
    expect(
      vol
        .readdirSync("/ws/b")
        .map(String)
        .filter((name) => !name.startsWith(".")),
    ).toEqual(["n.md", "other.md"]);
    expect(read("/ws/b/n.md")).toBe("one\ntwo\nthree\n");
  });

  it("a truncate-then-write (`>`): the written note is published, not the empty one", async () => {
    const { notebook, vol, read, run, setup, saveDuringNextScan } = personSaving();
    await setup();
    saveDuringNextScan(
      () => vol.writeFileSync("/ws/a/n.md", ""),
      () => vol.writeFileSync("/ws/a/n.md", "rewritten\n"),
    );
    await run(notebook.commit({ path: "/ws/a", message: "m", author }));
    await run(notebook.pull({ path: "/ws/b" }));
    expect(read("/ws/b/n.md")).toBe("rewritten\n");
  });

  it("a write in two parts (caught after its first): the whole note is published, not its first part", async () => {
    const { notebook, vol, read, run, setup, saveDuringNextScan } = personSaving();
    await setup();
    // An in-place save (vim's backupcopy, a tool writing in chunks): truncated, the
    // first part written as the scan reads it, the rest a moment later.
    saveDuringNextScan(
      () => vol.writeFileSync("/ws/a/n.md", "one\ntwo\nth"),
      () => vol.appendFileSync("/ws/a/n.md", "ree\nfour\n"),
    );
    await run(notebook.commit({ path: "/ws/a", message: "m", author }));
    await run(notebook.pull({ path: "/ws/b" }));
    expect(read("/ws/b/n.md")).toBe("one\ntwo\nthree\nfour\n");
    expect(read("/ws/a/n.md")).toBe("one\ntwo\nthree\nfour\n");
  });

  it("a deletion that stays is published after one look (no endless rescans)", async () => {
    const { notebook, vol, run, setup, saveDuringNextScan } = personSaving();
    await setup();
    saveDuringNextScan(
      () => vol.unlinkSync("/ws/a/n.md"),
      () => undefined,
    );
    const committed = await run(notebook.commit({ path: "/ws/a", message: "m", author }));
    expect(committed.files.map((f) => f.path)).toEqual(["n.md"]);
    await run(notebook.pull({ path: "/ws/b" }));
    expect(vol.existsSync("/ws/b/n.md")).toBe(false);
  });

  it("a pull that scans mid-save keeps the note and merges the notebook's change into the saved one", async () => {
    const { notebook, vol, read, run, setup, saveDuringNextScan } = personSaving();
    await setup();
    vol.writeFileSync("/ws/b/n.md", "zero\none\ntwo\n");
    await run(notebook.commit({ path: "/ws/b", message: "b", author }));
    saveDuringNextScan(
      () => vol.renameSync("/ws/a/n.md", "/ws/a/n.md~"),
      () => {
        vol.writeFileSync("/ws/a/n.md", "one\ntwo\nthree\n");
        vol.unlinkSync("/ws/a/n.md~");
      },
    );
    // Read as a deletion, the notebook's change would be a DELETE_MODIFY conflict.
    await run(notebook.pull({ path: "/ws/a" }));
    expect(read("/ws/a/n.md")).toBe("zero\none\ntwo\nthree\n");
    expect(vol.existsSync("/ws/a/n.md~")).toBe(false);
  });
});

describe("a file stamped in the future (a clock running ahead)", () => {
  it("is no save in progress: the scan does not stop to look at it again", async () => {
    let looks = 0;
    const { notebook, vol } = hookedNotebook((tree) => ({
      info: (path) =>
        Effect.suspend(() => {
          if (path === "n.md") looks += 1;
          return tree.info(path);
        }),
    }));
    const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect);
    await run(notebook.pull({ path: "/ws/a" }));
    vol.writeFileSync("/ws/a/n.md", "one\n");
    const tomorrow = new Date(Date.now() + 24 * 60 * 60 * 1000);
    vol.utimesSync("/ws/a/n.md", tomorrow, tomorrow);
    looks = 0;
    const committed = await run(notebook.commit({ path: "/ws/a", message: "m", author }));
    expect(committed.files.map((f) => f.path)).toEqual(["n.md"]);
    expect(looks).toBe(0);
  });
});
