import { describe, expect, it } from "vitest";
import { conflictMessage } from "../../src/domain/conflictMessage.js";
import type { FileIssue } from "../../src/domain/errors.js";

const text: FileIssue = { path: "n.md", reason: "TEXT_CONFLICT", ranges: [{ start: 1, end: 5 }] };
const movedLocal: FileIssue = {
  path: "d",
  reason: "FILE_DIRECTORY",
  ranges: [],
  movedTo: "d~local",
  side: "local",
  keptAs: "d",
};
const movedRemote: FileIssue = {
  path: "p.md",
  reason: "FILE_DIRECTORY",
  ranges: [],
  movedTo: "p.md~remote",
  side: "remote",
  keptAs: "p.md",
};

describe("conflictMessage", () => {
  it("speaks of conflict blocks only when some were written", () => {
    expect(conflictMessage({ _tag: "Pull" }, [text])).toBe(
      "Your unpublished changes conflict with the accepted notebook. Conflict blocks were written into 1 file at the listed lines; resolve them. Then call notes_commit.",
    );
    expect(conflictMessage({ _tag: "Pull" }, [movedLocal])).not.toMatch(/block/i);
  });

  it("says a file with unresolved blocks was left as it is, and that no new blocks were written", () => {
    const unresolved: FileIssue = {
      path: "u.md",
      reason: "MARKER_BLOCK",
      ranges: [{ start: 2, end: 6 }],
    };
    expect(conflictMessage({ _tag: "Pull" }, [unresolved])).toBe(
      "Your unpublished changes conflict with the accepted notebook. 1 file still holds unresolved conflict blocks (at the listed lines) that the notebook changed again; it was left as it is: resolve the blocks, and the next call merges the newer changes. Then call notes_commit.",
    );
    expect(conflictMessage({ _tag: "Pull" }, [unresolved, text])).toContain(
      "Conflict blocks were written into 1 file",
    );
  });

  it("says where each moved file went, whose it was and why, then what to do", () => {
    expect(conflictMessage({ _tag: "Commit" }, [movedLocal, movedRemote])).toBe(
      "Concurrent changes conflict with yours; nothing was published. Your note d was moved to d~local because the notebook now has a folder d. The notebook's note p.md was written as p.md~remote because your copy has a folder p.md. Keep what you need of each moved file (in the folder, or under another name) and delete the rest. Then call notes_commit again.",
    );
  });

  it("names a revert's other side after the generation it undoes", () => {
    const message = conflictMessage({ _tag: "Revert", generation: 7 }, [movedLocal, movedRemote]);
    expect(message).toContain(
      "Your note d was moved to d~local because undoing generation 7 brings back a folder d.",
    );
    expect(message).toContain(
      "The note p.md that undoing generation 7 brings back was written as p.md~remote because your copy has a folder p.md.",
    );
    expect(message).toMatch(
      /^Undoing generation 7 conflicts with later changes; the rest of it was written \(changed lists every file it changed\)\./,
    );
  });

  it("mentions files kept over a deletion, and spells out at most five moves", () => {
    const many = Array.from({ length: 7 }, (_, i) => ({
      ...movedLocal,
      path: `d${i}`,
      movedTo: `d${i}~local`,
      keptAs: `d${i}`,
    }));
    const message = conflictMessage({ _tag: "Pull" }, [
      { path: "gone.md", reason: "DELETE_MODIFY", ranges: [] },
      ...many,
    ]);
    expect(message).toContain("1 file deleted on one side and changed on the other was kept");
    expect(message).toContain("d4~local");
    expect(message).not.toContain("d5~local");
    expect(message).toContain("2 more files moved aside likewise");
  });

  it("offers the folder only where a file met a folder", () => {
    const caseOnly: FileIssue = {
      path: "Readme.md",
      reason: "CASE_CONFLICT",
      ranges: [],
      movedTo: "Readme.md~local",
      side: "local",
      keptAs: "README.md",
    };
    const message = conflictMessage({ _tag: "Pull" }, [caseOnly]);
    expect(message).toContain("Keep what you need of the moved file (under another name)");
    expect(message).not.toContain("folder");
  });
});
