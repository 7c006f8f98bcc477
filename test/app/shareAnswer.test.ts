/**
 * A commit's answer relayed between serve processes that share one (app/share) decodes
 * on the other side even when the commit merged others' publications into the copy:
 * the CLI-only `incoming` list is not part of the protocol, so it is not sent.
 */
import { Either } from "effect";
import { describe, expect, it } from "vitest";
import { decodeAnswer, encodeAnswer } from "../../src/app/share/protocol.js";

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
});
