import { describe, expect, it } from "vitest";
import {
  renderRestored,
  renderStatus,
  statusJson,
  type CopyStatus,
} from "../../src/domain/copyStatus.js";

describe("status of a copy with held files", () => {
  const status: CopyStatus = {
    generation: 3,
    remoteGeneration: 3,
    ahead: 0,
    changes: [],
    markers: [],
    invalid: [],
    recoveryPending: false,
    held: ["p.md"],
  };

  it("is not called up to date, and lists them", () => {
    expect(renderStatus(status, { color: false })).toBe(
      [
        "generation 3; 1 file still to be merged from the notebook (quire pull brings it in)",
        "changed while an earlier call ran, not yet merged (the next pull or commit merges them):",
        "  p.md",
        "nothing to commit",
        "",
      ].join("\n"),
    );
    expect(JSON.parse(statusJson({ ...status, path: "/c" }))).toMatchObject({ held: ["p.md"] });
    expect(JSON.parse(statusJson({ ...status, held: [], path: "/c" }))).not.toHaveProperty("held");
  });

  it("a restore that wrote nothing because every file was held does not say 'already'", () => {
    expect(renderRestored({ generation: 2, files: [], held: ["p.md"] }, "Restore")).toBe(
      [
        "nothing written: every file it would change was saved during the call",
        "saved by someone during the call, left as they were (run it again):",
        "  p.md",
        "",
      ].join("\n"),
    );
    expect(renderRestored({ generation: 2, files: [], held: [] }, "Restore")).toBe(
      "nothing to change: restored from generation 2 already\n",
    );
  });
});
