/**
 * The encoding checks every tool's string fields share (src/app/mcp/toolInput.ts): a
 * lone surrogate and U+0000 are both refused as INVALID_ARGUMENT, each with a message
 * naming that fault and where it is — never "without U+0000" for a string that has none.
 */
import { Either } from "effect";
import { describe, expect, it } from "vitest";
import {
  decodeCommitArguments,
  decodeLogArguments,
  decodePullArguments,
} from "../../src/app/mcp/toolInput.js";

const fields: ReadonlyArray<
  readonly [string, string, (value: string) => Either.Either<unknown, { message: string }>]
> = [
  ["notes_pull", "path", (value) => decodePullArguments({ path: `/a${value}` })],
  ["notes_commit", "message", (value) => decodeCommitArguments({ message: `a${value}` })],
  ["notes_commit", "path", (value) => decodeCommitArguments({ message: "m", path: `/a${value}` })],
  ["notes_log", "path", (value) => decodeLogArguments({ path: `/a${value}` })],
  ["notes_log", "file", (value) => decodeLogArguments({ file: `a${value}` })],
];

const messageOf = (result: Either.Either<unknown, { message: string }>): string =>
  Either.isLeft(result) ? result.left.message : "accepted";

describe("encoding faults in tool arguments", () => {
  for (const [tool, field, decode] of fields) {
    it(`${tool} ${field}: a lone surrogate is named as one, U+0000 as U+0000`, () => {
      const offset = field === "message" || field === "file" ? 1 : 2;
      for (const [lone, hex] of [
        ["\ud800", "D800"],
        ["\udfff", "DFFF"],
      ] as const)
        expect(messageOf(decode(lone))).toBe(
          `${field} is not well-formed Unicode: it holds a lone surrogate (U+${hex} at UTF-16 index ${offset}), which has no UTF-8 form.`,
        );
      expect(messageOf(decode("\u0000"))).toBe(
        `${field} must not contain U+0000 (found at UTF-16 index ${offset}).`,
      );
      // A well-formed pair is one character, not a fault.
      expect(messageOf(decode("\ud83d\ude00"))).not.toMatch(/surrogate|U\+0000/);
    });
  }
});
