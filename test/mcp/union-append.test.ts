/**
 * Merge attributes through real `quire serve` processes on one file store (docs/merge.md):
 * with `journal.md merge=union` declared in the notebook, eight copies appending to
 * journal.md concurrently, one commit per line, never conflict and lose nothing; without
 * it, two copies appending at once conflict exactly as git's merge does.
 */
import { appendFileSync, mkdirSync, rmSync } from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, gitMergeFile, makeWorld, read, write, type World } from "../helpers/cli.js";
import { call, serve, type Served, type ToolResult } from "../serve/serve.js";

const copies = 8;
const linesPerCopy = 50;

interface Copy {
  readonly name: string;
  readonly dir: string;
  readonly served: Served;
}

let world: World;
const started: Array<Copy> = [];

/** A serve process with its own working copy and private root, on the file store `store`. */
const start = async (name: string, store: string): Promise<Copy> => {
  const dir = path.join(world.root, "copies", name);
  mkdirSync(dir, { recursive: true });
  const served = await serve(
    [
      "--store",
      `file:${store}`,
      "--workspace-root",
      dir,
      "--private-root",
      path.join(world.root, `private-${name}`),
    ],
    { env: { ...world.env, LOG_LEVEL: "warn" }, cwd: world.root },
  );
  const copy = { name, dir, served };
  started.push(copy);
  return copy;
};

const expectOk = (result: ToolResult): void => {
  expect(result.isError, result.text).toBe(false);
  expect(result.structured["code"]).toBe("OK");
};

const pull = async (copy: Copy) => {
  const result = await call(copy.served, "notes_pull");
  expectOk(result);
  return result;
};
const commit = (copy: Copy, message: string) => call(copy.served, "notes_commit", { message });

/** Whether `text` holds any line a conflict block is made of. */
const hasMarkerLine = (text: string): boolean => /^(<<<<<<<|=======|>>>>>>>)/m.test(text);

beforeAll(() => {
  assertBuilt();
  world = makeWorld();
});

afterAll(async () => {
  await Promise.all(started.map((copy) => copy.served.close()));
  if (world !== undefined) rmSync(world.root, { recursive: true, force: true });
});

describe("appending to one shared file from many serve processes", () => {
  it("without the attribute, two copies appending at once conflict exactly as git merges", async () => {
    const store = path.join(world.root, "plain-store");
    const [a, b] = await Promise.all([start("plain-a", store), start("plain-b", store)]);
    await pull(a);
    const base = "# journal\n- seed\n";
    write(a.dir, "journal.md", base);
    expectOk(await commit(a, "seed"));
    await pull(b);
    appendFileSync(path.join(a.dir, "journal.md"), "- finding from a\n");
    appendFileSync(path.join(b.dir, "journal.md"), "- finding from b\n");
    expectOk(await commit(a, "a appends"));
    const refused = await commit(b, "b appends");
    expect(refused.isError).toBe(true);
    expect(refused.structured).toMatchObject({
      code: "CONTENT_CONFLICT",
      reason: "MERGE_CONFLICT",
      files: [{ path: "journal.md", reason: "TEXT_CONFLICT", ranges: [{ start: 3, end: 7 }] }],
    });
    const git = gitMergeFile(`${base}- finding from b\n`, base, `${base}- finding from a\n`);
    expect(git.conflicted).toBe(true);
    expect(read(b.dir, "journal.md")).toBe(git.text);
    expect(read(b.dir, "journal.md")).toBe(
      `${base}<<<<<<< local\n- finding from b\n=======\n- finding from a\n>>>>>>> remote\n`,
    );
  });

  it("refuses a malformed .quireattributes at commit with the envelope naming the line", async () => {
    const store = path.join(world.root, "malformed-store");
    const [a, b] = await Promise.all([start("malformed-a", store), start("malformed-b", store)]);
    await pull(a);
    await pull(b);
    write(b.dir, ".quireattributes", "# policies\njournal.md merge=unoin\n");
    const refused = await commit(b, "declare");
    expect(refused.isError).toBe(true);
    expect(refused.structured).toMatchObject({
      code: "INVALID_CONTENT",
      reason: "INVALID_FILES",
      action: "EDIT_FILES",
      files: [
        { path: ".quireattributes", reason: "INVALID_ATTRIBUTES", ranges: [{ start: 2, end: 2 }] },
      ],
    });
    expect(refused.text.split("\n")).toEqual(
      expect.arrayContaining([
        "INVALID_CONTENT · INVALID_FILES",
        '.quireattributes has malformed lines (line 2: unknown attribute "merge=unoin"; the supported ones are merge=union and merge=text). Fix or remove them, then call notes_commit again; nothing was published.',
        "file: .quireattributes · INVALID_ATTRIBUTES · line 2",
      ]),
    );
    expect((await pull(a)).structured["generation"]).toBe(0);
    write(b.dir, ".quireattributes", "# policies\njournal.md merge=union\n");
    expectOk(await commit(b, "declare"));
  });

  it(`with journal.md merge=union, ${copies} copies × ${linesPerCopy} appends, one commit each: all OK, no marker, every line once in its copy's order`, async () => {
    const store = path.join(world.root, "union-store");
    const fleet = await Promise.all(
      Array.from({ length: copies }, (_, k) => start(`copy-${k}`, store)),
    );
    const [first] = fleet;
    if (first === undefined) throw new Error("no copies");
    await pull(first);
    write(first.dir, ".quireattributes", "# every agent appends here\njournal.md merge=union\n");
    write(first.dir, "journal.md", "# journal\n");
    expectOk(await commit(first, "declare the journal append-only"));
    await Promise.all(fleet.map((copy) => pull(copy)));

    const failures: Array<string> = [];
    await Promise.all(
      fleet.map(async (copy) => {
        for (let line = 0; line < linesPerCopy; line++) {
          appendFileSync(path.join(copy.dir, "journal.md"), `- ${copy.name} line ${line}\n`);
          const result = await commit(copy, `${copy.name} line ${line}`);
          if (result.isError || result.structured["code"] !== "OK")
            failures.push(`${copy.name} line ${line}: ${result.text}`);
          if (hasMarkerLine(read(copy.dir, "journal.md")))
            failures.push(`${copy.name} line ${line}: a marker line in journal.md`);
        }
      }),
    );
    expect(failures).toEqual([]);

    await Promise.all(fleet.map((copy) => pull(copy)));
    const final = read(first.dir, "journal.md");
    for (const copy of fleet) expect(read(copy.dir, "journal.md")).toBe(final);
    expect(hasMarkerLine(final)).toBe(false);
    const lines = final.split("\n");
    expect(lines[0]).toBe("# journal");
    expect(lines[lines.length - 1]).toBe("");
    const appended = lines.slice(1, -1);
    expect(appended).toHaveLength(copies * linesPerCopy);
    expect(new Set(appended).size).toBe(copies * linesPerCopy);
    for (const copy of fleet) {
      const own = appended.filter((text) => text.startsWith(`- ${copy.name} line `));
      expect(own).toEqual(
        Array.from({ length: linesPerCopy }, (_, line) => `- ${copy.name} line ${line}`),
      );
    }
  });
});
