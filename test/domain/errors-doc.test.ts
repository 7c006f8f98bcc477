import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  actionMeanings,
  engineDetailCauses,
  engineDetails,
  errorActions,
  errorRows,
  fileIssueFields,
  fileReasonTable,
  fileReasons,
} from "../../src/domain/errors.js";

const doc = readFileSync(new URL("../../docs/errors.md", import.meta.url), "utf8");

/** The body rows of the markdown table whose header cells are exactly `header`. */
const table = (header: ReadonlyArray<string>): ReadonlyArray<ReadonlyArray<string>> => {
  const lines = doc.split("\n");
  const start = lines.findIndex(
    (line) => line.startsWith("|") && JSON.stringify(cells(line)) === JSON.stringify(header),
  );
  if (start < 0) throw new Error(`no table with header ${header.join(" | ")} in docs/errors.md`);
  const rows: Array<ReadonlyArray<string>> = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break;
    rows.push(cells(line));
  }
  return rows;
};

const cells = (line: string): ReadonlyArray<string> =>
  line
    .trim()
    .replace(/^\||\|$/g, "")
    .split("|")
    .map((cell) => cell.trim().replace(/^`(.*)`$/, "$1"));

const sorted = (rows: ReadonlyArray<ReadonlyArray<string>>) =>
  rows.map((row) => row.join(" | ")).sort();

describe("docs/errors.md", () => {
  it("lists exactly the (code, reason) rows of the table, with the same action, retryable and prose", () => {
    const documented = table([
      "code",
      "reason",
      "action",
      "retryable",
      "when it happens",
      "what to do",
    ]);
    const expected = errorRows.map((row) => [
      row.code,
      row.reason,
      row.action,
      String(row.retryable),
      row.when,
      row.remedy,
    ]);
    expect(sorted(documented)).toEqual(sorted(expected));
    expect(documented.length).toBe(errorRows.length);
  });

  it("lists exactly the actions, with their meanings", () => {
    const documented = table(["action", "meaning"]);
    expect(sorted(documented)).toEqual(
      sorted(errorActions.map((action) => [action, actionMeanings[action]])),
    );
  });

  it("lists exactly the file reasons, with the code they belong to and their meaning", () => {
    const documented = table(["file reason", "reported under", "meaning"]);
    const expected = fileReasons.map((reason) => [
      reason,
      fileReasonTable[reason].code,
      fileReasonTable[reason].meaning,
    ]);
    expect(sorted(documented)).toEqual(sorted(expected));
  });

  it("lists exactly the fields of a files[] entry, with their meanings", () => {
    const documented = table(["file field", "meaning"]);
    expect(sorted(documented)).toEqual(
      sorted(Object.entries(fileIssueFields).map(([field, meaning]) => [field, meaning])),
    );
  });

  it("lists exactly the ENGINE_FAILED detail strings", () => {
    const documented = table(["detail", "cause"]);
    expect(sorted(documented)).toEqual(
      sorted(engineDetails.map((detail) => [detail, engineDetailCauses[detail]])),
    );
  });

  it("says INCOMPATIBLE_STORE is startup-only", () => {
    expect(doc).toMatch(/`INCOMPATIBLE_STORE` is \*\*startup-only\*\*/);
  });
});
