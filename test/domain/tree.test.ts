import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fileDirectoryClashes } from "../../src/domain/tree.js";

/** Every `[file, below]` pair of `paths` touching `added`, by comparing every two paths. */
const bruteForce = (paths: ReadonlyArray<string>, added: ReadonlyArray<string>) => {
  const pairs = new Set<string>();
  for (const file of paths)
    for (const below of paths)
      if (below.startsWith(`${file}/`) && (added.includes(file) || added.includes(below)))
        pairs.add(`${file} ${below}`);
  return [...pairs].sort();
};

describe("file/directory clashes of an assembled tree", () => {
  it("finds exactly the pairs a brute-force comparison finds, for the added paths", () => {
    const segment = fc.constantFrom("a", "b", "c.md");
    const path = fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => s.join("/"));
    fc.assert(
      fc.property(fc.uniqueArray(path, { maxLength: 12 }), fc.nat(), (paths, cut) => {
        const added = paths.slice(0, cut % (paths.length + 1));
        const tree = new Map(paths.map((p) => [p, "id"]));
        // Each pair names its file, and one file below it (any one), so compare the files
        // and that every reported pair is a real one.
        const found = fileDirectoryClashes(tree, added);
        for (const [file, below] of found) {
          expect(tree.has(file) && tree.has(below) && below.startsWith(`${file}/`)).toBe(true);
          expect(added.includes(file) || added.includes(below)).toBe(true);
        }
        const expected = bruteForce(paths, added);
        const filesFound = new Set(found.map(([file]) => file));
        expect([...filesFound].sort()).toEqual(
          [...new Set(expected.map((pair) => pair.split(" ")[0]))].sort(),
        );
        // Every added path below a file is named.
        for (const pair of expected) {
          const [file, below] = pair.split(" ");
          if (added.includes(below ?? ""))
            expect(found.some(([f, b]) => f === file && b === below)).toBe(true);
        }
      }),
    );
  });

  it("is empty when nothing is added, or nothing clashes", () => {
    const tree = new Map([
      ["a", "1"],
      ["a/b.md", "2"],
    ]);
    expect(fileDirectoryClashes(tree, [])).toEqual([]);
    expect(fileDirectoryClashes(new Map([["x/y.md", "1"]]), ["x/y.md"])).toEqual([]);
    expect(fileDirectoryClashes(tree, ["a/b.md"])).toEqual([["a", "a/b.md"]]);
  });
});
