/**
 * The merge benchmark's inputs are clean merges on which quire must agree with
 * `git merge-file` byte for byte (issue 6). No timing here: the benchmark measures.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { mergeCases } from "../../bench/lib/mergeCases.mjs";
import { mergeText } from "../../src/domain/textMerge.js";

const dir = mkdtempSync(path.join(tmpdir(), "quire-merge-cases-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `git merge-file -p` output; throws (non-zero exit) when git sees a conflict. */
const gitMerge = (base: string, local: string, remote: string): string => {
  const files = {
    base: path.join(dir, "base"),
    local: path.join(dir, "local"),
    remote: path.join(dir, "remote"),
  };
  writeFileSync(files.base, base);
  writeFileSync(files.local, local);
  writeFileSync(files.remote, remote);
  return execFileSync(
    "git",
    [
      "merge-file",
      "-p",
      "-L",
      "local",
      "-L",
      "base",
      "-L",
      "remote",
      files.local,
      files.base,
      files.remote,
    ],
    { encoding: "utf8", maxBuffer: 1 << 28 },
  );
};

describe("merge benchmark cases", () => {
  for (const c of mergeCases()) {
    it(`${c.name}: clean and identical to git merge-file`, () => {
      expect(c.local).not.toBe(c.base);
      expect(c.remote).not.toBe(c.base);
      const expected = gitMerge(c.base, c.local, c.remote);
      const merged = mergeText(c.base, c.local, c.remote);
      expect(merged.conflicts).toEqual([]);
      // Compare without dumping megabytes on failure.
      expect(merged.text.length).toBe(expected.length);
      expect(merged.text === expected).toBe(true);
    });
  }
});
