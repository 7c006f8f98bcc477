/**
 * A guarded replace sets the old file aside (`.<name>.quire-<id>.aside`), links the new
 * one under the name, checks the old one and unlinks it. A process killed between the
 * link and the unlink leaves the old version beside the new one. When that old version is
 * one quire holds itself (what the interrupted rewrite read there, or the copy's
 * baseline), the next call removes it and goes on; any other content stays, reported, for
 * the person to look at. Before, every later call of the copy failed INVALID_CONTENT on
 * it, even when it was provably quire's own leftover (seen in the torture test).
 */
import { Effect, Option } from "effect";
import { describe, expect, it } from "vitest";
import type { DomainError } from "../../src/domain/errors.js";
import {
  author,
  commit,
  commitFails,
  crashes,
  fails,
  pull,
  world,
  type World,
} from "../durability/harness.js";

const aside = ".shared.md.quire-0123456789ab1.aside";

/** A published `shared.md` (and `other.md`), pulled by copies A and B. */
const bothPulled = async () => {
  const w = world();
  const a = w.open();
  await pull(a);
  w.write("/ws/a/shared.md", "top\nmiddle\nbottom\n");
  w.write("/ws/a/other.md", "other\n");
  await commit(a);
  await pull(w.open(), "/ws/b");
  return { w, a };
};

/**
 * A and B pulled `shared.md`; A changed its first line, B its last. B's commit merges and
 * rewrites B's `shared.md`, and is killed just after linking the merge, the old version
 * left set aside beside it (holding `leftAside`, B's own version unless a write reached it).
 */
const killedMidReplace = async (leftAside?: string): Promise<World> => {
  const { w, a } = await bothPulled();
  w.write("/ws/a/shared.md", "top from a\nmiddle\nbottom\n");
  await commit(a);
  const mine = "top\nmiddle\nbottom from b\n";
  w.write("/ws/b/shared.md", mine);
  const killed = w.openHooked((tree) => ({
    replaceFile: (path, bytes, expected, mode) =>
      path !== "shared.md"
        ? tree.replaceFile(path, bytes, expected, mode)
        : tree.replaceFile(path, bytes, expected, mode).pipe(
            Effect.tap(() => w.write(`/ws/b/${aside}`, leftAside ?? mine)),
            Effect.zipRight(Effect.interrupt),
          ),
  }));
  await crashes(killed.commit({ path: "/ws/b", message: "b's line", author }));
  expect(w.read("/ws/b/shared.md")).toBe("top from a\nmiddle\nbottom from b\n");
  expect(w.read(`/ws/b/${aside}`)).toBe(leftAside ?? mine);
  return w;
};

describe("the old version a killed replace left beside the new one", () => {
  it("is removed by the next commit when it is what the rewrite read there", async () => {
    const w = await killedMidReplace();
    w.write("/ws/b/other.md", "other, edited after the kill\n");
    const report = await commit(w.open(), "/ws/b", "after the kill");
    expect(report.generation).toBeGreaterThan(0);
    expect(w.exists(`/ws/b/${aside}`)).toBe(false);
    expect(w.files("/ws/b")).toEqual({
      "shared.md": "top from a\nmiddle\nbottom from b\n",
      "other.md": "other, edited after the kill\n",
    });
    // Both edits are published, and nothing else.
    await pull(w.open(), "/ws/c");
    expect(w.files("/ws/c")).toEqual(w.files("/ws/b"));
  });

  it("is removed by the next pull too, the person's later edit of the note kept", async () => {
    const w = await killedMidReplace();
    w.write("/ws/b/shared.md", "top from a\nmiddle\nbottom from b\nand more\n");
    await pull(w.open(), "/ws/b");
    expect(w.exists(`/ws/b/${aside}`)).toBe(false);
    expect(w.read("/ws/b/shared.md")).toBe("top from a\nmiddle\nbottom from b\nand more\n");
    await commit(w.open(), "/ws/b", "more");
    await pull(w.open(), "/ws/c");
    expect(w.read("/ws/c/shared.md")).toBe("top from a\nmiddle\nbottom from b\nand more\n");
  });

  it("is removed when it holds the copy's published version of the note", async () => {
    const w = await killedMidReplace("top\nmiddle\nbottom\n");
    await commit(w.open(), "/ws/b", "after the kill");
    expect(w.exists(`/ws/b/${aside}`)).toBe(false);
  });

  it("stays, reported, when it holds anything else (a write reached it), and nothing is lost", async () => {
    const late = "top\nmiddle\nbottom from b\nwritten late into the old file\n";
    const w = await killedMidReplace(late);
    const refused = await commitFails(w.open(), "/ws/b", "after the kill");
    expect(refused.code).toBe("INVALID_CONTENT");
    expect(refused.files?.map((file) => [file.path, file.reason])).toEqual([
      [aside, "INVALID_NAME"],
    ]);
    expect(w.read(`/ws/b/${aside}`)).toBe(late);
    // Once the person took what they wanted from it and removed it, the copy works.
    w.remove(`/ws/b/${aside}`);
    await commit(w.open(), "/ws/b", "after the kill");
  });

  it("stays when it holds another note's version, even one quire keeps", async () => {
    const w = await killedMidReplace();
    // other.md's published content, set aside (by name) from shared.md: no version of it.
    const stray = ".shared.md.quire-0123456789ab2.aside";
    w.write(`/ws/b/${stray}`, "other\n");
    const refused = await commitFails(w.open(), "/ws/b", "after the kill");
    expect(refused.files?.map((file) => file.path)).toEqual([stray]);
    expect(w.read(`/ws/b/${stray}`)).toBe("other\n");
    // The one that was shared.md's own old version is gone all the same.
    expect(w.exists(`/ws/b/${aside}`)).toBe(false);
  });

  it("keeps what a write put in it as it was being removed, back under its name, reported", async () => {
    const w = await killedMidReplace();
    const late = "top\nmiddle\nbottom from b\nlate\n";
    // The guarded removal finds a process that had the old file open writing into it.
    const overtaken = w.openHooked((tree) => ({
      removeFile: (path, expected) =>
        path !== aside
          ? tree.removeFile(path, expected)
          : tree.removeFile(path, expected).pipe(
              Effect.map(() => ({
                _tag: "Overtaken" as const,
                bytes: new TextEncoder().encode(late),
                info: Option.none(),
              })),
            ),
    }));
    const refused = await fails(overtaken.pull({ path: "/ws/b" }));
    expect(refused.files?.map((file) => [file.path, file.reason])).toEqual([
      [aside, "INVALID_NAME"],
    ]);
    expect(w.read(`/ws/b/${aside}`)).toBe(late);
  });

  it("stays, reported, when the name was taken by a newcomer after a kill before the link", async () => {
    const { w, a } = await bothPulled();
    w.write("/ws/a/shared.md", "top from a\nmiddle\nbottom\n");
    await commit(a);
    // B's own edit, not published: the set-aside file becomes its only copy.
    w.write("/ws/b/shared.md", "top\nmiddle\nbottom from b only\n");
    const killed = w.openHooked((tree) => ({
      replaceFile: (path, bytes, expected, mode) =>
        path !== "shared.md"
          ? tree.replaceFile(path, bytes, expected, mode)
          : Effect.sync(() => w.vol.renameSync("/ws/b/shared.md", `/ws/b/${aside}`)).pipe(
              Effect.zipRight(Effect.interrupt),
            ),
    }));
    await crashes(killed.pull({ path: "/ws/b" }));
    // The name is free: an append (`>>`) creates the note anew, holding only its line.
    w.write("/ws/b/shared.md", "appended\n");
    const refused = await fails(w.open().pull({ path: "/ws/b" }));
    expect(refused.code).toBe("INVALID_CONTENT");
    expect(w.read(`/ws/b/${aside}`)).toBe("top\nmiddle\nbottom from b only\n");
  });

  it("is tidied after a kill in its own removal, in the next call", async () => {
    const w = await killedMidReplace();
    // Its removal set it aside in turn and was killed: the set-aside file of a set-aside file.
    w.vol.renameSync(`/ws/b/${aside}`, `/ws/b/.${aside}.quire-0123456789ab9.aside`);
    await commit(w.open(), "/ws/b", "after the kills");
    expect(w.files("/ws/b")).toEqual({
      "shared.md": "top from a\nmiddle\nbottom from b\n",
      "other.md": "other\n",
    });
  });

  // A process that had the old file open writes into it just after its removal: kept
  // whether or not the call goes on to rewrite the copy.
  for (const call of ["pull", "status", "commit"] as const)
    it(`keeps a write that reaches it just after its removal (${call})`, async () => {
      const { w } = await bothPulled();
      // The published version, beside the note that holds all of it and more.
      w.write(`/ws/b/${aside}`, "top\nmiddle\nbottom\n");
      w.write("/ws/b/shared.md", "top\nmiddle\nbottom\nmore\n");
      const open = w.vol.openSync(`/ws/b/${aside}`, "a");
      const late = w.openHooked((tree) => ({
        removeFile: (path, expected) =>
          tree.removeFile(path, expected).pipe(
            Effect.tap(() => {
              if (path === aside) w.vol.writeSync(open, "a late line\n");
            }),
          ),
      }));
      const calling: Record<typeof call, () => Effect.Effect<unknown, DomainError>> = {
        commit: () => late.commit({ path: "/ws/b", message: "m", author }),
        pull: () => late.pull({ path: "/ws/b" }),
        status: () => late.status({ path: "/ws/b" }),
      };
      await Effect.runPromiseExit(calling[call]());
      expect(w.read(`/ws/b/${aside}`)).toBe("top\nmiddle\nbottom\na late line\n");
      // Reported by the next call, for the person to look at.
      const refused = await commitFails(w.open(), "/ws/b", "next");
      expect(refused.files?.map((file) => file.path)).toEqual([aside]);
    });
});
