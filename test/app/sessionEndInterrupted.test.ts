/**
 * The end of a session whose process was killed in the middle of writing its working
 * copy (workingCopy/sessionEnd.ts): a first pull or a later pull stopped half way leaves
 * notes exactly as the notebook published them, and nothing of a person's, so the copy
 * is removed; any file of a person's (new, edited, or a published note deleted) keeps it.
 * Killed first pulls once left their session directories in the temporary directory
 * forever, as if they held unpublished work.
 */
import { Effect, Either } from "effect";
import { describe, expect, it } from "vitest";
import type { FailpointStage } from "../../src/app/usecases/shared/failpoints.js";
import { copyDirectory } from "../../src/app/usecases/workingCopy/privateState.js";
import { FsError } from "../../src/ports/FileSystem.js";
import { author, commit, crashes, pull, world, type World } from "../durability/harness.js";

const crashAt = (stage: FailpointStage) => ({
  failpoint: (reached: FailpointStage) => (reached === stage ? Effect.interrupt : Effect.void),
});

/** A world where copy A published `notes` (name → text); `a` commits more. */
const publishing = async (notes: Readonly<Record<string, string>>) => {
  const w = world();
  const a = w.open();
  await pull(a);
  for (const [name, text] of Object.entries(notes)) w.write(`/ws/a/${name}`, text);
  await commit(a);
  return { w, a };
};

const threeNotes = { "x.md": "x\n", "y.md": "y\n", "z.md": "z\n" };

/** Copy A publishes three notes; copy B's first pull is killed at `stage`. */
const killedFirstPull = async (stage: FailpointStage): Promise<World> => {
  const { w } = await publishing(threeNotes);
  await crashes(w.open(crashAt(stage)).pull({ path: "/ws/b" }));
  return w;
};

/** B pulled A's three notes; A then changes x, deletes y, adds w; B's pull of that is killed. */
const killedLaterPull = async (stage: FailpointStage): Promise<World> => {
  const { w, a } = await publishing(threeNotes);
  await pull(w.open(), "/ws/b");
  w.write("/ws/a/x.md", "x changed\n");
  w.remove("/ws/a/y.md");
  w.write("/ws/a/w.md", "w\n");
  await commit(a);
  await crashes(w.open(crashAt(stage)).pull({ path: "/ws/b" }));
  return w;
};

const discard = (w: World) => Effect.runPromise(w.open().discardIfPublished("/ws/b"));

describe("a session copy whose process was killed while writing it", () => {
  for (const stage of ["mid-materialisation", "before-state-record"] as const) {
    it(`is removed after a first pull killed at ${stage}`, async () => {
      const w = await killedFirstPull(stage);
      expect(Object.keys(w.files("/ws/b")).length).toBeGreaterThan(0);
      expect(await discard(w)).toBe(true);
      expect(w.files("/ws/b")).toEqual({});
    });

    it(`is removed after a later pull killed at ${stage}`, async () => {
      const w = await killedLaterPull(stage);
      expect(await discard(w)).toBe(true);
      expect(w.files("/ws/b")).toEqual({});
    });
  }

  it("takes the notebook's later changes cleanly when pulled again after a killed first pull", async () => {
    const w = await killedFirstPull("mid-materialisation");
    const a = w.open();
    w.write("/ws/a/x.md", "x\nmore\n");
    w.write("/ws/a/y.md", "y\nmore\n");
    w.write("/ws/a/z.md", "z\nmore\n");
    await commit(a);
    await pull(w.open(), "/ws/b");
    expect(w.files("/ws/b")).toEqual({
      "x.md": "x\nmore\n",
      "y.md": "y\nmore\n",
      "z.md": "z\nmore\n",
    });
  });

  it("is kept after a killed first pull when a person added or edited a file there", async () => {
    for (const change of [
      (w: World) => w.write("/ws/b/mine.md", "mine\n"),
      (w: World) => w.write("/ws/b/x.md", "x, edited\n"),
    ]) {
      const w = await killedFirstPull("mid-materialisation");
      change(w);
      expect(await discard(w)).toBe(false);
      expect(Object.keys(w.files("/ws/b"))).not.toEqual([]);
    }
  });

  it("is kept after a killed later pull when the copy held an edit or a deletion of its own", async () => {
    const edits: ReadonlyArray<(w: World) => void> = [
      // z is not changed by the pull: an edit of it is the copy's own.
      (w) => w.write("/ws/b/z.md", "z, edited\n"),
      // z is in both states: its absence is a deletion nobody published.
      (w) => w.remove("/ws/b/z.md"),
      (w) => w.write("/ws/b/mine.md", "mine\n"),
      // Neither the old nor the new content of x.
      (w) => w.write("/ws/b/x.md", "x, mine\n"),
    ];
    for (const edit of edits) {
      const w = await killedLaterPull("mid-materialisation");
      edit(w);
      expect(await discard(w)).toBe(false);
    }
  });

  it("is kept when the killed pull had merged an unpublished edit into the copy", async () => {
    const { w, a } = await publishing({ "x.md": "x\n" });
    await pull(w.open(), "/ws/b");
    w.write("/ws/b/z.md", "mine\n");
    w.write("/ws/a/y.md", "y\n");
    await commit(a);
    await crashes(w.open(crashAt("before-state-record")).pull({ path: "/ws/b" }));
    expect(await discard(w)).toBe(false);
    expect(w.read("/ws/b/z.md")).toBe("mine\n");
  });

  // A pull whose merge moves a person's note aside (`~local`) writes it under its new
  // name before it removes the old one (movedAsideKilled.test.ts): killed in between, the
  // note is there twice, and neither copy is published.
  for (const [kind, mine, theirs] of [
    ["a case collision", "Notes.md", "notes.md"],
    ["a file where the notebook has a directory", "d", "d/n.md"],
  ] as const) {
    it(`is kept when the killed pull was moving a note of the copy's own aside (${kind})`, async () => {
      const { w, a } = await publishing({ "x.md": "x\n" });
      await pull(w.open(), "/ws/b");
      w.write(`/ws/b/${mine}`, "unpublished\n");
      w.write(`/ws/a/${theirs}`, "theirs\n");
      await commit(a);
      await crashes(w.open(crashAt("mid-materialisation")).pull({ path: "/ws/b" }));
      expect(Object.values(w.files("/ws/b"))).toContain("unpublished\n");
      expect(await discard(w)).toBe(false);
      // The next call brings the note back.
      await Effect.runPromise(Effect.either(w.open().pull({ path: "/ws/b" })));
      expect(Object.values(w.files("/ws/b"))).toContain("unpublished\n");
    });
  }

  it("is removed when killed after the pull's intent, before any file was touched", async () => {
    const w = await killedLaterPull("mid-materialisation");
    // As it was before the flag: state without recoveryRequired, every file as the
    // baseline has it, the pull's intent (publication null) on disk.
    const stateFile = Object.keys(w.vol.toJSON()).find(
      (path) => path.endsWith("/state.json") && w.read(path).includes('"recoveryRequired":true'),
    );
    if (stateFile === undefined) throw new Error("no copy is recovering");
    w.write(
      stateFile,
      w.read(stateFile).replace('"recoveryRequired":true', '"recoveryRequired":false'),
    );
    w.write("/ws/b/x.md", "x\n");
    w.write("/ws/b/y.md", "y\n");
    w.remove("/ws/b/w.md");
    expect(w.exists(stateFile.replace("state.json", "intent.json"))).toBe(true);
    expect(await discard(w)).toBe(true);
  });

  it("is removed when a killed replace left the old note set aside, with published content", async () => {
    for (const alone of [false, true]) {
      const w = await killedLaterPull("before-state-record");
      // What a kill between setting the old x aside and unlinking it leaves; alone, the
      // kill came before the new x was linked in.
      w.write("/ws/b/.x.md.quire-0123456789ab1.aside", "x\n");
      if (alone) w.remove("/ws/b/x.md");
      expect(await discard(w)).toBe(true);
      expect(w.files("/ws/b")).toEqual({});
    }
  });

  it("is kept, the set-aside note with it, when the file at its name is a newcomer never published", async () => {
    const w = await killedLaterPull("before-state-record");
    // A kill after setting the old x aside, before linking the new one, freed the name;
    // an append (`>>`) then made x anew with only its line.
    w.write("/ws/b/.x.md.quire-0123456789ab1.aside", "x\n");
    w.write("/ws/b/x.md", "appended\n");
    expect(await discard(w)).toBe(false);
    expect(w.read("/ws/b/.x.md.quire-0123456789ab1.aside")).toBe("x\n");
    expect(w.read("/ws/b/x.md")).toBe("appended\n");
  });

  it("is kept when a file set aside holds content never published", async () => {
    const w = await killedLaterPull("before-state-record");
    w.write("/ws/b/.x.md.quire-0123456789ab1.aside", "x, mine\n");
    expect(await discard(w)).toBe(false);
    expect(w.read("/ws/b/.x.md.quire-0123456789ab1.aside")).toBe("x, mine\n");
  });

  describe("and whose removal of a published copy was itself stopped part way", () => {
    /** B pulled three published notes and is settled on them. */
    const settled = async () => {
      const { w, a } = await publishing(threeNotes);
      await pull(w.open(), "/ws/b");
      return { w, a, copyDir: copyDirectory("/private", "/ws/b", w.store.identity) };
    };

    /** A notebook on `w` whose removal of a working copy fails on z.md. */
    const failingRemoval = (w: World) => {
      return w.openHooked((tree) => ({
        // x.md and y.md go; the removal of z.md fails (EACCES).
        removeFile: (path, expected) =>
          path !== "z.md"
            ? tree.removeFile(path, expected)
            : Effect.fail(new FsError({ reason: "Other", path, message: "EACCES" })),
      }));
    };

    it("is removed by a later judgement: the notes it removed are no edit", async () => {
      const { w, copyDir } = await settled();
      const stopped = await Effect.runPromise(
        Effect.either(failingRemoval(w).discardIfPublished("/ws/b")),
      );
      expect(Either.isLeft(stopped)).toBe(true);
      expect(w.files("/ws/b")).toEqual({ "z.md": "z\n" });
      expect(await discard(w)).toBe(true);
      expect(w.files("/ws/b")).toEqual({});
      expect(w.exists(copyDir)).toBe(false);
    });

    it("reads as never pulled: a pull brings the removed notes back, and nothing is unpublished", async () => {
      const { w, a } = await settled();
      await Effect.runPromise(Effect.either(failingRemoval(w).discardIfPublished("/ws/b")));
      const b = w.open();
      // A commit asks for a pull first, rather than publishing the removed notes' absence.
      const refused = await Effect.runPromise(
        Effect.either(b.commit({ path: "/ws/b", message: "m", author })),
      );
      expect(Either.isLeft(refused) && refused.left.reason).toBe("NOT_PULLED");
      await pull(b, "/ws/b");
      expect(w.files("/ws/b")).toEqual(threeNotes);
      w.write("/ws/b/x.md", "x edited\n");
      await commit(b, "/ws/b");
      await pull(a);
      expect(w.files("/ws/a")).toEqual({ ...threeNotes, "x.md": "x edited\n" });
      // A deletion made since is the copy's own again: the copy is kept.
      w.remove("/ws/b/y.md");
      expect(await discard(w)).toBe(false);
    });

    it("takes the notebook's later changes cleanly on its next pull", async () => {
      const { w, a } = await settled();
      await Effect.runPromise(Effect.either(failingRemoval(w).discardIfPublished("/ws/b")));
      w.write("/ws/a/x.md", "x\nmore\n");
      await commit(a);
      await pull(w.open(), "/ws/b");
      expect(w.files("/ws/b")).toEqual({ ...threeNotes, "x.md": "x\nmore\n" });
    });

    it("still keeps a note edited since the removal stopped", async () => {
      const { w } = await settled();
      await Effect.runPromise(Effect.either(failingRemoval(w).discardIfPublished("/ws/b")));
      w.write("/ws/b/x.md", "x, edited\n");
      expect(await discard(w)).toBe(false);
      expect(w.read("/ws/b/x.md")).toBe("x, edited\n");
    });
  });
});

describe("a session copy a person writes into while it is removed", () => {
  /**
   * A notebook on `w` whose removal of a working copy meets `save` first: run once, at
   * the first file it removes, after the judgement.
   */
  const savingDuringRemoval = (w: World, save: () => void) => {
    let saved = false;
    const once = Effect.sync(() => {
      if (!saved) save();
      saved = true;
    });
    return w.openHooked((tree) => ({
      removeFile: (path, expected) => once.pipe(Effect.zipRight(tree.removeFile(path, expected))),
    }));
  };

  const settledCopy = async () => {
    const { w } = await publishing(threeNotes);
    await pull(w.open(), "/ws/b");
    return { w, copyDir: copyDirectory("/private", "/ws/b", w.store.identity) };
  };

  it("keeps a note saved after it was judged published, and the record to judge it again", async () => {
    const { w, copyDir } = await settledCopy();
    const removed = await Effect.runPromise(
      savingDuringRemoval(w, () => w.write("/ws/b/y.md", "y, saved just now\n")).discardIfPublished(
        "/ws/b",
      ),
    );
    expect(removed).toBe(false);
    expect(w.files("/ws/b")).toEqual({ "y.md": "y, saved just now\n" });
    expect(w.exists(copyDir)).toBe(true);
    // Judged again later: still kept, and a pull merges the note with the notebook's.
    expect(await discard(w)).toBe(false);
    await Effect.runPromise(Effect.either(w.open().pull({ path: "/ws/b" })));
    expect(Object.values(w.files("/ws/b")).join("")).toContain("y, saved just now\n");
  });

  it("keeps a note added after the judgement, and the directories it is in", async () => {
    const { w } = await settledCopy();
    const removed = await Effect.runPromise(
      savingDuringRemoval(w, () => w.write("/ws/b/sub/new.md", "new\n")).discardIfPublished(
        "/ws/b",
      ),
    );
    expect(removed).toBe(false);
    expect(w.files("/ws/b")).toEqual({ "sub/new.md": "new\n" });
  });

  it("is removed whole when nobody writes into it", async () => {
    const { w, copyDir } = await settledCopy();
    w.write("/ws/b/d/e/x2.md", "x\n");
    w.remove("/ws/b/d/e/x2.md");
    expect(await discard(w)).toBe(true);
    expect(w.exists("/ws/b")).toBe(false);
    expect(w.exists(copyDir)).toBe(false);
  });
});

describe("a session copy whose note is written into a little late while it is removed", () => {
  it("keeps what was written, in the folder the removal had emptied", async () => {
    const { w } = await publishing({ "sub/a.md": "a\n", "b.md": "b\n" });
    await pull(w.open(), "/ws/b");
    // An append that opened sub/a.md before its removal writes after it.
    const notebook = w.openHooked((tree) => ({
      removeFile: (path, expected) => {
        if (path !== "sub/a.md") return tree.removeFile(path, expected);
        const fd = w.vol.openSync(`${tree.root}/${path}`, "r+");
        return tree.removeFile(path, expected).pipe(
          Effect.tap(() =>
            Effect.sync(() => {
              const late = Buffer.from("appended late\n");
              w.vol.writeSync(fd, late, 0, late.length, 2);
              w.vol.closeSync(fd);
            }),
          ),
        );
      },
    }));
    const removed = await Effect.runPromise(notebook.discardIfPublished("/ws/b"));
    expect(removed).toBe(false);
    expect(w.files("/ws/b")).toEqual({ "sub/a.md": "a\nappended late\n" });
  });
});

describe("a session copy a file is saved into just before its directory goes", () => {
  it("is kept, with its private state", async () => {
    const { w } = await publishing(threeNotes);
    await pull(w.open(), "/ws/b");
    const copyDir = copyDirectory("/private", "/ws/b", w.store.identity);
    const notebook = w.openHooked((tree) => ({
      removeEmptyDirectory: (directory) =>
        Effect.sync(() => {
          if (directory === "") w.write("/ws/b/late.md", "saved at the last moment\n");
        }).pipe(Effect.zipRight(tree.removeEmptyDirectory(directory))),
    }));
    expect(await Effect.runPromise(notebook.discardIfPublished("/ws/b"))).toBe(false);
    expect(w.files("/ws/b")).toEqual({ "late.md": "saved at the last moment\n" });
    expect(w.exists(copyDir)).toBe(true);
    expect(await discard(w)).toBe(false);
  });
});
