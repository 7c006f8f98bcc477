/**
 * A configuration file too large for Node to read into one string (a runaway log, a
 * disk image saved under the wrong name) is refused with what to do, not a bare Node
 * error code. A sparse file makes the 3 GiB case cheap.
 */
import { truncateSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { makeSandbox, runQuire, type Sandbox } from "../cli/quireProcess.js";
import { assertBuilt } from "../helpers/cli.js";

let box: Sandbox;
beforeEach(() => {
  assertBuilt();
  box = makeSandbox();
});
afterEach(() => box.cleanup());

it("a configuration file over 2 GiB is refused with a next step, for install and status", async () => {
  const file = path.join(box.env["HOME"] ?? "", ".claude.json");
  writeFileSync(file, "");
  truncateSync(file, 3 * 1024 ** 3);
  const cwd = box.workspace;
  const install = await runQuire(["mcp", "install", "claude-code"], { cwd, env: box.env });
  expect(install.code).toBe(1);
  expect(install.stderr).toBe(
    `quire mcp: cannot read ${file}: ERR_FS_FILE_TOO_LARGE: the file is too large to edit (no client writes settings this big); move it away or edit it by hand\n`,
  );
  const status = await runQuire(["mcp", "status", "claude-code"], { cwd, env: box.env });
  expect(status.stdout).toContain("too large to edit");
});
