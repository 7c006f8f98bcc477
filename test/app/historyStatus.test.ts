/**
 * `quire status` lists under "cannot be committed" what a commit would refuse: a
 * malformed `.quireattributes` included (INVALID_ATTRIBUTES with its lines), as commit
 * refuses it — not only as an added file that looks ready to publish.
 */
import { Effect } from "effect";
import { describe, expect, it } from "vitest";
import { renderStatus } from "../../src/domain/copyStatus.js";
import { memNotebook } from "./memNotebook.js";

const author = { name: "test", version: "1" };

describe("status of a copy with a malformed .quireattributes", () => {
  it("lists it as INVALID_ATTRIBUTES with the malformed lines, beside its change", async () => {
    const { notebook, write } = memNotebook();
    await Effect.runPromise(notebook.pull({ path: "/ws/a" }));
    write("/ws/a/.quireattributes", "journal.md merge=union\njournal.md merge=ours\n");
    const status = await Effect.runPromise(notebook.status({ path: "/ws/a" }));
    expect(status.changes).toEqual([{ path: ".quireattributes", change: "added" }]);
    expect(status.invalid).toEqual([
      { path: ".quireattributes", reason: "INVALID_ATTRIBUTES", ranges: [{ start: 2, end: 2 }] },
    ]);
    expect(renderStatus(status, { color: false }).split("\n")).toEqual(
      expect.arrayContaining([
        "cannot be committed as they are:",
        "  .quireattributes  INVALID_ATTRIBUTES  lines 2",
      ]),
    );
    // Once fixed, nothing is listed, and the commit takes it.
    write("/ws/a/.quireattributes", "journal.md merge=union\n");
    const fixed = await Effect.runPromise(notebook.status({ path: "/ws/a" }));
    expect(fixed.invalid).toEqual([]);
    await Effect.runPromise(notebook.commit({ path: "/ws/a", message: "m", author }));
  });
});
