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
});
