import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  DomainError,
  domainError,
  engineDetails,
  errorRows,
  fileReasons,
} from "../../src/domain/errors.js";
import {
  errorEnvelope,
  formatRanges,
  successEnvelope,
  successText,
} from "../../src/domain/envelope.js";
import { noPathSets } from "../../src/domain/pathSets.js";

const report = {
  path: "/abs/working/copy",
  generation: 18,
  files: [
    { path: "notes/c.md", insertions: 2, deletions: 0 },
    { path: "archive/old.md", insertions: 0, deletions: 3 },
    { path: "notes/a.md", insertions: 1, deletions: 1 },
  ],
};

describe("successEnvelope", () => {
  it("builds the SPEC §2.3 structured object with sorted files and totals", () => {
    const { text, structured } = successEnvelope(report, noPathSets);
    expect(text).toBe("/abs/working/copy");
    expect(structured).toEqual({
      code: "OK",
      path: "/abs/working/copy",
      generation: 18,
      filesChanged: 3,
      insertions: 3,
      deletions: 4,
      files: [
        { path: "archive/old.md", insertions: 0, deletions: 3 },
        { path: "notes/a.md", insertions: 1, deletions: 1 },
        { path: "notes/c.md", insertions: 2, deletions: 0 },
      ],
      readOnly: [],
      writable: [],
    });
    expect(Object.keys(structured)).toEqual([
      "code",
      "path",
      "generation",
      "filesChanged",
      "insertions",
      "deletions",
      "files",
      "readOnly",
      "writable",
    ]);
  });

  it("reports a no-op with empty files", () => {
    expect(
      successEnvelope({ path: "/d", generation: 0, files: [] }, noPathSets).structured,
    ).toMatchObject({
      filesChanged: 0,
      insertions: 0,
      deletions: 0,
      files: [],
    });
  });

  it("advertises path sets in the text item", () => {
    expect(successText("/d", { writable: ["a", "b"], readOnly: [] })).toBe("/d (writable: a, b)");
    expect(successText("/d", { writable: [], readOnly: ["c"] })).toBe("/d (read-only: c)");
    expect(successText("/d", { writable: ["a", "b"], readOnly: ["c"] })).toBe(
      "/d (writable: a, b; read-only: c; longest match decides)",
    );
    const sets = { writable: ["w"], readOnly: ["r"] };
    expect(successEnvelope(report, sets).structured).toMatchObject(sets);
  });
});

describe("errorEnvelope", () => {
  const conflict = domainError({
    code: "CONTENT_CONFLICT",
    reason: "MERGE_CONFLICT",
    message: "Resolve the conflict blocks before notes_commit.",
    files: [{ path: "notes/today.md", reason: "TEXT_CONFLICT", ranges: [{ start: 12, end: 18 }] }],
  });

  it("matches the SPEC §2.4 example exactly", () => {
    const { text, structured } = errorEnvelope(conflict, "0011223344556677", noPathSets);
    expect(text).toBe(
      [
        "CONTENT_CONFLICT · MERGE_CONFLICT",
        "Resolve the conflict blocks before notes_commit.",
        "file: notes/today.md · TEXT_CONFLICT · lines 12-18",
        "action: EDIT_FILES",
        "retryable: false",
        "diagnosticId: 0011223344556677",
      ].join("\n"),
    );
    expect(structured).toEqual({
      code: "CONTENT_CONFLICT",
      reason: "MERGE_CONFLICT",
      action: "EDIT_FILES",
      diagnosticId: "0011223344556677",
      retryable: false,
      message: "Resolve the conflict blocks before notes_commit.",
      files: [
        { path: "notes/today.md", reason: "TEXT_CONFLICT", ranges: [{ start: 12, end: 18 }] },
      ],
      readOnly: [],
      writable: [],
    });
  });

  it("says where a file moved aside went and what stayed, in the structure and the text", () => {
    const moved = domainError({
      code: "CONTENT_CONFLICT",
      reason: "MERGE_CONFLICT",
      message: "Your note d was moved to d~local because the notebook now has a folder d.",
      files: [
        {
          path: "d",
          reason: "FILE_DIRECTORY",
          ranges: [],
          movedTo: "d~local",
          side: "local",
          keptAs: "d",
        },
        { path: "n.md", reason: "TEXT_CONFLICT", ranges: [{ start: 2, end: 6 }] },
      ],
    });
    const { text, structured } = errorEnvelope(moved, "0011223344556677", noPathSets);
    expect(structured.files).toEqual([
      {
        path: "d",
        reason: "FILE_DIRECTORY",
        ranges: [],
        movedTo: "d~local",
        side: "local",
        keptAs: "d",
      },
      { path: "n.md", reason: "TEXT_CONFLICT", ranges: [{ start: 2, end: 6 }] },
    ]);
    expect(text.split("\n").filter((line) => line.startsWith("file: "))).toEqual([
      "file: d · FILE_DIRECTORY · side local · movedTo d~local · keptAs d",
      "file: n.md · TEXT_CONFLICT · lines 2-6",
    ]);
  });

  it("adds detail, recovery and path-set lines only when present", () => {
    const engine = domainError({
      code: "ENGINE_FAILED",
      reason: "LOCAL_IO",
      message: "write failed",
      detail: "disk full",
    });
    const sets = { readOnly: ["docs", "faq.md"], writable: ["drafts"] };
    const engineEnvelope = errorEnvelope(engine, "00000000000000aa", sets);
    expect(engineEnvelope.text).toBe(
      [
        "ENGINE_FAILED · LOCAL_IO",
        "write failed",
        "detail: disk full",
        "action: RETRY_LATER",
        "retryable: true",
        "diagnosticId: 00000000000000aa",
        "readOnly: docs, faq.md",
        "writable: drafts",
      ].join("\n"),
    );
    expect(engineEnvelope.structured).toMatchObject({ detail: "disk full", files: [], ...sets });
    expect("recovery" in engineEnvelope.structured).toBe(false);

    const recovery = domainError({
      code: "RECOVERY_FAILURE",
      reason: "UNEXPECTED_FAILURE",
      message: "m",
      recovery: { stage: "materialize", remoteAccepted: "yes", resynchronized: true },
    });
    const recoveryEnvelope = errorEnvelope(recovery, "00000000000000bb", noPathSets);
    expect(recoveryEnvelope.text.split("\n")).toContain(
      "recovery: stage materialize · remoteAccepted yes · resynchronized true",
    );
    expect(recoveryEnvelope.text.split("\n").at(-1)).toBe(
      "recovery: stage materialize · remoteAccepted yes · resynchronized true",
    );
    expect(recoveryEnvelope.structured.recovery).toEqual({
      stage: "materialize",
      remoteAccepted: "yes",
      resynchronized: true,
    });
    expect("detail" in recoveryEnvelope.structured).toBe(false);
  });

  it("drops detail and recovery on codes that cannot carry them", () => {
    const forged = new DomainError({
      code: "STORAGE_FAILURE",
      reason: "TIMEOUT",
      action: "RETRY_LATER",
      retryable: true,
      message: "m",
      files: [],
      detail: "disk full",
      recovery: { stage: "s", remoteAccepted: "no", resynchronized: false },
    });
    const { text, structured } = errorEnvelope(forged, "0000000000000000", noPathSets);
    expect("detail" in structured || "recovery" in structured).toBe(false);
    expect(text).not.toMatch(/detail|recovery/);
  });

  it("formats file ranges", () => {
    expect(formatRanges([])).toBe("");
    expect(formatRanges([{ start: 5, end: 5 }])).toBe("line 5");
    expect(
      formatRanges([
        { start: 12, end: 18 },
        { start: 30, end: 31 },
      ]),
    ).toBe("lines 12-18, 30-31");
    expect(
      formatRanges([
        { start: 1, end: 1 },
        { start: 4, end: 9 },
      ]),
    ).toBe("lines 1, 4-9");
    const files = [
      { path: "a.md", reason: "DELETE_MODIFY", ranges: [] },
      { path: "b.md", reason: "MARKER_BLOCK", ranges: [{ start: 5, end: 5 }] },
    ] as const;
    const error = domainError({
      code: "CONTENT_CONFLICT",
      reason: "UNRESOLVED_MARKERS",
      message: "m",
      files,
    });
    const lines = errorEnvelope(error, "0000000000000000", noPathSets).text.split("\n");
    expect(lines).toContain("file: a.md · DELETE_MODIFY");
    expect(lines).toContain("file: b.md · MARKER_BLOCK · line 5");
  });

  it("redacts the message, never the tokens", () => {
    const error = domainError({
      code: "STORAGE_INTEGRITY",
      reason: "PACK_MISSING",
      message:
        "pack packs/increments/7-01890a5d-ac96-774b-bcce-b302099a8057.pack (sha 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08) missing under /home/u/.cache/quire",
    });
    const { text, structured } = errorEnvelope(error, "0000000000000000", noPathSets, {
      privatePaths: ["/home/u/.cache/quire"],
    });
    expect(structured.message).toBe("pack <object-key> (sha <hex>) missing under <private>");
    expect(text).toContain(structured.message);
    expect(text).not.toMatch(/packs\/|9f86d0|\.cache/);
  });

  it("puts every structured field into the text", () => {
    const range = fc
      .tuple(fc.integer({ min: 1, max: 500 }), fc.integer({ min: 0, max: 20 }))
      .map(([start, length]) => ({ start, end: start + length }));
    const file = fc.record({
      path: fc.stringMatching(/^[a-z]{1,6}(\/[a-z]{1,6}){0,2}\.md$/),
      reason: fc.constantFrom(...fileReasons),
      ranges: fc.array(range, { maxLength: 3 }),
    });
    const sets = fc.record({
      readOnly: fc.array(fc.stringMatching(/^[a-z]{1,5}$/), { maxLength: 3 }),
      writable: fc.array(fc.stringMatching(/^[A-Z]{1,5}$/), { maxLength: 3 }),
    });
    fc.assert(
      fc.property(
        fc.constantFrom(...errorRows),
        fc.stringMatching(/^[A-Za-z ,.]{1,40}$/),
        fc.array(file, { maxLength: 3 }),
        fc.option(fc.constantFrom(...engineDetails), { nil: undefined }),
        fc.stringMatching(/^[0-9a-f]{16}$/),
        sets,
        (row, message, files, detail, diagnosticId, pathSets) => {
          const error = new DomainError({
            code: row.code,
            reason: row.reason,
            action: row.action,
            retryable: row.retryable,
            message,
            files,
            ...(detail === undefined ? {} : { detail }),
            recovery: { stage: "stage-x", remoteAccepted: "unknown", resynchronized: false },
          });
          const { text, structured } = errorEnvelope(error, diagnosticId, pathSets);
          const lines = text.split("\n");
          expect(lines[0]).toBe(`${structured.code} · ${structured.reason}`);
          expect(lines[1]).toBe(structured.message);
          expect(lines).toContain(`action: ${structured.action}`);
          expect(lines).toContain(`retryable: ${structured.retryable}`);
          expect(lines).toContain(`diagnosticId: ${structured.diagnosticId}`);
          if (structured.detail !== undefined)
            expect(lines).toContain(`detail: ${structured.detail}`);
          if (structured.recovery !== undefined) {
            expect(lines).toContain(
              "recovery: stage stage-x · remoteAccepted unknown · resynchronized false",
            );
          }
          for (const issue of structured.files) {
            const ranges = formatRanges(issue.ranges);
            expect(lines).toContain(
              `file: ${issue.path} · ${issue.reason}${ranges === "" ? "" : ` · ${ranges}`}`,
            );
          }
          for (const [key, label] of [
            ["readOnly", "readOnly"],
            ["writable", "writable"],
          ] as const) {
            if (structured[key].length > 0)
              expect(lines).toContain(`${label}: ${structured[key].join(", ")}`);
            else expect(text).not.toContain(`${label}:`);
          }
          expect(structured.detail !== undefined).toBe(
            structured.code === "ENGINE_FAILED" && detail !== undefined,
          );
          expect(structured.recovery !== undefined).toBe(structured.code === "RECOVERY_FAILURE");
        },
      ),
    );
  });
});
