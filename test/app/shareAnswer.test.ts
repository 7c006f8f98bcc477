/**
 * A commit's answer relayed between serve processes that share one (app/share) decodes
 * on the other side even when the commit merged others' publications into the copy:
 * the CLI-only `incoming` list is not part of the protocol, so it is not sent.
 */
import { Either } from "effect";
import { describe, expect, it } from "vitest";
import { decodeAnswer, encodeAnswer } from "../../src/app/share/protocol.js";
import { domainError } from "../../src/domain/errors.js";

describe("share protocol answers", () => {
  it("a commit report with incoming changes decodes, without them", () => {
    const report = {
      path: "/ws/a",
      generation: 3,
      files: [{ path: "mine.md", insertions: 1, deletions: 0 }],
      incoming: [{ path: "theirs.md", change: "added" as const }],
    };
    const decoded = decodeAnswer(encodeAnswer(Either.right(report)));
    expect(decoded).toEqual(
      Either.right({
        _tag: "Outcome",
        outcome: Either.right({ path: "/ws/a", generation: 3, files: report.files }),
      }),
    );
  });

  it("a conflict that moved a file aside keeps where each side went (movedTo, side, keptAs)", () => {
    const error = domainError({
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
        { path: "n.md", reason: "TEXT_CONFLICT", ranges: [{ start: 1, end: 5 }] },
      ],
    });
    const decoded = decodeAnswer(encodeAnswer(Either.left(error)));
    expect(Either.isRight(decoded), JSON.stringify(decoded)).toBe(true);
    if (Either.isLeft(decoded) || decoded.right._tag !== "Outcome") return;
    const outcome = decoded.right.outcome;
    expect(Either.isLeft(outcome) ? outcome.left.files : undefined).toEqual(error.files);
  });

  it("an answer over the bound lists what fits and counts the rest, within the bound", () => {
    const files = Array.from({ length: 500 }, (_, i) => ({
      path: `notes/n-${String(i).padStart(4, "0")}.md`,
      insertions: 3,
      deletions: 1,
    }));
    const frame = encodeAnswer(Either.right({ path: "/ws/a", generation: 7, files }), 8_192);
    expect(Buffer.byteLength(frame)).toBeLessThanOrEqual(8_192);
    const decoded = Either.getOrThrow(decodeAnswer(frame));
    if (decoded._tag !== "Outcome") throw new Error("refused");
    const report = Either.getOrThrow(decoded.outcome);
    expect(report.files).toEqual(files.slice(0, report.files.length));
    expect(report.unlisted).toEqual({
      files: 500 - report.files.length,
      insertions: 3 * (500 - report.files.length),
      deletions: 500 - report.files.length,
    });

    const error = domainError({
      code: "CONTENT_CONFLICT",
      reason: "MERGE_CONFLICT",
      message: "Resolve the conflict blocks before notes_commit.",
      files: files.map((file) => ({ path: file.path, reason: "TEXT_CONFLICT", ranges: [] })),
    });
    const errorFrame = encodeAnswer(Either.left(error), 8_192);
    expect(Buffer.byteLength(errorFrame)).toBeLessThanOrEqual(8_192);
    const failed = Either.getOrThrow(decodeAnswer(errorFrame));
    if (failed._tag !== "Outcome" || Either.isRight(failed.outcome))
      throw new Error("not an error");
    const listed = failed.outcome.left.files.length;
    expect(listed).toBeGreaterThan(0);
    expect(failed.outcome.left.message).toContain(`${500 - listed} more files are not listed`);
  });
});
