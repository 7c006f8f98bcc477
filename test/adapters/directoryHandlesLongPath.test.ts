/**
 * A directory whose absolute path is longer than the host's PATH_MAX, reached by handle:
 * `readlink` of its descriptor (the check that it has not moved) fails ENAMETOOLONG, and
 * that must say so (`NameTooLong`, shown as `detail: name too long`), not `Other` — a
 * pull into such a directory answered a bare "a local file operation failed while
 * creating a directory" with nothing to act on.
 */
import { execFileSync } from "node:child_process";
import * as nodeFs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openDirectoryHandles } from "../../src/adapters/directoryHandles.js";
import { FsError } from "../../src/ports/FileSystem.js";

const root = nodeFs.realpathSync(nodeFs.mkdtempSync(join(tmpdir(), "quire-long-path-")));
// node's rm names every path whole, which fails past PATH_MAX; rm -rf walks by handle.
afterAll(() => execFileSync("rm", ["-rf", root]));

/** Makes `levels` nested directories named `name` below `root`, each by handle. */
const makeChain = (name: string, levels: number): void => {
  let parent = nodeFs.openSync(root, nodeFs.constants.O_RDONLY | nodeFs.constants.O_DIRECTORY);
  for (let level = 0; level < levels; level++) {
    nodeFs.mkdirSync(`/proc/self/fd/${parent}/${name}`);
    const child = nodeFs.openSync(
      `/proc/self/fd/${parent}/${name}`,
      nodeFs.constants.O_RDONLY | nodeFs.constants.O_DIRECTORY,
    );
    nodeFs.closeSync(parent);
    parent = child;
  }
  nodeFs.closeSync(parent);
};

describe.runIf(nodeFs.existsSync("/proc/self/fd"))("directory handles past PATH_MAX", () => {
  it("report a directory they cannot check as NameTooLong", () => {
    const name = "d".repeat(200);
    makeChain(name, 25);
    const dirs = openDirectoryHandles(root);
    if (dirs === undefined) throw new Error("this host has no usable /proc/self/fd");
    const deep = Array.from({ length: 25 }, () => name).join("/");
    let reason = "none";
    try {
      dirs.verify(deep);
    } catch (error) {
      if (!(error instanceof FsError)) throw error;
      reason = error.reason;
    }
    dirs.close();
    expect(reason).toBe("NameTooLong");
  });
});
