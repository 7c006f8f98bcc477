/**
 * A pull from a store whose objects are local files (the file store) caches each pack
 * it downloads as a hard link to the store's own file instead of a second copy, and
 * falls back to writing the bytes whenever that link cannot be made.
 */
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Effect, Option } from "effect";
import { afterAll, describe, expect, it } from "vitest";
import { make as makeFileStore } from "../../src/adapters/fileObjectStore.js";
import { openNotebook } from "../../src/index.js";
import type { LocalFile, ObjectStoreService } from "../../src/ports/ObjectStore.js";

const root = mkdtempSync(join(tmpdir(), "quire-pack-links-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Every regular file below `dir`, recursively. */
const filesBelow = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = join(dir, entry.name);
    return entry.isDirectory() ? filesBelow(full) : entry.isFile() ? [full] : [];
  });

/** A store with one publication of `n.md`, made by a writer with its own private root. */
const publishedStore = async (name: string): Promise<{ storeRoot: string; workspace: string }> => {
  const storeRoot = join(root, name, "store");
  const workspace = join(root, name, "ws");
  mkdirSync(workspace, { recursive: true });
  const writer = await openNotebook({
    store: `file:${storeRoot}`,
    workspaceRoot: workspace,
    privateRoot: join(root, name, "private-writer"),
  });
  const copy = join(workspace, "writer");
  expect(await writer.pull(copy)).toMatchObject({ code: "OK" });
  writeFileSync(join(copy, "n.md"), "one\ntwo\n");
  expect(await writer.commit("add n", copy)).toMatchObject({ code: "OK", generation: 1 });
  await writer.close();
  return { storeRoot, workspace };
};

/** Pulls the store into a fresh copy with its own private root; the cached pack files. */
const pullFresh = async (
  store: ObjectStoreService,
  workspace: string,
  privateRoot: string,
): Promise<string[]> => {
  const reader = await openNotebook({ store, workspaceRoot: workspace, privateRoot, probe: false });
  const copy = join(workspace, "reader");
  expect(await reader.pull(copy)).toMatchObject({ code: "OK", generation: 1 });
  expect(readFileSync(join(copy, "n.md"), "utf8")).toBe("one\ntwo\n");
  await reader.close();
  return filesBelow(privateRoot).filter((file) => file.endsWith(".pack"));
};

/** A published store pulled once into a fresh copy; the copy's one cached pack. */
const pulledOnce = async (name: string) => {
  const { storeRoot, workspace } = await publishedStore(name);
  const store = await Effect.runPromise(makeFileStore({ root: storeRoot }));
  const privateRoot = join(root, name, "private-reader");
  const cached = await pullFresh(store, workspace, privateRoot);
  expect(cached.length).toBe(1);
  const [pack] = cached;
  if (pack === undefined) throw new Error("no cached pack");
  const reader = () => openNotebook({ store, workspaceRoot: workspace, privateRoot, probe: false });
  return { store, storeRoot, workspace, pack, reader };
};

describe("cached packs of a file store", () => {
  it("are hard links to the store's own files", async () => {
    const { storeRoot, pack } = await pulledOnce("linked");
    const storeInodes = new Set(filesBelow(storeRoot).map((file) => statSync(file).ino));
    expect(storeInodes.has(statSync(pack).ino)).toBe(true);
    expect(statSync(pack).nlink).toBeGreaterThanOrEqual(2);
  });

  it("replace a damaged cache entry rather than keep it", async () => {
    const { workspace, pack, reader: open } = await pulledOnce("damaged");
    const good = readFileSync(pack);
    // Damage the cache entry (a new file, so the store's linked file is untouched) and
    // forget the copy's state, so the next pull must fetch that pack again.
    rmSync(pack);
    writeFileSync(pack, "damaged");
    const copyDir = join(pack, "..", "..");
    for (const name of readdirSync(copyDir))
      if (name === "state.json" || name.startsWith("baseline-")) rmSync(join(copyDir, name));
    const reader = await open();
    expect(await reader.pull(join(workspace, "reader"))).toMatchObject({ code: "OK" });
    await reader.close();
    expect(readFileSync(pack).equals(good)).toBe(true);
  });

  it("are checked when read back: a damaged base is refused, never counted as content", async () => {
    const { store, workspace, pack, reader: open } = await pulledOnce("base");
    // Other text of the same length where n.md's base is (in a file of its own, so the
    // store's linked file is untouched): only its id can tell.
    const bytes = readFileSync(pack);
    const at = bytes.indexOf("one\ntwo\n");
    expect(at).toBeGreaterThanOrEqual(0);
    bytes.write("ONE\nTWO\n", at);
    rmSync(pack);
    writeFileSync(pack, bytes);
    const copy = join(workspace, "reader");
    writeFileSync(join(copy, "n.md"), "one\ntwo\nthree\n");
    const reader = await open();
    // The merge needs no base content (only this side changed), so the commit publishes;
    // its line counts need the base, which is refused: never OK with counts made up
    // from damage, and the answer says the changes were published.
    expect(await reader.commit("add three", copy)).toMatchObject({
      code: "RECOVERY_FAILURE",
      recovery: { stage: "after-publication", remoteAccepted: "yes" },
    });
    expect(await reader.pull(copy)).toMatchObject({ code: "OK", generation: 2 });
    await reader.close();
    expect(readFileSync(join(copy, "n.md"), "utf8")).toBe("one\ntwo\nthree\n");
    const check = await openNotebook({
      store,
      workspaceRoot: workspace,
      privateRoot: join(root, "base", "private-check"),
      probe: false,
    });
    const checkCopy = join(workspace, "check");
    expect(await check.pull(checkCopy)).toMatchObject({ code: "OK", generation: 2 });
    await check.close();
    expect(readFileSync(join(checkCopy, "n.md"), "utf8")).toBe("one\ntwo\nthree\n");
  });

  /**
   * Pulls through a file store whose gets lend `lend(the file read)` instead; the cached
   * pack must be a copy (one link) of the store's bytes.
   */
  const expectCopyWhenLending = async (
    name: string,
    lend: (read: LocalFile) => LocalFile,
  ): Promise<void> => {
    const { storeRoot, workspace } = await publishedStore(name);
    const inner = await Effect.runPromise(makeFileStore({ root: storeRoot }));
    const store: ObjectStoreService = {
      ...inner,
      get: (key) =>
        inner
          .get(key)
          .pipe(
            Effect.map(
              Option.map((object) =>
                object.localFile === undefined
                  ? object
                  : { ...object, localFile: lend(object.localFile) },
              ),
            ),
          ),
    };
    const cached = await pullFresh(store, workspace, join(root, name, "private-reader"));
    expect(cached.length).toBe(1);
    const [pack] = cached;
    if (pack === undefined) throw new Error("no cached pack");
    expect(statSync(pack).nlink).toBe(1);
    const same = filesBelow(storeRoot).find((file) =>
      readFileSync(file).equals(readFileSync(pack)),
    );
    expect(same).toBeDefined();
  };

  it("are written as copies when the lent file is gone", async () => {
    // Say, pruned since the read.
    await expectCopyWhenLending("gone", (read) => ({
      ...read,
      path: join(root, "gone", "no-such-file"),
    }));
  });

  it("are written as copies when the lent path names another file than the one read", async () => {
    // Say, the key was forgotten and written again: its version's name is reused.
    const other = join(root, "other-file");
    writeFileSync(other, "other bytes");
    await expectCopyWhenLending("reused", (read) => ({ ...read, path: other }));
  });
});
