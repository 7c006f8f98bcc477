import { describe, expect, it } from "vitest";
import {
  inCliWords,
  renderCliError,
  renderCliSuccess,
  summaryLine,
} from "../../src/domain/cliReport.js";
import { domainError } from "../../src/domain/errors.js";
import { errorEnvelope } from "../../src/domain/envelope.js";
import { noPathSets } from "../../src/domain/pathSets.js";

const plain = { color: false };
const report = {
  path: "/abs/copy",
  generation: 18,
  files: [
    { path: "notes/c.md", insertions: 2, deletions: 0 },
    { path: "notes/a.md", insertions: 1, deletions: 1 },
    { path: "archive/old.md", insertions: 0, deletions: 3 },
  ],
};

describe("renderCliSuccess", () => {
  it("prints the SPEC §9 report exactly", () => {
    expect(renderCliSuccess(report, noPathSets, plain)).toBe(
      "OK  generation 18\n  archive/old.md  -3\n  notes/a.md  +1 -1\n  notes/c.md  +2\n3 files changed, 3 insertions(+), 4 deletions(-)\n",
    );
  });

  it("prints a no-op as 0 files changed", () => {
    expect(renderCliSuccess({ path: "/d", generation: 7, files: [] }, noPathSets, plain)).toBe(
      "OK  generation 7\n0 files changed\n",
    );
  });

  it("uses singular forms and shows 0 for a file without line changes", () => {
    expect(
      renderCliSuccess(
        { path: "/d", generation: 1, files: [{ path: "a.md", insertions: 1, deletions: 1 }] },
        noPathSets,
        plain,
      ),
    ).toBe("OK  generation 1\n  a.md  +1 -1\n1 file changed, 1 insertion(+), 1 deletion(-)\n");
    expect(
      renderCliSuccess(
        { path: "/d", generation: 2, files: [{ path: "empty.md", insertions: 0, deletions: 0 }] },
        noPathSets,
        plain,
      ),
    ).toBe("OK  generation 2\n  empty.md  0\n1 file changed, 0 insertions(+), 0 deletions(-)\n");
  });

  it("follows git's shortstat summary", () => {
    expect(summaryLine(0, 0, 0)).toBe("0 files changed");
    expect(summaryLine(2, 5, 0)).toBe("2 files changed, 5 insertions(+)");
    expect(summaryLine(1, 0, 2)).toBe("1 file changed, 2 deletions(-)");
    expect(summaryLine(1, 0, 0)).toBe("1 file changed, 0 insertions(+), 0 deletions(-)");
  });

  it("lists configured path sets", () => {
    expect(
      renderCliSuccess(
        { path: "/d", generation: 3, files: [] },
        { readOnly: ["docs"], writable: ["a", "b"] },
        plain,
      ),
    ).toBe("OK  generation 3\n0 files changed\nreadOnly: docs\nwritable: a, b\n");
  });

  it("colours only when asked", () => {
    const coloured = renderCliSuccess(report, noPathSets, { color: true });
    expect(coloured).toContain("\u001b[32mOK\u001b[0m");
    expect(coloured).toContain("\u001b[31m-3\u001b[0m");
    expect(coloured).toContain("\u001b[32m+2\u001b[0m");
    expect(coloured.replace(/\u001b\[[0-9;]*m/g, "")).toBe(
      renderCliSuccess(report, noPathSets, plain),
    );
    expect(renderCliSuccess(report, noPathSets, plain)).not.toContain("\u001b");
  });
});

describe("renderCliError", () => {
  const error = domainError({
    code: "CONTENT_CONFLICT",
    reason: "MERGE_CONFLICT",
    message: "Resolve the conflict blocks before notes_commit.",
    files: [{ path: "notes/today.md", reason: "TEXT_CONFLICT", ranges: [{ start: 12, end: 18 }] }],
  });

  it("prints the candid text, LF-terminated, naming CLI commands instead of MCP tools", () => {
    expect(renderCliError(error, "0011223344556677", noPathSets, plain)).toBe(
      "CONTENT_CONFLICT · MERGE_CONFLICT\nResolve the conflict blocks before quire commit.\nfile: notes/today.md · TEXT_CONFLICT · lines 12-18\naction: EDIT_FILES\nretryable: false\ndiagnosticId: 0011223344556677\n",
    );
    const sets = { readOnly: ["r"], writable: ["w"] };
    expect(renderCliError(error, "0011223344556677", sets, plain)).toBe(
      `${errorEnvelope(error, "0011223344556677", sets).text.replace("notes_commit", "quire commit")}\n`,
    );
    const pullFirst = domainError({
      code: "INVALID_REQUEST",
      reason: "NOT_PULLED",
      message: "This working copy was never pulled; call notes_pull first.",
    });
    expect(renderCliError(pullFirst, "0011223344556677", noPathSets, plain)).toContain(
      "call quire pull first.",
    );
  });

  it("colours the header only when asked, and redacts", () => {
    const coloured = renderCliError(error, "0011223344556677", noPathSets, { color: true });
    expect(coloured.startsWith("\u001b[1;31mCONTENT_CONFLICT · MERGE_CONFLICT\u001b[0m\n")).toBe(
      true,
    );
    expect(coloured.replace(/\u001b\[[0-9;]*m/g, "")).toBe(
      renderCliError(error, "0011223344556677", noPathSets, plain),
    );
    const leaky = domainError({
      code: "STORAGE_FAILURE",
      reason: "ACCESS_DENIED",
      message: "denied for AKIAIOSFODNN7EXAMPLE",
    });
    expect(renderCliError(leaky, "0011223344556677", noPathSets, plain)).not.toContain(
      "AKIAIOSFODNN7EXAMPLE",
    );
  });

  it("shows control characters of a file's name as U+FFFD, so the text cannot drive the terminal", () => {
    const named = domainError({
      code: "INVALID_CONTENT",
      reason: "INVALID_FILES",
      message: "Bad files.",
      files: [{ path: "ctl\u001b[31mred\rx.md", reason: "INVALID_NAME", ranges: [] }],
    });
    const text = renderCliError(named, "0011223344556677", noPathSets, plain);
    expect(text).toContain("file: ctl\uFFFD[31mred\uFFFDx.md · INVALID_NAME\n");
    expect(text).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
  });
});

describe("inCliWords", () => {
  it("names the CLI command for a tool named in the message, never inside a file name it echoes", () => {
    expect(inCliWords("name files as notes_log lists them; call notes_pull.")).toBe(
      "name files as quire log lists them; call quire pull.",
    );
    expect(
      inCliWords("`notes_commit` refused notes_log.md and a/notes_pull, b/notes_commit.txt"),
    ).toBe("`quire commit` refused notes_log.md and a/notes_pull, b/notes_commit.txt");
  });
});
