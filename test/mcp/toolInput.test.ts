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
import { toolDefinitions } from "../../src/app/mcp/server.js";
import { noPathSets } from "../../src/domain/pathSets.js";

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

describe("notes_log's advertised integer bounds are the decode's", () => {
  const schema = toolDefinitions(noPathSets, true).find((tool) => tool.name === "notes_log")
    ?.inputSchema.properties;
  const bounds = (field: string): { minimum?: unknown; maximum?: unknown } => {
    const property: unknown = schema?.[field];
    return typeof property === "object" && property !== null ? property : {};
  };

  for (const field of ["limit", "sinceGeneration"] as const) {
    it(`${field}: the advertised maximum is accepted and one more is refused (none is unbounded)`, () => {
      const { minimum, maximum } = bounds(field);
      expect(typeof minimum).toBe("number");
      expect(typeof maximum).toBe("number");
      expect(messageOf(decodeLogArguments({ [field]: minimum }))).toBe("accepted");
      expect(messageOf(decodeLogArguments({ [field]: maximum }))).toBe("accepted");
      expect(messageOf(decodeLogArguments({ [field]: Number(maximum) + 1 }))).toMatch(/from/);
      expect(messageOf(decodeLogArguments({ [field]: Number(minimum) - 1 }))).toMatch(/from/);
    });

    it(`${field}: a number too large for JSON (1e309 parses as Infinity) is out of range, not "a fraction"`, () => {
      const tooLarge: unknown = JSON.parse("1e309");
      expect(messageOf(decodeLogArguments({ [field]: tooLarge }))).toMatch(
        new RegExp(`^"${field}" must be from `),
      );
    });
  }
});
