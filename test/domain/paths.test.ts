import { Either } from "effect";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  caseFoldKey,
  findCaseCollisions,
  isNotebookPath,
  normalizeNotebookPath,
  utf8Length,
} from "../../src/domain/paths.js";

const kindOf = (raw: string) => {
  const result = normalizeNotebookPath(raw);
  return Either.isLeft(result) ? result.left.kind : "OK";
};

// Segments built from a safe alphabet (letters incl. non-ASCII, digits, -, _, inner dots
// and spaces), never a device name or reserved name.
const safeChar = fc.constantFrom(...Array.from("abcxyzABCXYZ019-_éßΣ漢😀"), "e\u0301");
const safeSegment = fc
  .tuple(
    fc.array(safeChar, { minLength: 1, maxLength: 12 }),
    fc.constantFrom("", ".md", ".txt", " x"),
  )
  .map(([chars, suffix]) => `q${chars.join("")}${suffix}`);
const validPath = fc
  .array(safeSegment, { minLength: 1, maxLength: 6 })
  .map((segments) => segments.join("/"));

describe("normalizeNotebookPath", () => {
  it("accepts ordinary relative paths", () => {
    for (const path of [
      "a.md",
      "notes/today.md",
      "a b/c d.md",
      ".hidden",
      "dir.d/x",
      "conference.md",
      "com10",
      "lpt",
      "x/.gitignore",
    ]) {
      expect(normalizeNotebookPath(path)).toEqual(Either.right(path));
    }
  });

  it("normalises to NFC", () => {
    expect(normalizeNotebookPath("cafe\u0301.md")).toEqual(Either.right("caf\u00e9.md"));
  });

  it("rejects each broken rule with its kind", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["", "EMPTY"],
      ["/abs.md", "ABSOLUTE"],
      ["a//b", "EMPTY_SEGMENT"],
      ["a/", "EMPTY_SEGMENT"],
      ["./a", "RESERVED_NAME"],
      ["a/../b", "RESERVED_NAME"],
      [".git/config", "RESERVED_NAME"],
      ["x/.GIT", "RESERVED_NAME"],
      ["a\\b", "FORBIDDEN_CHARACTER"],
      ["a:b", "FORBIDDEN_CHARACTER"],
      ["what?", "FORBIDDEN_CHARACTER"],
      ["a\u0000b", "CONTROL_CHARACTER"],
      ["tab\there", "CONTROL_CHARACTER"],
      ["del\u007f", "CONTROL_CHARACTER"],
      ["trailing ", "TRAILING_SPACE_OR_DOT"],
      ["trailing.", "TRAILING_SPACE_OR_DOT"],
      ["CON", "DEVICE_NAME"],
      ["dir/con.txt", "DEVICE_NAME"],
      ["Nul.tar.gz", "DEVICE_NAME"],
      ["com1", "DEVICE_NAME"],
      ["LPT9.md", "DEVICE_NAME"],
      ["COM0", "DEVICE_NAME"],
      ["aux .md", "DEVICE_NAME"],
      ["prn", "DEVICE_NAME"],
      ["bad\ud800surrogate", "NOT_UNICODE"],
      ["x".repeat(256), "SEGMENT_TOO_LONG"],
      ["é".repeat(128), "SEGMENT_TOO_LONG"],
      [Array.from({ length: 20 }, () => "y".repeat(250)).join("/"), "PATH_TOO_LONG"],
    ];
    for (const [raw, kind] of cases) expect(kindOf(raw), JSON.stringify(raw)).toBe(kind);
  });

  it("accepts the byte limits exactly", () => {
    expect(kindOf("x".repeat(255))).toBe("OK");
    expect(kindOf("é".repeat(127) + "x")).toBe("OK"); // 255 bytes
    const path = [...Array.from({ length: 15 }, () => "y".repeat(255)), "y".repeat(254), "z"].join(
      "/",
    );
    expect(utf8Length(path)).toBe(4096);
    expect(kindOf(path)).toBe("OK");
    expect(kindOf(`${path}z`)).toBe("PATH_TOO_LONG");
  });

  it("is idempotent", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme-composite", maxLength: 40 }), (raw) => {
        const once = normalizeNotebookPath(raw);
        if (Either.isRight(once)) expect(normalizeNotebookPath(once.right)).toEqual(once);
      }),
    );
  });

  it("round-trips valid NFC paths", () => {
    fc.assert(
      fc.property(validPath, (path) => {
        const nfc = path.normalize("NFC");
        expect(normalizeNotebookPath(nfc)).toEqual(Either.right(nfc));
        expect(isNotebookPath(nfc)).toBe(true);
      }),
    );
  });

  it("rejects any path containing a forbidden or control character", () => {
    const bad = fc.constantFrom(...'\\:*?"<>|'.split(""), "\u0000", "\u001f", "\n", "\u007f");
    fc.assert(
      fc.property(validPath, bad, fc.nat(), (path, char, at) => {
        const index = at % (path.length + 1);
        const broken = path.slice(0, index) + char + path.slice(index);
        expect(Either.isLeft(normalizeNotebookPath(broken))).toBe(true);
      }),
    );
  });

  it("computes UTF-8 lengths like TextEncoder", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (text) => {
        expect(utf8Length(text)).toBe(new TextEncoder().encode(text).length);
      }),
    );
  });
});

describe("caseFoldKey", () => {
  it("folds case, ß and sigma, and keeps separators", () => {
    expect(caseFoldKey("Notes/README.md")).toBe(caseFoldKey("notes/readme.md"));
    expect(caseFoldKey("Straße")).toBe(caseFoldKey("STRASSE"));
    expect(caseFoldKey("ΟΔΟΣ")).toBe(caseFoldKey("οδος"));
    expect(caseFoldKey("caf\u00e9")).toBe(caseFoldKey("CAFE\u0301"));
    expect(caseFoldKey("a/b")).not.toBe(caseFoldKey("a b"));
    expect(caseFoldKey("a/B").split("/")).toHaveLength(2);
  });
});

describe("findCaseCollisions", () => {
  it("finds nothing among distinct folds or identical duplicates", () => {
    expect(findCaseCollisions(["a.md", "b.md", "a.md", "dir/a.md"])).toEqual([]);
  });

  it("groups paths equal under case folding", () => {
    expect(findCaseCollisions(["README.md", "x.md", "readme.md", "ReadMe.md"])).toEqual([
      ["ReadMe.md", "README.md", "readme.md"].sort(),
    ]);
  });

  it("reports directory-level and file-vs-directory collisions once", () => {
    expect(findCaseCollisions(["Notes/a.md", "notes/b.md", "notes/c.md", "other.md"])).toEqual([
      ["Notes/a.md", "notes/b.md", "notes/c.md"],
    ]);
    expect(findCaseCollisions(["a", "A/b"])).toEqual([["A/b", "a"]]);
    expect(findCaseCollisions(["X/y.md", "x/Y.md", "z", "Z"])).toEqual([
      ["X/y.md", "x/Y.md"],
      ["Z", "z"],
    ]);
  });

  it("agrees with a quadratic reference on exact-path collisions", () => {
    const segment = fc.constantFrom("a", "A", "b", "ß", "ss", "SS");
    const path = fc
      .array(segment, { minLength: 1, maxLength: 3 })
      .map((segments) => segments.join("/"));
    fc.assert(
      fc.property(fc.array(path, { maxLength: 12 }), (paths) => {
        const unique = [...new Set(paths)];
        const collides = (p: string) =>
          unique.some((q) => {
            if (q === p) return false;
            const ps = p.split("/");
            const qs = q.split("/");
            // some common-depth prefix folds equal but is spelled differently
            for (let depth = 1; depth <= Math.min(ps.length, qs.length); depth++) {
              const a = ps.slice(0, depth).join("/");
              const b = qs.slice(0, depth).join("/");
              if (a !== b && caseFoldKey(a) === caseFoldKey(b)) return true;
            }
            return false;
          });
        const reported = new Set(findCaseCollisions(paths).flat());
        for (const p of unique) expect(reported.has(p), p).toBe(collides(p));
      }),
    );
  });
});
