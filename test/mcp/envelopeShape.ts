/**
 * What a tools/call result must look like (SPEC §2.3, §2.4): exactly one text item and
 * either the success object or the documented error envelope with every field, tokens
 * from the closed sets of src/domain/errors.ts, action and retryable as the table says,
 * and a candid text that repeats the facts. {@link resultProblems} lists every
 * deviation, so a failing test says what is wrong rather than that something is.
 */
import {
  type ErrorCode,
  engineDetails,
  errorCodes,
  errorEntry,
  fileReasons,
  isReasonOf,
} from "../../src/domain/errors.js";

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const isStringArray = (value: unknown): boolean =>
  Array.isArray(value) && value.every((item) => typeof item === "string");

const isCount = (value: unknown): boolean =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= 0;

const isCode = (value: unknown): value is ErrorCode =>
  typeof value === "string" && errorCodes.some((code) => code === value);

const successKeys = [
  "code",
  "path",
  "generation",
  "filesChanged",
  "insertions",
  "deletions",
  "files",
  "readOnly",
  "writable",
];
const errorKeys = [
  "code",
  "reason",
  "action",
  "diagnosticId",
  "retryable",
  "message",
  "files",
  "readOnly",
  "writable",
];

const sameKeys = (object: Record<string, unknown>, expected: ReadonlyArray<string>): boolean =>
  JSON.stringify(Object.keys(object).sort()) === JSON.stringify([...expected].sort());

const fileProblems = (files: unknown, withRanges: boolean): Array<string> => {
  if (!Array.isArray(files)) return ["files is not an array"];
  const problems: Array<string> = [];
  for (const file of files) {
    if (!isRecord(file) || typeof file["path"] !== "string") {
      problems.push(`a files entry is malformed: ${JSON.stringify(file)}`);
      continue;
    }
    if (withRanges) {
      const reason = file["reason"];
      if (typeof reason !== "string" || !fileReasons.some((known) => known === reason)) {
        problems.push(`unknown file reason ${String(reason)}`);
      }
      const ranges = file["ranges"];
      if (
        !Array.isArray(ranges) ||
        !ranges.every(
          (range) =>
            isRecord(range) &&
            isCount(range["start"]) &&
            isCount(range["end"]) &&
            Number(range["start"]) >= 1 &&
            Number(range["end"]) >= Number(range["start"]),
        )
      ) {
        problems.push(`malformed ranges on ${file["path"]}`);
      }
    } else if (!isCount(file["insertions"]) || !isCount(file["deletions"])) {
      problems.push(`malformed counts on ${file["path"]}`);
    }
  }
  return problems;
};

/**
 * Every way `result` (a JSON-RPC `result` object of tools/call) departs from the
 * documented success or error shape; `[]` when it is one of them.
 */
export const resultProblems = (result: unknown): Array<string> => {
  if (!isRecord(result)) return ["the result is not an object"];
  const content = result["content"];
  const structured = result["structuredContent"];
  if (!Array.isArray(content) || content.length !== 1) return ["not exactly one content item"];
  const [item] = content;
  if (!isRecord(item) || item["type"] !== "text" || typeof item["text"] !== "string") {
    return ["the content item is not a text item"];
  }
  const text = item["text"];
  if (!isRecord(structured)) return ["no structuredContent"];
  const problems: Array<string> = [];
  if (!isStringArray(structured["readOnly"]) || !isStringArray(structured["writable"])) {
    problems.push("readOnly/writable are not string arrays");
  }

  if (structured["code"] === "OK") {
    if (result["isError"] === true) problems.push("an OK result marked isError");
    // filesNotListed: only when a sharing process had to cut the files list to fit its
    // answer (docs/storage.md), a count.
    const { filesNotListed, ...required } = structured;
    if (filesNotListed !== undefined && !isCount(filesNotListed))
      problems.push("filesNotListed is not a count");
    if (!sameKeys(required, successKeys)) {
      problems.push(`success keys ${Object.keys(structured).join(",")}`);
    }
    if (typeof structured["path"] !== "string" || !String(structured["path"]).startsWith("/")) {
      problems.push("success path is not absolute");
    }
    for (const key of ["generation", "filesChanged", "insertions", "deletions"]) {
      if (!isCount(structured[key])) problems.push(`${key} is not a count`);
    }
    problems.push(...fileProblems(structured["files"], false));
    if (!text.startsWith(String(structured["path"])))
      problems.push("text does not start with path");
    return problems;
  }

  if (result["isError"] !== true) problems.push("an error result without isError: true");
  const code = structured["code"];
  const reason = structured["reason"];
  if (!isCode(code)) return [...problems, `unknown code ${String(code)}`];
  if (typeof reason !== "string" || !isReasonOf(code, reason)) {
    return [...problems, `reason ${String(reason)} is not one of ${code}'s`];
  }
  const entry = errorEntry(code, reason);
  const expectedKeys = [
    ...errorKeys,
    ...(code === "ENGINE_FAILED" && structured["detail"] !== undefined ? ["detail"] : []),
    ...(code === "RECOVERY_FAILURE" ? ["recovery"] : []),
  ];
  if (!sameKeys(structured, expectedKeys)) {
    problems.push(`error keys ${Object.keys(structured).join(",")} (expected ${expectedKeys})`);
  }
  if (structured["action"] !== entry.action)
    problems.push(`action ${String(structured["action"])}`);
  if (structured["retryable"] !== entry.retryable) problems.push("retryable disagrees with table");
  const diagnosticId = structured["diagnosticId"];
  if (typeof diagnosticId !== "string" || !/^[0-9a-f]{16}$/.test(diagnosticId)) {
    problems.push(`diagnosticId ${String(diagnosticId)}`);
  }
  const message = structured["message"];
  if (typeof message !== "string" || message === "") problems.push("message is not a string");
  if (typeof message === "string" && message.length > 2000) {
    problems.push(`message is ${message.length} characters long`);
  }
  const detail = structured["detail"];
  if (detail !== undefined && !engineDetails.some((known) => known === detail)) {
    problems.push(`unknown detail ${String(detail)}`);
  }
  const recovery = structured["recovery"];
  if (
    code === "RECOVERY_FAILURE" &&
    !(
      isRecord(recovery) &&
      typeof recovery["stage"] === "string" &&
      ["yes", "no", "unknown"].includes(String(recovery["remoteAccepted"])) &&
      typeof recovery["resynchronized"] === "boolean"
    )
  ) {
    problems.push("malformed recovery");
  }
  problems.push(...fileProblems(structured["files"], true));

  const lines = text.split("\n");
  if (!text.startsWith(`${code} · ${reason}\n${String(message)}\n`)) {
    problems.push(`text does not start with code, reason and message: ${JSON.stringify(text)}`);
  }
  for (const expected of [
    `action: ${entry.action}`,
    `retryable: ${entry.retryable}`,
    `diagnosticId: ${String(diagnosticId)}`,
    ...(detail === undefined ? [] : [`detail: ${String(detail)}`]),
  ]) {
    if (!lines.includes(expected)) problems.push(`text lacks ${JSON.stringify(expected)}`);
  }
  return problems;
};
