/**
 * A merge that would make a file larger than a notebook accepts (32 MiB) is never
 * published: two agents each appending 20 MB to a union journal both stay within the
 * limit, but their merge does not, and once published every later commit of every copy
 * would be refused over that file.
 */
import { describe, expect, it } from "vitest";
import { maxFileBytes } from "../../src/domain/content.js";
import { commit, commitFails, manifestOf, pull, world } from "../durability/harness.js";

/** `count` bytes of `letter` lines, each 100 bytes with its LF. */
const block = (letter: string, count: number): string =>
  `${letter.repeat(99)}\n`.repeat(Math.ceil(count / 100));

describe("a merge over the file size limit", () => {
  it("is refused at commit as TOO_LARGE, nothing published, the copy left as it was", async () => {
    const w = world();
    const nb = w.open();
    w.write("/ws/a/.quireattributes", "j.md merge=union\n");
    w.write("/ws/a/j.md", "# j\n");
    await pull(nb, "/ws/a");
    await commit(nb, "/ws/a");
    await pull(nb, "/ws/b");
    const half = Math.ceil(maxFileBytes * 0.6);
    w.write("/ws/a/j.md", `# j\n${block("a", half)}`);
    w.write("/ws/b/j.md", `# j\n${block("b", half)}`);
    await commit(nb, "/ws/a");
    const generation = (await manifestOf(w.store))?.generation;
    const mine = w.read("/ws/b/j.md");

    const error = await commitFails(nb, "/ws/b");
    expect(error.code).toBe("INVALID_CONTENT");
    expect(error.reason).toBe("INVALID_FILES");
    expect(error.files).toEqual([{ path: "j.md", reason: "TOO_LARGE", ranges: [] }]);
    expect(error.message).toMatch(/j\.md/);
    expect(error.message).toMatch(/nothing was published/);
    expect((await manifestOf(w.store))?.generation).toBe(generation);
    expect(w.read("/ws/b/j.md")).toBe(mine);
  }, 120_000);
});
