/**
 * A fleet of real `quire serve` processes on one file store, each
 * confined by path sets — X `--writable agents/x`, Y `--writable agents/y`, Z
 * `--read-only docs` — plus an unrestricted server that seeds and observes the notebook.
 */
import { mkdirSync, rmSync, unlinkSync } from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  assertBuilt,
  findLeaks,
  makeWorld,
  read,
  readTree,
  storeFingerprint,
  type World,
  write,
} from "../helpers/cli.js";
import { call, serve, type Served, type ToolResult } from "./serve.js";

interface Member {
  readonly name: string;
  readonly dir: string;
  readonly privateRoot: string;
  readonly served: Served;
  readonly writable: ReadonlyArray<string>;
  readonly readOnly: ReadonlyArray<string>;
  /** Every result this member's server returned. */
  readonly results: Array<ToolResult>;
}

let world: World;
const members: Array<Member> = [];

const start = async (
  name: string,
  sets: { readonly writable?: ReadonlyArray<string>; readonly readOnly?: ReadonlyArray<string> },
): Promise<Member> => {
  const dir = path.join(world.root, "fleet", name);
  const privateRoot = path.join(world.root, `private-${name}`);
  mkdirSync(dir, { recursive: true });
  const writable = sets.writable ?? [];
  const readOnly = sets.readOnly ?? [];
  const served = await serve(
    [
      "--store",
      `file:${world.store}`,
      "--workspace-root",
      dir,
      "--private-root",
      privateRoot,
      ...writable.flatMap((entry) => ["--writable", entry]),
      ...readOnly.flatMap((entry) => ["--read-only", entry]),
    ],
    { env: world.env, cwd: world.root },
  );
  const member = { name, dir, privateRoot, served, writable, readOnly, results: [] };
  members.push(member);
  return member;
};

/** Calls a tool, records the result, and checks the arrays every result carries. */
const tool = async (
  member: Member,
  name: "notes_pull" | "notes_commit",
  args: Record<string, unknown> = {},
): Promise<ToolResult> => {
  const result = await call(member.served, name, args);
  member.results.push(result);
  expect(result.structured["readOnly"]).toEqual(member.readOnly);
  expect(result.structured["writable"]).toEqual(member.writable);
  return result;
};

const pull = (member: Member) => tool(member, "notes_pull");
const commit = (member: Member, message = `${member.name} edits`) =>
  tool(member, "notes_commit", { message });

/** The success text of SPEC §2.3 for a member. */
const successText = (member: Member): string => {
  const w = member.writable.join(", ");
  const r = member.readOnly.join(", ");
  if (w !== "" && r !== "")
    return `${member.dir} (writable: ${w}; read-only: ${r}; longest match decides)`;
  if (w !== "") return `${member.dir} (writable: ${w})`;
  if (r !== "") return `${member.dir} (read-only: ${r})`;
  return member.dir;
};

const expectOk = (member: Member, result: ToolResult) => {
  expect(result.isError, result.text).toBe(false);
  expect(result.structured["code"]).toBe("OK");
  expect(result.text).toBe(successText(member));
};

const text = (tree: Map<string, Buffer>): Record<string, string> =>
  Object.fromEntries([...tree].map(([file, bytes]) => [file, bytes.toString("utf8")]));

let admin: Member;
let x: Member;
let y: Member;
let z: Member;

beforeAll(async () => {
  assertBuilt();
  world = makeWorld();
  [admin, x, y, z] = await Promise.all([
    start("admin", {}),
    start("x", { writable: ["agents/x"] }),
    start("y", { writable: ["agents/y"] }),
    start("z", { readOnly: ["docs"] }),
  ]);
});

afterAll(async () => {
  await Promise.all(members.map((member) => member.served.close()));
  if (world !== undefined) rmSync(world.root, { recursive: true, force: true });
});

describe("a fleet of path-set-confined serve processes on one store", () => {
  it("advertises each server's sets in the instructions and both tool descriptions; none for the unrestricted one", async () => {
    const sentences = {
      x: "Writable paths: `agents/x`. notes_commit refuses any change elsewhere, resets those files, and reports READ_ONLY_PATH; write only under them.",
      y: "Writable paths: `agents/y`. notes_commit refuses any change elsewhere, resets those files, and reports READ_ONLY_PATH; write only under them.",
      z: "Read-only paths: `docs`. notes_commit refuses any change to them, resets those files, and reports READ_ONLY_PATH; write elsewhere.",
    };
    for (const [member, sentence] of [
      [x, sentences.x],
      [y, sentences.y],
      [z, sentences.z],
    ] as const) {
      const instructions = member.served.client.getInstructions() ?? "";
      expect(instructions).toContain(`The notebook directory is ${member.dir}. `);
      expect(instructions.endsWith(` ${sentence}`)).toBe(true);
      const { tools } = await member.served.client.listTools();
      expect(tools.map((t) => t.name)).toEqual(["notes_pull", "notes_commit"]);
      for (const t of tools) expect(t.description?.endsWith(` ${sentence}`)).toBe(true);
    }
    const plain = admin.served.client.getInstructions() ?? "";
    const { tools } = await admin.served.client.listTools();
    for (const described of [plain, ...tools.map((t) => t.description ?? "")]) {
      expect(described).not.toMatch(/Writable paths|Read-only paths|READ_ONLY_PATH/);
    }
  });

  it("seeds, then each server publishes inside its area", async () => {
    expectOk(admin, await pull(admin));
    write(admin.dir, "agents/x/notes.md", "x one\n");
    write(admin.dir, "agents/y/notes.md", "y one\n");
    write(admin.dir, "docs/guide.md", "the guide\nline two\n");
    write(admin.dir, "docs/faq.md", "faq\n");
    write(admin.dir, "board.md", "board\n");
    const seeded = await commit(admin, "seed");
    expectOk(admin, seeded);
    expect(seeded.structured["generation"]).toBe(1);

    for (const member of [x, y, z]) {
      const pulled = await pull(member);
      expectOk(member, pulled);
      expect(text(readTree(member.dir))).toEqual(text(readTree(admin.dir)));
    }

    write(x.dir, "agents/x/notes.md", "x one\nx two\n");
    write(x.dir, "agents/x/plan.md", "plan\n");
    const byX = await commit(x);
    expectOk(x, byX);
    expect(byX.structured["files"]).toEqual([
      { path: "agents/x/notes.md", insertions: 1, deletions: 0 },
      { path: "agents/x/plan.md", insertions: 1, deletions: 0 },
    ]);

    unlinkSync(path.join(y.dir, "agents/y/notes.md"));
    write(y.dir, "agents/y/log.md", "y log\n");
    const byY = await commit(y);
    expectOk(y, byY);
    expect(byY.structured["files"]).toEqual([
      { path: "agents/y/log.md", insertions: 1, deletions: 0 },
      { path: "agents/y/notes.md", insertions: 0, deletions: 1 },
    ]);

    write(z.dir, "board.md", "board\nz was here\n");
    write(z.dir, "agents/z/todo.md", "todo\n");
    const byZ = await commit(z);
    expectOk(z, byZ);
    expect(byZ.structured["generation"]).toBe(4);

    const observed = await pull(admin);
    expectOk(admin, observed);
    expect(observed.structured["generation"]).toBe(4);
    expect(text(readTree(admin.dir))).toEqual({
      "agents/x/notes.md": "x one\nx two\n",
      "agents/x/plan.md": "plan\n",
      "agents/y/log.md": "y log\n",
      "agents/z/todo.md": "todo\n",
      "board.md": "board\nz was here\n",
      "docs/faq.md": "faq\n",
      "docs/guide.md": "the guide\nline two\n",
    });
  });

  it("X's edits outside agents/x are refused NOT_WRITABLE and reset; nothing else moves; the next commit publishes the rest", async () => {
    expectOk(x, await pull(x));
    const baseline = readTree(x.dir);
    write(x.dir, "agents/y/log.md", "y log\nx meddles\n");
    unlinkSync(path.join(x.dir, "docs/faq.md"));
    write(x.dir, "stray.md", "stray\n");
    write(x.dir, "agents/x/notes.md", "x one\nx two\nx three\n");
    write(x.dir, "agents/x/new.md", "new\n");
    const before = readTree(x.dir);
    const published = storeFingerprint(world);

    const refused = await commit(x);
    expect(refused.isError).toBe(true);
    expect(refused.structured).toMatchObject({
      code: "READ_ONLY_PATH",
      reason: "PATH_SET_VIOLATION",
      action: "COMMIT_AGAIN",
      retryable: true,
      files: [
        { path: "agents/y/log.md", reason: "NOT_WRITABLE", ranges: [] },
        { path: "docs/faq.md", reason: "NOT_WRITABLE", ranges: [] },
        { path: "stray.md", reason: "NOT_WRITABLE", ranges: [] },
      ],
    });
    expect(refused.text.split("\n")).toEqual(
      expect.arrayContaining([
        "READ_ONLY_PATH · PATH_SET_VIOLATION",
        "file: agents/y/log.md · NOT_WRITABLE",
        "file: docs/faq.md · NOT_WRITABLE",
        "file: stray.md · NOT_WRITABLE",
        "action: COMMIT_AGAIN",
        "retryable: true",
        "writable: agents/x",
      ]),
    );
    expect(storeFingerprint(world)).toBe(published);

    // Offending files back to the baseline (modified, deleted, added); the rest byte for byte as before.
    const after = readTree(x.dir);
    const expected = new Map(before);
    expected.set("agents/y/log.md", baseline.get("agents/y/log.md") ?? Buffer.alloc(0));
    expected.set("docs/faq.md", baseline.get("docs/faq.md") ?? Buffer.alloc(0));
    expected.delete("stray.md");
    expect([...after.keys()].sort()).toEqual([...expected.keys()].sort());
    for (const [file, bytes] of expected) expect(after.get(file)?.equals(bytes), file).toBe(true);

    const again = await commit(x);
    expectOk(x, again);
    expect(again.structured["generation"]).toBe(5);
    expect(again.structured["files"]).toEqual([
      { path: "agents/x/new.md", insertions: 1, deletions: 0 },
      { path: "agents/x/notes.md", insertions: 1, deletions: 0 },
    ]);
  });

  it("Z's edits under docs are refused READ_ONLY and reset; its other edits survive and publish next", async () => {
    expectOk(z, await pull(z));
    const baseline = readTree(z.dir);
    write(z.dir, "docs/guide.md", "the guide\nline two, edited\n");
    write(z.dir, "docs/new.md", "new doc\n");
    write(z.dir, "board.md", "board\nz was here\nagain\n");
    write(z.dir, "agents/z/todo.md", "todo\ndone\n");
    const before = readTree(z.dir);
    const published = storeFingerprint(world);

    const refused = await commit(z);
    expect(refused.isError).toBe(true);
    expect(refused.structured).toMatchObject({
      code: "READ_ONLY_PATH",
      reason: "PATH_SET_VIOLATION",
      action: "COMMIT_AGAIN",
      files: [
        { path: "docs/guide.md", reason: "READ_ONLY", ranges: [] },
        { path: "docs/new.md", reason: "READ_ONLY", ranges: [] },
      ],
    });
    expect(refused.text).toContain("\nreadOnly: docs");
    expect(storeFingerprint(world)).toBe(published);

    const after = readTree(z.dir);
    const expected = new Map(before);
    expected.set("docs/guide.md", baseline.get("docs/guide.md") ?? Buffer.alloc(0));
    expected.delete("docs/new.md");
    expect([...after.keys()].sort()).toEqual([...expected.keys()].sort());
    for (const [file, bytes] of expected) expect(after.get(file)?.equals(bytes), file).toBe(true);
    expect(read(z.dir, "docs/guide.md")).toBe("the guide\nline two\n");

    const again = await commit(z);
    expectOk(z, again);
    expect(again.structured["files"]).toEqual([
      { path: "agents/z/todo.md", insertions: 1, deletions: 0 },
      { path: "board.md", insertions: 1, deletions: 0 },
    ]);
  });

  it("Y sees everything the others published, nothing they were refused; pull never refuses", async () => {
    write(y.dir, "docs/faq.md", "faq edited locally by y\n");
    const pulled = await pull(y);
    expectOk(y, pulled);
    expect(read(y.dir, "agents/y/log.md")).toBe("y log\n");
    expect(read(y.dir, "agents/x/new.md")).toBe("new\n");
    expect(read(y.dir, "docs/guide.md")).toBe("the guide\nline two\n");
    expect(read(y.dir, "board.md")).toBe("board\nz was here\nagain\n");
    // A local edit outside the writable set survives a pull; only a commit refuses it.
    expect(read(y.dir, "docs/faq.md")).toBe("faq edited locally by y\n");
    const refused = await commit(y);
    expect(refused.structured).toMatchObject({
      code: "READ_ONLY_PATH",
      files: [{ path: "docs/faq.md", reason: "NOT_WRITABLE", ranges: [] }],
    });
    expect(read(y.dir, "docs/faq.md")).toBe("faq\n");
  });

  it("every result, success or error of any code, carries the arrays; nothing leaks", async () => {
    for (const member of [admin, x, y, z]) {
      const blank = await tool(member, "notes_commit", { message: "   " });
      expect(blank.structured).toMatchObject({ code: "INVALID_REQUEST", reason: "MESSAGE_BLANK" });
      const sets = [
        ...(member.readOnly.length === 0 ? [] : [`readOnly: ${member.readOnly.join(", ")}`]),
        ...(member.writable.length === 0 ? [] : [`writable: ${member.writable.join(", ")}`]),
      ];
      const lines = blank.text.split("\n");
      expect(lines.filter((line) => /^(readOnly|writable): /.test(line))).toEqual(sets);
      if (sets.length > 0) expect(lines.slice(-sets.length)).toEqual(sets);
      expect(member.results.length).toBeGreaterThan(1);
      for (const result of member.results) {
        expect(result.structured).toHaveProperty("readOnly", member.readOnly);
        expect(result.structured).toHaveProperty("writable", member.writable);
      }
      const leaks = findLeaks(member.served.stderr(), {
        store: world.store,
        privateRoot: member.privateRoot,
      });
      expect(leaks).toEqual([]);
      expect(
        findLeaks(JSON.stringify(member.served.received), {
          store: world.store,
          privateRoot: member.privateRoot,
        }),
      ).toEqual([]);
    }
  });
});
