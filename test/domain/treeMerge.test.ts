import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { findCaseCollisions, isNotebookPath } from "../../src/domain/paths.js";
import type { Tree } from "../../src/domain/tree.js";
import { planTreeMerge, type MergeEntry } from "../../src/domain/treeMerge.js";

const tree = (entries: Record<string, string>): Tree => new Map(Object.entries(entries));
const resolved = (id: string): MergeEntry => ({ _tag: "Resolved", id });
const entriesOf = (plan: ReturnType<typeof planTreeMerge>): Record<string, MergeEntry> =>
  Object.fromEntries([...plan.entries].sort(([a], [b]) => (a < b ? -1 : 1)));

describe("planTreeMerge per path", () => {
  it("takes the other side where one side is unchanged", () => {
    const base = tree({ a: "1", b: "2", c: "3", d: "4" });
    const local = tree({ a: "1x", b: "2", c: "3", e: "5" }); // modify a, delete d, add e
    const remote = tree({ a: "1", b: "2y", d: "4", f: "6" }); // modify b, delete c, add f
    const plan = planTreeMerge(base, local, remote);
    expect(entriesOf(plan)).toEqual({
      a: resolved("1x"),
      b: resolved("2y"),
      e: resolved("5"),
      f: resolved("6"),
    });
    expect(plan.conflicts).toEqual([]);
  });

  it("accepts identical changes, including both deleting and both adding the same", () => {
    const plan = planTreeMerge(
      tree({ a: "1", b: "2" }),
      tree({ a: "9", c: "3" }),
      tree({ a: "9", c: "3" }),
    );
    expect(entriesOf(plan)).toEqual({ a: resolved("9"), c: resolved("3") });
    expect(plan.conflicts).toEqual([]);
  });

  it("asks for a text merge where both changed differently, without base for add/add", () => {
    const plan = planTreeMerge(
      tree({ a: "1" }),
      tree({ a: "2", n: "x" }),
      tree({ a: "3", n: "y" }),
    );
    expect(entriesOf(plan)).toEqual({
      a: { _tag: "NeedsTextMerge", base: "1", local: "2", remote: "3" },
      n: { _tag: "NeedsTextMerge", base: undefined, local: "x", remote: "y" },
    });
    expect(plan.conflicts).toEqual([]);
  });

  it("keeps the modified side of delete/modify and reports it", () => {
    const plan = planTreeMerge(tree({ a: "1", b: "2" }), tree({ b: "2x" }), tree({ a: "1y" }));
    expect(entriesOf(plan)).toEqual({ a: resolved("1y"), b: resolved("2x") });
    expect(plan.conflicts).toEqual([
      { path: "a", reason: "DELETE_MODIFY" },
      { path: "b", reason: "DELETE_MODIFY" },
    ]);
  });

  it("returns the base when nothing changed", () => {
    const base = tree({ "x/y": "1", z: "2" });
    const plan = planTreeMerge(base, base, base);
    expect(entriesOf(plan)).toEqual({ "x/y": resolved("1"), z: resolved("2") });
    expect(plan.conflicts).toEqual([]);
  });
});

describe("planTreeMerge structural conflicts", () => {
  it("moves a local file aside where remote has a directory", () => {
    const plan = planTreeMerge(tree({}), tree({ "notes/a": "f" }), tree({ "notes/a/b.md": "d" }));
    expect(entriesOf(plan)).toEqual({
      "notes/a/b.md": resolved("d"),
      "notes/a~local": resolved("f"),
    });
    expect(plan.conflicts).toEqual([
      {
        path: "notes/a",
        reason: "FILE_DIRECTORY",
        movedTo: "notes/a~local",
        side: "local",
        keptAs: "notes/a",
      },
    ]);
  });

  it("moves a remote file aside where local has a directory", () => {
    const plan = planTreeMerge(
      tree({ k: "0" }),
      tree({ k: "0", "a/b": "d" }),
      tree({ k: "0", a: "f" }),
    );
    expect(entriesOf(plan)).toEqual({
      "a/b": resolved("d"),
      "a~remote": resolved("f"),
      k: resolved("0"),
    });
    expect(plan.conflicts).toEqual([
      { path: "a", reason: "FILE_DIRECTORY", movedTo: "a~remote", side: "remote", keptAs: "a" },
    ]);
  });

  it("adds a counter when the aside name is taken", () => {
    const plan = planTreeMerge(tree({}), tree({ a: "f", "a~local": "t" }), tree({ "a/b": "d" }));
    expect(entriesOf(plan)).toEqual({
      "a/b": resolved("d"),
      "a~local": resolved("t"),
      "a~local~2": resolved("f"),
    });
    expect(plan.conflicts).toEqual([
      { path: "a", reason: "FILE_DIRECTORY", movedTo: "a~local~2", side: "local", keptAs: "a" },
    ]);
  });

  it("reports a file kept by delete/modify that clashes with a directory once, as FILE_DIRECTORY", () => {
    // Remote replaced file a by directory a/; local modified file a.
    const plan = planTreeMerge(tree({ a: "1" }), tree({ a: "2" }), tree({ "a/x": "3" }));
    expect(entriesOf(plan)).toEqual({ "a/x": resolved("3"), "a~local": resolved("2") });
    expect(plan.conflicts).toEqual([
      { path: "a", reason: "FILE_DIRECTORY", movedTo: "a~local", side: "local", keptAs: "a" },
    ]);
  });

  it("keeps remote's path of two equal under case folding and moves local's aside", () => {
    const plan = planTreeMerge(tree({}), tree({ "Readme.md": "l" }), tree({ "README.md": "r" }));
    expect(entriesOf(plan)).toEqual({
      "README.md": resolved("r"),
      "Readme.md~local": resolved("l"),
    });
    expect(plan.conflicts).toEqual([
      {
        path: "Readme.md",
        reason: "CASE_COLLISION",
        movedTo: "Readme.md~local",
        side: "local",
        keptAs: "README.md",
      },
    ]);
  });

  it("folds as the path rules do: ß meets ss, final sigma meets sigma, in files and directories", () => {
    for (const [local, remote] of [
      ["ss.md", "\u00df.md"],
      ["\u03b1\u03c3.md", "\u0391\u03a3.md"],
      ["STRASSE/a.md", "stra\u00dfe/b.md"],
    ] as const) {
      const plan = planTreeMerge(tree({}), tree({ [local]: "l" }), tree({ [remote]: "r" }));
      expect(
        plan.conflicts.map((c) => c.reason),
        local,
      ).toEqual(["CASE_COLLISION"]);
      expect(findCaseCollisions(Object.keys(entriesOf(plan))), local).toEqual([]);
    }
  });

  it("folds after NFC normalisation", () => {
    const composed = "caf\u00e9.md";
    const decomposed = "CAFE\u0301.md";
    const plan = planTreeMerge(tree({}), tree({ [decomposed]: "l" }), tree({ [composed]: "r" }));
    expect(plan.conflicts).toEqual([
      {
        path: decomposed,
        reason: "CASE_COLLISION",
        movedTo: `${decomposed}~local`,
        side: "local",
        keptAs: composed,
      },
    ]);
  });

  it("separates directories spelt differently by the two sides", () => {
    const plan = planTreeMerge(
      tree({ top: "0" }),
      tree({ top: "0", "Notes/a.md": "l1", "Notes/sub/b.md": "l2" }),
      tree({ top: "0", "notes/c.md": "r" }),
    );
    expect(entriesOf(plan)).toEqual({
      "Notes~local/a.md": resolved("l1"),
      "Notes~local/sub/b.md": resolved("l2"),
      "notes/c.md": resolved("r"),
      top: resolved("0"),
    });
    expect(plan.conflicts).toEqual([
      {
        path: "Notes/a.md",
        reason: "CASE_COLLISION",
        movedTo: "Notes~local/a.md",
        side: "local",
        keptAs: "notes",
      },
      {
        path: "Notes/sub/b.md",
        reason: "CASE_COLLISION",
        movedTo: "Notes~local/sub/b.md",
        side: "local",
        keptAs: "notes",
      },
    ]);
  });

  it("treats a file and a directory equal under case folding as file/directory", () => {
    const plan = planTreeMerge(tree({}), tree({ Docs: "f" }), tree({ "docs/x": "d" }));
    expect(entriesOf(plan)).toEqual({ "Docs~local": resolved("f"), "docs/x": resolved("d") });
    expect(plan.conflicts).toEqual([
      {
        path: "Docs",
        reason: "FILE_DIRECTORY",
        movedTo: "Docs~local",
        side: "local",
        keptAs: "docs",
      },
    ]);
  });

  it("sorts conflicts by path", () => {
    const plan = planTreeMerge(
      tree({ z: "1", b: "2" }),
      tree({ b: "2x", m: "f" }),
      tree({ z: "1y", "m/x": "d" }),
    );
    expect(plan.conflicts.map((c) => c.path)).toEqual(["b", "m", "z"]);
  });
});

describe("planTreeMerge properties", () => {
  const pathArb = fc.constantFrom("a", "b", "A", "a/x", "b/y", "B/y", "c/d/e", "c");
  const treeArb = fc
    .dictionary(pathArb, fc.constantFrom("1", "2", "3"), { maxKeys: 5 })
    .map((record) => new Map(Object.entries(record)));
  const directories = (path: string): Array<string> => {
    const parts = path.split("/");
    return parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join("/"));
  };
  /** No two paths or directory spellings equal when folded, no file that is also a directory. */
  const valid = (t: ReadonlyMap<string, unknown>): boolean => {
    const files = new Set<string>();
    const spelling = new Map<string, string>();
    for (const path of t.keys()) {
      const folded = path.toLowerCase();
      if (files.has(folded)) return false;
      files.add(folded);
      for (const directory of directories(path)) {
        const known = spelling.get(directory.toLowerCase());
        if (known !== undefined && known !== directory) return false;
        spelling.set(directory.toLowerCase(), directory);
      }
    }
    return [...files].every((file) => !spelling.has(file));
  };
  const validTreeArb = treeArb.filter(valid);

  it("takes the other side when one side is unchanged", () => {
    fc.assert(
      fc.property(validTreeArb, validTreeArb, (base, other) => {
        const expected = Object.fromEntries([...other].map(([path, id]) => [path, resolved(id)]));
        expect(Object.fromEntries(planTreeMerge(base, base, other).entries)).toEqual(expected);
        expect(Object.fromEntries(planTreeMerge(base, other, base).entries)).toEqual(expected);
      }),
    );
  });

  it("always yields a tree without clashes and with every conflict path sorted", () => {
    fc.assert(
      fc.property(validTreeArb, validTreeArb, validTreeArb, (base, local, remote) => {
        const plan = planTreeMerge(base, local, remote);
        expect(valid(plan.entries)).toBe(true);
        const conflictPaths = plan.conflicts.map((c) => c.path);
        expect(conflictPaths).toEqual([...conflictPaths].sort());
        // Nothing is lost: every id of the plan comes from a side.
        for (const entry of plan.entries.values()) {
          if (entry._tag === "Resolved")
            expect([...local.values(), ...remote.values()]).toContain(entry.id);
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe("names written aside fit every path rule (SPEC §4.1)", () => {
  const bytes = (text: string) => new TextEncoder().encode(text).length;
  const validAll = (paths: Iterable<string>) => {
    for (const path of paths) {
      expect(isNotebookPath(path), path).toBe(true);
      expect(bytes(path)).toBeLessThanOrEqual(4096);
      for (const segment of path.split("/")) expect(bytes(segment)).toBeLessThanOrEqual(255);
    }
  };

  it("a file moved aside by a file/directory conflict keeps a 255-byte segment", () => {
    const long = `${"é".repeat(126)}.m`; // 254 bytes
    const plan = planTreeMerge(tree({}), tree({ [long]: "l" }), tree({ [`${long}/x.md`]: "r" }));
    expect(plan.conflicts).toHaveLength(1);
    const moved = plan.conflicts[0]?.movedTo ?? "";
    expect(moved.endsWith("~local")).toBe(true);
    expect(bytes(moved)).toBeLessThanOrEqual(255);
    validAll(plan.entries.keys());
  });

  it("case clashes of long names, several of them, get distinct names that fit", () => {
    const long = "a".repeat(250);
    const plan = planTreeMerge(
      tree({}),
      tree({ [`${long}.md`]: "1", [`${long.toUpperCase()}.MD`]: "2" }),
      tree({ [`${long}.Md`]: "3" }),
    );
    const moved = plan.conflicts.map((c) => c.movedTo ?? "");
    expect(new Set(moved.map((m) => m.toLowerCase())).size).toBe(moved.length);
    validAll(plan.entries.keys());
  });

  it("a directory renamed for a case clash leaves room for the deepest path below it", () => {
    const deep = Array.from({ length: 16 }, (_, i) => `${i}`.padStart(2, "0") + "d".repeat(251));
    const spellingA = `Top/${deep.join("/")}/f${"x".repeat(4096 - 4 - 16 * 254 - 1 - 3)}.md`;
    expect(isNotebookPath(spellingA)).toBe(true);
    expect(bytes(spellingA)).toBe(4096);
    const spellingB = `top/${deep.join("/")}/other.md`;
    const plan = planTreeMerge(tree({}), tree({ [spellingA]: "l" }), tree({ [spellingB]: "r" }));
    expect(plan.conflicts.length).toBeGreaterThan(0);
    validAll(plan.entries.keys());
  });

  it("property: whatever the names, every merged path is valid and no two fold alike", () => {
    // Long segments (near 255 bytes), and remote trees made of the local paths spelt in
    // another case or turned into directories: the clashes that move files aside.
    const segment = fc
      .tuple(fc.constantFrom("a", "é", "😀"), fc.integer({ min: 1, max: 255 }))
      .map(([char, count]) => char.repeat(Math.max(1, Math.floor(count / bytes(char)))));
    const pathArb = fc.array(segment, { minLength: 1, maxLength: 3 }).map((s) => s.join("/"));
    const pick = (paths: ReadonlyArray<string>) => {
      const kept: Record<string, string> = {};
      const folded: string[] = [];
      for (const path of paths) {
        if (!isNotebookPath(path)) continue;
        const key = path.toLowerCase();
        if (folded.some((o) => o === key || o.startsWith(`${key}/`) || key.startsWith(`${o}/`)))
          continue;
        folded.push(key);
        kept[path] = "1";
      }
      return tree(kept);
    };
    const sides = fc
      .array(fc.tuple(pathArb, fc.constantFrom("upper", "child", "same", "other")), {
        minLength: 1,
        maxLength: 5,
      })
      .map((rows) => {
        const local = pick(rows.map(([path]) => path));
        const remote = pick(
          rows.map(([path, how]) =>
            how === "upper"
              ? path.toUpperCase()
              : how === "child"
                ? `${path}/x.md`
                : how === "same"
                  ? path
                  : `${path}o`,
          ),
        );
        return [local, remote] as const;
      });
    const validTree = sides;
    fc.assert(
      fc.property(validTree, ([local, remote]) => {
        const plan = planTreeMerge(tree({}), local, remote);
        validAll(plan.entries.keys());
        const keys = [...plan.entries.keys()].map((p) => p.normalize("NFC").toLowerCase());
        expect(new Set(keys).size).toBe(keys.length);
      }),
      { numRuns: 300 },
    );
  });
});
