import { describe, expect, it } from "vitest";
import {
  renderDiff,
  renderDiffStat,
  renderRestored,
  renderStatus,
  statusJson,
  type CopyStatus,
} from "../../src/domain/copyStatus.js";
import { unifiedDiff } from "../../src/domain/unifiedDiff.js";

describe("status of a copy with held files", () => {
  const status: CopyStatus = {
    generation: 3,
    remoteGeneration: 3,
    ahead: 0,
    changes: [],
    markers: [],
    invalid: [],
    recoveryPending: false,
    held: ["p.md"],
  };

  it("is not called up to date, and lists them", () => {
    expect(renderStatus(status, { color: false })).toBe(
      [
        "generation 3; 1 file still to be merged from the notebook (quire pull brings it in)",
        "changed while an earlier call ran, not yet merged (the next pull or commit merges them):",
        "  p.md",
        "nothing to commit",
        "",
      ].join("\n"),
    );
    expect(JSON.parse(statusJson({ ...status, path: "/c" }))).toMatchObject({ held: ["p.md"] });
    expect(JSON.parse(statusJson({ ...status, held: [], path: "/c" }))).not.toHaveProperty("held");
  });

  it("a file kept because it still holds conflict blocks says they come first, not that a pull brings it in", () => {
    const kept: CopyStatus = {
      ...status,
      changes: [{ path: "p.md", change: "modified" }],
      markers: [{ path: "p.md", reason: "MARKER_BLOCK", ranges: [{ start: 1, end: 5 }] }],
    };
    expect(renderStatus(kept, { color: false })).toBe(
      [
        "generation 3; 1 file still to be merged from the notebook once its conflict blocks are resolved",
        "changed in the notebook again while holding conflict blocks (resolve them; the next pull or commit then merges the change):",
        "  p.md",
        "unpublished changes:",
        "  M p.md",
        "unresolved conflict markers (resolve them before committing):",
        "  p.md  lines 1-5",
        "",
      ].join("\n"),
    );
    // Another held file still says a pull brings it in.
    expect(renderStatus({ ...kept, held: ["o.md", "p.md"] }, { color: false })).toContain(
      "generation 3; 1 file still to be merged from the notebook (quire pull brings it in)\nchanged while an earlier call ran, not yet merged (the next pull or commit merges them):\n  o.md\nchanged in the notebook again",
    );
  });

  it("a restore that wrote nothing because every file was held does not say 'already'", () => {
    expect(renderRestored({ generation: 2, files: [], held: ["p.md"] }, "Restore")).toBe(
      [
        "nothing written: every file it would change was saved during the call",
        "saved by someone during the call, left as they were (run it again):",
        "  p.md",
        "",
      ].join("\n"),
    );
    expect(renderRestored({ generation: 2, files: [], held: [] }, "Restore")).toBe(
      "nothing to change: restored from generation 2 already\n",
    );
  });
});

describe("the unified diff's file headers show names as every report does", () => {
  it("an invisible character in a name is shown as U+FFFD in diff --git, --- and +++, as --stat shows it", () => {
    // "z\u200bw.md" (a zero-width space) would read as "zw.md", another file's name.
    const files = ["z\u200bw.md", "s\u00adh.md", "x\u{e0041}.md", "plain.md"].map((path) => ({
      path,
      change: "modified" as const,
      insertions: 1,
      deletions: 1,
      diff: unifiedDiff(path, "a\u200bb\n", "c\n"),
    }));
    const diff = { generation: 1, files };
    for (const color of [false, true]) {
      const text = renderDiff(diff, { color });
      const stat = renderDiffStat(diff, { color });
      for (const name of ["z\uFFFDw.md", "s\uFFFDh.md", "x\uFFFD.md"]) {
        expect(text).toContain(`diff --git a/${name} b/${name}`);
        expect(text).toContain(`--- a/${name}`);
        expect(text).toContain(`+++ b/${name}`);
        expect(stat).toContain(name);
      }
      expect(text).not.toMatch(/\u200b.*\.md|\u00ad|\u{e0041}/u);
      expect(text).toContain("diff --git a/plain.md b/plain.md");
      // The content is a text's, not a name: a zero-width space in a line stays.
      expect(text).toContain("-a\u200bb");
    }
  });
});
