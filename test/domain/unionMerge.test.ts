import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { findMarkerBlocks } from "../../src/domain/markers.js";
import { mergeText, mergeUnion } from "../../src/domain/textMerge.js";

const text = (...lines: Array<string>): string => lines.map((line) => `${line}\n`).join("");
const linesOf = (merged: string): Array<string> =>
  merged === "" ? [] : merged.replace(/\n$/, "").split("\n");

describe("mergeUnion examples", () => {
  it("keeps both appended lines, the accepted remote's first", () => {
    const base = text("# journal", "- seed");
    expect(
      mergeUnion(base, text("# journal", "- seed", "- L"), text("# journal", "- seed", "- R")),
    ).toBe(text("# journal", "- seed", "- R", "- L"));
  });

  it("keeps both sides of an overlapping edit, without markers", () => {
    expect(mergeUnion(text("a", "b", "c"), text("a", "L", "c"), text("a", "R", "c"))).toBe(
      text("a", "R", "L", "c"),
    );
    // Edits of adjacent lines (a conflict for the text merge) keep both versions of each.
    expect(
      mergeUnion(text("a", "b", "c", "d"), text("a", "B", "c", "d"), text("a", "b", "C", "d")),
    ).toBe(text("a", "b", "C", "B", "c", "d"));
  });

  it("writes a line added identically on both sides once", () => {
    expect(mergeUnion(text("a"), text("a", "x", "L"), text("a", "x", "R"))).toBe(
      text("a", "x", "R", "L"),
    );
    // Where the text merge would join the two differences into one block (and so
    // repeat the shared line), the union merge keeps the shared line once.
    expect(mergeText(text("a"), text("a", "x", "L"), text("a", "R", "x")).text).toBe(
      text("a", "<<<<<<< local", "x", "L", "=======", "R", "x", ">>>>>>> remote"),
    );
    expect(mergeUnion(text("a"), text("a", "x", "L"), text("a", "R", "x"))).toBe(
      text("a", "R", "x", "L"),
    );
  });

  it("is the text merge wherever that merges cleanly", () => {
    const base = text("a", "b", "c", "d", "e");
    const local = text("A", "b", "c", "d", "e");
    const remote = text("a", "b", "c", "d", "E");
    expect(mergeUnion(base, local, remote)).toBe(mergeText(base, local, remote).text);
    expect(mergeUnion(base, base, remote)).toBe(remote);
    expect(mergeUnion(base, local, base)).toBe(local);
    expect(mergeUnion(base, local, local)).toBe(local);
  });

  it("takes a deletion in a clean region and keeps the other side's edit in an overlapping one", () => {
    const base = text("a", "b", "c", "d", "e", "f", "g");
    const local = text("a", "c", "d", "e", "f", "G1");
    const remote = text("a", "b", "c", "d", "e", "f", "G2");
    expect(mergeUnion(base, local, remote)).toBe(text("a", "c", "d", "e", "f", "G2", "G1"));
  });

  it("adds a line break between the sides when the remote's last line has none", () => {
    expect(mergeUnion("a\nb", "a\nL", "a\nR")).toBe("a\nR\nL");
    expect(mergeUnion("a\r\nb", "a\r\nL", "a\r\nR")).toBe("a\r\nR\r\nL");
    expect(mergeUnion("a\n", "a\nL\n", "a\nR")).toBe("a\nR\nL\n");
  });

  it("keeps line endings byte for byte", () => {
    expect(mergeUnion("a\r\n", "a\r\nL\r\n", "a\r\nR\n")).toBe("a\r\nR\nL\r\n");
  });

  it("merges onto an empty base (the caller keeps add/add for the text merge)", () => {
    expect(mergeUnion("", text("x"), text("y"))).toBe(text("y", "x"));
  });
});

// Base lines `b0…`, lines added by local `l0…` and by remote `r0…`, all distinct, so the
// line diffs are exactly the generated edits and every property can name its lines.
interface Edited {
  readonly lines: ReadonlyArray<string>;
  /** Base lines this side deleted. */
  readonly deleted: ReadonlySet<string>;
}

/** An edit of `base`: each base line kept or deleted, runs of new lines inserted in the gaps. */
const editArb = (
  base: ReadonlyArray<string>,
  side: string,
  shared: ReadonlyArray<string | undefined>,
) =>
  fc
    .tuple(
      fc.array(fc.boolean(), { minLength: base.length, maxLength: base.length }),
      fc.array(fc.nat(3), { minLength: base.length + 1, maxLength: base.length + 1 }),
    )
    .map(([keep, inserts]): Edited => {
      const lines: Array<string> = [];
      const deleted = new Set<string>();
      let counter = 0;
      for (let gap = 0; gap <= base.length; gap++) {
        const count = inserts[gap] ?? 0;
        for (let k = 0; k < count; k++) lines.push(`${side}${counter++}`);
        // A shared line, inserted identically by both sides after their own in this gap.
        const sharedLine = shared[gap];
        if (sharedLine !== undefined) lines.push(sharedLine);
        const line = base[gap];
        if (line === undefined) continue;
        if (keep[gap] === false) deleted.add(line);
        else lines.push(line);
      }
      return { lines, deleted };
    });

const caseArb = fc
  .integer({ min: 0, max: 10 })
  .chain((size) => {
    const base = Array.from({ length: size }, (_, k) => `b${k}`);
    return fc.tuple(
      fc.constant(base),
      fc.array(fc.constantFrom<string | undefined>(undefined, "s"), {
        minLength: size + 1,
        maxLength: size + 1,
      }),
    );
  })
  .chain(([base, sharing]) => {
    const shared = sharing.map((on, gap) => (on === undefined ? undefined : `s${gap}`));
    // Both sides or none get the shared lines, and a generated case without them too.
    return fc.tuple(
      fc.constant(base),
      fc.boolean().chain((withShared) => {
        const used = withShared ? shared : [];
        return fc.tuple(editArb(base, "l", used), editArb(base, "r", used), fc.constant(used));
      }),
    );
  })
  .map(([base, [local, remote, shared]]) => ({ base, local, remote, shared }));

const joined = (lines: ReadonlyArray<string>) => text(...lines);

describe("mergeUnion properties", () => {
  it("keeps every line either side added exactly once, each side's lines in its order, no markers", () => {
    fc.assert(
      fc.property(caseArb, ({ base, local, remote, shared }) => {
        const merged = linesOf(mergeUnion(joined(base), joined(local.lines), joined(remote.lines)));
        const count = (line: string) => merged.filter((m) => m === line).length;
        for (const line of [...local.lines, ...remote.lines])
          if (!base.includes(line)) expect(count(line), line).toBe(1);
        for (const line of shared) if (line !== undefined) expect(count(line)).toBe(1);
        // Restricted to one side's added lines and the lines nobody deleted, the result is
        // that side's own order.
        const keptByBoth = new Set(
          base.filter((b) => !local.deleted.has(b) && !remote.deleted.has(b)),
        );
        for (const side of [local, remote]) {
          const own = new Set(
            side.lines.filter((line) => !base.includes(line) || keptByBoth.has(line)),
          );
          expect(merged.filter((line) => own.has(line))).toEqual(
            side.lines.filter((line) => own.has(line)),
          );
        }
        for (const line of base) {
          if (keptByBoth.has(line)) expect(count(line)).toBe(1);
          if (local.deleted.has(line) && remote.deleted.has(line)) expect(count(line)).toBe(0);
        }
        expect(findMarkerBlocks(merged.join("\n"))).toEqual([]);
      }),
      { numRuns: 600 },
    );
  });

  it("is exactly the text merge where that merges cleanly, and around its conflict blocks", () => {
    fc.assert(
      fc.property(caseArb, ({ base, local, remote }) => {
        const args = [joined(base), joined(local.lines), joined(remote.lines)] as const;
        const byText = mergeText(...args);
        const union = mergeUnion(...args);
        if (byText.conflicts.length === 0) {
          expect(union).toBe(byText.text);
          return;
        }
        const textLines = linesOf(byText.text);
        const first = byText.conflicts[0]?.start ?? 1;
        const last = byText.conflicts[byText.conflicts.length - 1]?.end ?? 0;
        const unionLines = linesOf(union);
        const before = textLines.slice(0, first - 1);
        const after = textLines.slice(last);
        expect(unionLines.slice(0, before.length)).toEqual(before);
        expect(unionLines.slice(unionLines.length - after.length)).toEqual(after);
      }),
      { numRuns: 600 },
    );
  });

  it("appends: two sides appending to the same text give the remote's lines, then the local's", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom("# log", "- seed", "", "x"), { maxLength: 6 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 6 }),
        (base, localCount, remoteCount) => {
          const ours = Array.from({ length: localCount }, (_, k) => `- local ${k}`);
          const theirs = Array.from({ length: remoteCount }, (_, k) => `- remote ${k}`);
          expect(
            mergeUnion(joined(base), joined([...base, ...ours]), joined([...base, ...theirs])),
          ).toBe(joined([...base, ...theirs, ...ours]));
        },
      ),
    );
  });

  it("is deterministic, and the same merge with CRLF line endings", () => {
    fc.assert(
      fc.property(caseArb, fc.constantFrom("\n", "\r\n"), ({ base, local, remote }, eol) => {
        const join = (lines: ReadonlyArray<string>) =>
          lines.map((line) => `${line}${eol}`).join("");
        const once = mergeUnion(join(base), join(local.lines), join(remote.lines));
        expect(mergeUnion(join(base), join(local.lines), join(remote.lines))).toBe(once);
        // The same merge with the other line ending, converted back.
        const lf = mergeUnion(joined(base), joined(local.lines), joined(remote.lines));
        expect(once).toBe(lf.replaceAll("\n", eol));
      }),
    );
  });
});

// The line endings an editor may give a line: what a person who opens a journal in
// another editor, or whose editor drops the final newline, ends up publishing.
const endings = ["\n", "\r\n"] as const;
type Ending = (typeof endings)[number];

/** `lines` with the given endings (cycled), and with or without the last line's. */
const withEndings = (
  lines: ReadonlyArray<string>,
  eols: ReadonlyArray<Ending>,
  finalNewline: boolean,
): string =>
  lines
    .map((line, k) =>
      k === lines.length - 1 && !finalNewline ? line : `${line}${eols[k % eols.length] ?? "\n"}`,
    )
    .join("");

/** The lines of `merged` without their endings (LF, CRLF or none at the end). */
const bareLines = (merged: string): Array<string> =>
  merged === "" ? [] : merged.replace(/\r?\n$/, "").split(/\r?\n/);

const styleArb = fc.tuple(
  fc.array(fc.constantFrom(...endings), { minLength: 1, maxLength: 4 }),
  fc.boolean(),
);

describe("mergeUnion across line endings", () => {
  it("does not repeat a line the sides hold with different line endings or final newline", () => {
    expect(mergeUnion("a\n", "a\nb\n", "a\r\nb\r\n")).toBe("a\nb\n");
    expect(mergeUnion("a\n", "a\nb\n", "a\nb")).toBe("a\nb\n");
    expect(mergeUnion("a\n", "a\nb", "a\nb\n")).toBe("a\nb");
    expect(mergeUnion("a\n", "a\nb\n", "a\r\nb\n")).toBe("a\nb\n");
    expect(mergeUnion("a\r\n", "a\r\nb\r\n", "a\nb\nc\n")).toBe("a\r\nb\r\nc\n");
  });

  it("keeps the working copy's ending on shared lines and each side's own on its added lines", () => {
    // Remote converted the journal to CRLF and appended; local appended with LF.
    expect(mergeUnion("a\nb\n", "a\nb\nL\n", "a\r\nb\r\nR\r\n")).toBe("a\nb\nR\r\nL\n");
    // Local converted it and appended nothing else: its endings stay, remote's line comes in.
    expect(mergeUnion("a\nb\n", "a\r\nb\r\n", "a\nb\nR\n")).toBe("a\r\nb\r\nR\n");
    // Only remote converted: nothing on the local side changed, remote is taken whole.
    expect(mergeUnion("a\nb\n", "a\nb\n", "a\r\nb\r\n")).toBe("a\r\nb\r\n");
  });

  it("does not repeat the first line when an editor added or dropped a byte order mark", () => {
    expect(mergeUnion("# j\n", "\uFEFF# j\n- L\n", "# j\n- R\n")).toBe("\uFEFF# j\n- R\n- L\n");
    expect(mergeUnion("\uFEFF# j\n", "# j\n- L\n", "\uFEFF# j\n- R\n")).toBe("# j\n- R\n- L\n");
    expect(mergeUnion("# j\n", "# j\n- L\n", "\uFEFF# j\r\n- R\r\n")).toBe("# j\n- R\r\n- L\n");
    // Only a mark at the start of the file is one; elsewhere U+FEFF is content.
    expect(mergeUnion("a\n", "a\n\uFEFFa\n", "a\nb\n")).toBe("a\nb\n\uFEFFa\n");
    expect(mergeUnion("\uFEFFa\n", "z\n\uFEFFa\n", "\uFEFFa\nb\n")).toBe(
      "\uFEFFa\nb\nz\n\uFEFFa\n",
    );
  });

  it("keeps a byte order mark at the start when the line it opened no longer comes first", () => {
    // Local's editor added the mark; remote put a line before the first: the mark stays
    // the file's first character, never inside it.
    expect(mergeUnion("A\n", "\uFEFFA\n", "X\nA\n")).toBe("\uFEFFX\nA\n");
    expect(mergeUnion("A\n", "\uFEFFA\nL\n", "X\nA\n")).toBe("\uFEFFX\nA\nL\n");
    // Remote's mark, on a line that lands after local's new first line: dropped.
    expect(mergeUnion("A\n", "X\nA\n", "\uFEFFA\nR\n")).toBe("X\nA\nR\n");
  });

  it("never glues two lines together when a side's last line has no newline", () => {
    // Local dropped the final newline and added a first line; remote appended.
    expect(mergeUnion("a\n", "z\na", "a\nr\n")).toBe("z\na\nr\n");
    expect(mergeUnion("a", "a\nL\n", "a\r\nR")).toBe("a\nR\nL\n");
    expect(mergeUnion("a\nb", "a\nb\nL", "a\nb\nR")).toBe("a\nb\nR\nL");
  });

  it("gives the same lines whatever endings the sides use, so none is lost or repeated", () => {
    fc.assert(
      fc.property(
        caseArb,
        styleArb,
        styleArb,
        styleArb,
        ({ base, local, remote }, baseStyle, localStyle, remoteStyle) => {
          const reference = bareLines(
            mergeUnion(joined(base), joined(local.lines), joined(remote.lines)),
          );
          const merged = mergeUnion(
            withEndings(base, ...baseStyle),
            withEndings(local.lines, ...localStyle),
            withEndings(remote.lines, ...remoteStyle),
          );
          expect(bareLines(merged)).toEqual(reference);
          // Every line either side added is there, exactly once.
          for (const line of [...local.lines, ...remote.lines])
            if (!base.includes(line))
              expect(bareLines(merged).filter((m) => m === line).length, line).toBe(1);
        },
      ),
      { numRuns: 800 },
    );
  });
});
