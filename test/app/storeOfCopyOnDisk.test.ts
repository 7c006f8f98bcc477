/**
 * The records of which store a directory was pulled from (workingCopy/storeOfCopy.ts), on
 * the real file system: a call that looks through every record for a copy with none
 * (one whose record was lost) reads them through a tree, so a stray name that is not
 * UTF-8 in `owners/` (no record: records are hex digests) neither fails the call nor
 * hides a record, and a private root reached through a symlink is read as ever.
 */
import * as nodeFs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Effect } from "effect";
import { afterEach, describe, expect, it } from "vitest";
import * as memoryStore from "../../src/adapters/memoryObjectStore.js";
import * as nodeFileSystem from "../../src/adapters/nodeFileSystem.js";
import { keyDigest } from "../../src/app/keyDigest.js";
import { openOn } from "./memNotebook.js";

const author = { name: "t", version: "1" };
const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) nodeFs.rmSync(dir, { recursive: true, force: true });
});

/** A workspace and a private root, the latter reached through a symlink when `linked`. */
const place = (linked: boolean) => {
  const base = nodeFs.realpathSync(nodeFs.mkdtempSync(join(tmpdir(), "quire-owners-")));
  made.push(base);
  const ws = join(base, "ws");
  nodeFs.mkdirSync(ws);
  nodeFs.mkdirSync(join(base, "real-private"));
  if (linked) nodeFs.symlinkSync(join(base, "real-private"), join(base, "private"));
  const privateRoot = join(base, linked ? "private" : "real-private");
  const fs = nodeFileSystem.make();
  const open = (store: ReturnType<typeof memoryStore.make>) =>
    openOn(store, fs, {
      workspaceRoot: ws,
      notebookDirectory: join(ws, "a"),
      privateRoot,
      homeDirectory: join(base, "home"),
    });
  const record = (path: string) => join(privateRoot, "owners", keyDigest(["store of", path]));
  return { ws, privateRoot, open, record };
};

const reasonOf = async (effect: Effect.Effect<unknown, { readonly reason: string }>) => {
  const result = await Effect.runPromise(Effect.either(effect));
  return result._tag === "Left" ? result.left.reason : "OK";
};

/**
 * Store C's two copies in `at`, /z and /e (a note published from /e), with the record of
 * /e removed (/z's still names C): C, its notebook, and the removed record's path.
 */
const twoCopiesOfC = async (at: ReturnType<typeof place>) => {
  const storeC = memoryStore.make();
  const c = at.open(storeC);
  await Effect.runPromise(c.pull({ path: join(at.ws, "z") }));
  await Effect.runPromise(c.pull({ path: join(at.ws, "e") }));
  nodeFs.writeFileSync(join(at.ws, "e", "c.md"), "c\n");
  await Effect.runPromise(c.commit({ path: join(at.ws, "e"), message: "c", author }));
  const file = at.record(join(at.ws, "e"));
  nodeFs.rmSync(file);
  return { storeC, c, file };
};

describe("a copy whose record was lost, found through the other records", () => {
  for (const linked of [false, true])
    it(`is refused to another store despite a stray name in owners/${linked ? " (private root below a symlink)" : ""}`, async () => {
      const at = place(linked);
      const { ws, privateRoot, open } = at;
      const { storeC, c, file } = await twoCopiesOfC(at);
      nodeFs.writeFileSync(Buffer.from(`${privateRoot}/owners/stray-\xff`, "latin1"), "x");

      const d = open(memoryStore.make());
      expect(await reasonOf(d.pull({ path: join(ws, "e") }))).toBe("NESTED_WORKING_COPY");
      expect(nodeFs.readdirSync(join(ws, "e"))).toEqual(["c.md"]);
      // A directory nobody pulled, holding a person's file, is pulled with the stray name there.
      nodeFs.mkdirSync(join(ws, "n"));
      nodeFs.writeFileSync(join(ws, "n", "x.md"), "x\n");
      expect(await reasonOf(d.pull({ path: join(ws, "n") }))).toBe("OK");
      // C's own calls on its copy work, and record it again.
      expect(await reasonOf(c.status({ path: join(ws, "e") }))).toBe("OK");
      expect(nodeFs.readFileSync(file, "utf8")).toBe(storeC.identity);
    });
});

describe("a record that is no record", () => {
  for (const kind of ["not UTF-8", "a symlink", "a directory"] as const)
    it(`(${kind}) counts as none: another store is refused, the copy found through the other records`, async () => {
      const at = place(false);
      const { ws, privateRoot, open } = at;
      const { storeC, c, file } = await twoCopiesOfC(at);
      if (kind === "not UTF-8") nodeFs.writeFileSync(file, Buffer.from([0xff, 0xfe]));
      if (kind === "a symlink") {
        nodeFs.writeFileSync(join(privateRoot, "elsewhere"), storeC.identity);
        nodeFs.symlinkSync(join(privateRoot, "elsewhere"), file);
      }
      if (kind === "a directory") nodeFs.mkdirSync(file);

      const d = open(memoryStore.make());
      expect(await reasonOf(d.pull({ path: join(ws, "e") }))).toBe("NESTED_WORKING_COPY");
      expect(nodeFs.readdirSync(join(ws, "e"))).toEqual(["c.md"]);
      if (kind === "a directory") {
        // In the way of the record: its own calls fail (as before the record was read
        // fail-closed) until a person removes it.
        expect(await reasonOf(c.status({ path: join(ws, "e") }))).toBe("LOCAL_IO");
        return;
      }
      expect(await reasonOf(c.status({ path: join(ws, "e") }))).toBe("OK");
      expect(nodeFs.readFileSync(file, "utf8")).toBe(storeC.identity);
    });
});
