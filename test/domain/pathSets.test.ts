import { Either } from "effect";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  hasPathSets,
  noPathSets,
  normalizePathSetEntry,
  normalizePathSets,
  resolveAccess,
  type PathSets,
} from "../../src/domain/pathSets.js";

const sets = (raw: { writable?: string[]; readOnly?: string[] }): PathSets => {
  const result = normalizePathSets({ writable: raw.writable ?? [], readOnly: raw.readOnly ?? [] });
  if (Either.isLeft(result)) throw new Error(result.left.message);
  return result.right;
};

describe("normalizePathSetEntry", () => {
  it("drops ./ and trailing slashes and applies NFC", () => {
    expect(normalizePathSetEntry("./docs/")).toEqual(Either.right("docs"));
    expect(normalizePathSetEntry("././a/b//")).toEqual(Either.right("a/b"));
    expect(normalizePathSetEntry("cafe\u0301")).toEqual(Either.right("caf\u00e9"));
  });

  it("refuses the root, absolute paths and invalid names", () => {
    for (const raw of ["", ".", "./", "/"]) {
      const result = normalizePathSetEntry(raw);
      expect(Either.isLeft(result) && result.left.kind, raw).toBe("EMPTY");
    }
    const kind = (raw: string) => {
      const result = normalizePathSetEntry(raw);
      return Either.isLeft(result) ? result.left.kind : "OK";
    };
    expect(kind("/abs")).toBe("ABSOLUTE");
    expect(kind("a/../b")).toBe("RESERVED_NAME");
    expect(kind("a//b")).toBe("EMPTY_SEGMENT");
    expect(kind("a:b")).toBe("FORBIDDEN_CHARACTER");
  });
});

describe("normalizePathSets", () => {
  it("normalises, de-duplicates and sorts each set", () => {
    expect(
      sets({ writable: ["notes/", "./drafts", "notes", "b"], readOnly: ["z", "./a/"] }),
    ).toEqual({
      writable: ["b", "drafts", "notes"],
      readOnly: ["a", "z"],
    });
    expect(sets({})).toEqual(noPathSets);
  });

  it("refuses an entry in both sets, also when spelled differently", () => {
    for (const [writable, readOnly] of [
      ["docs", "./docs/"],
      ["Docs", "docs"],
    ] as const) {
      const result = normalizePathSets({ writable: [writable], readOnly: ["x", readOnly] });
      expect(Either.isLeft(result) && result.left.kind).toBe("IN_BOTH_SETS");
    }
  });

  it("reports the invalid entry and its set", () => {
    const result = normalizePathSets({ writable: ["ok"], readOnly: ["bad|name"] });
    expect(Either.isLeft(result) && result.left).toMatchObject({
      kind: "INVALID_ENTRY",
      set: "readOnly",
      entry: "bad|name",
      problem: { kind: "FORBIDDEN_CHARACTER" },
    });
    if (Either.isLeft(result)) expect(result.left.message).toContain("read-only");
  });

  it("is idempotent", () => {
    const entry = fc.constantFrom("a", "a/b", "./c/", "d/", "B", "e/f/g");
    fc.assert(
      fc.property(fc.array(entry), fc.array(entry), (writable, readOnly) => {
        const once = normalizePathSets({ writable, readOnly });
        if (Either.isRight(once)) {
          expect(
            normalizePathSets({
              writable: [...once.right.writable],
              readOnly: [...once.right.readOnly],
            }),
          ).toEqual(once);
        }
      }),
    );
  });
});

describe("resolveAccess", () => {
  it("makes everything writable without sets", () => {
    expect(hasPathSets(noPathSets)).toBe(false);
    expect(resolveAccess(noPathSets, "any/file.md")).toEqual({
      access: "writable",
      entry: undefined,
    });
  });

  it("with only a writable set, anything outside it is NOT_WRITABLE", () => {
    const only = sets({ writable: ["notes", "todo.md"] });
    expect(hasPathSets(only)).toBe(true);
    expect(resolveAccess(only, "notes")).toEqual({ access: "writable", entry: "notes" });
    expect(resolveAccess(only, "notes/a/b.md")).toEqual({ access: "writable", entry: "notes" });
    expect(resolveAccess(only, "todo.md")).toEqual({ access: "writable", entry: "todo.md" });
    expect(resolveAccess(only, "notesX/a.md")).toEqual({
      access: "read-only",
      entry: undefined,
      fileReason: "NOT_WRITABLE",
    });
    expect(resolveAccess(only, "todo.md/x")).toEqual({ access: "writable", entry: "todo.md" });
    expect(resolveAccess(only, "todo.mdx")).toMatchObject({
      access: "read-only",
      fileReason: "NOT_WRITABLE",
    });
  });

  it("with only a read-only set, anything outside it is writable", () => {
    const only = sets({ readOnly: ["docs", "faq.md"] });
    expect(resolveAccess(only, "docs/x.md")).toEqual({
      access: "read-only",
      entry: "docs",
      fileReason: "READ_ONLY",
    });
    expect(resolveAccess(only, "faq.md")).toEqual({
      access: "read-only",
      entry: "faq.md",
      fileReason: "READ_ONLY",
    });
    expect(resolveAccess(only, "docsy.md")).toEqual({ access: "writable", entry: undefined });
  });

  it("lets the longest matching entry decide across both sets", () => {
    const both = sets({ writable: ["docs/drafts", "notes"], readOnly: ["docs", "notes/archive"] });
    expect(resolveAccess(both, "docs/a.md")).toMatchObject({
      access: "read-only",
      entry: "docs",
      fileReason: "READ_ONLY",
    });
    expect(resolveAccess(both, "docs/drafts/a.md")).toEqual({
      access: "writable",
      entry: "docs/drafts",
    });
    expect(resolveAccess(both, "notes/a.md")).toEqual({ access: "writable", entry: "notes" });
    expect(resolveAccess(both, "notes/archive/2020.md")).toMatchObject({
      access: "read-only",
      entry: "notes/archive",
      fileReason: "READ_ONLY",
    });
    // a writable set is configured, so an unmatched path is not writable
    expect(resolveAccess(both, "elsewhere.md")).toMatchObject({
      access: "read-only",
      fileReason: "NOT_WRITABLE",
    });
  });

  it("matches under case folding, the notebook's own path identity", () => {
    const only = sets({ readOnly: ["docs"] });
    expect(resolveAccess(only, "Docs/new.md")).toMatchObject({
      access: "read-only",
      entry: "docs",
    });
  });

  it("agrees with a brute-force reading of SPEC §5", () => {
    const segment = fc.constantFrom("a", "b", "c");
    const path = fc
      .array(segment, { minLength: 1, maxLength: 3 })
      .map((segments) => segments.join("/"));
    fc.assert(
      fc.property(
        fc.uniqueArray(path, { maxLength: 4 }),
        fc.uniqueArray(path, { maxLength: 4 }),
        path,
        (w, r, p) => {
          const readOnly = r.filter((entry) => !w.includes(entry));
          const result = resolveAccess(sets({ writable: w, readOnly }), p);
          const under = (entry: string) => p === entry || p.startsWith(`${entry}/`);
          const matches = [
            ...w.filter(under).map((entry) => ({ entry, access: "writable" })),
            ...readOnly.filter(under).map((entry) => ({ entry, access: "read-only" })),
          ].sort((x, y) => y.entry.length - x.entry.length);
          const best = matches[0];
          const expected =
            best !== undefined ? best.access : w.length > 0 ? "read-only" : "writable";
          expect(result.access).toBe(expected);
          expect(result.entry).toBe(best?.entry);
        },
      ),
    );
  });
});
