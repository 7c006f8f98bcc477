/**
 * SPEC §10 / issue "the library as a dependency": `import("quire-mcp")` and a notebook
 * on a file store load neither the AWS SDK nor minio; naming an `s3://` or `minio://`
 * store loads its SDK then (the positive control: the recorder does see them). Runs the
 * built package through Node's own resolution of its name (a package may import itself
 * by name through its `exports`), with a resolve hook recording every module.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { assertBuilt, repoRoot } from "../helpers/cli.js";

const fixtures = path.join(repoRoot, "test", "package", "fixtures");

/** Runs the fixture with `store` and returns the module URLs it resolved. */
const resolvedBy = (store: string): ReadonlyArray<string> => {
  const record = path.join(mkdtempSync(path.join(tmpdir(), "quire-imports-")), "resolved.json");
  const run = spawnSync(
    process.execPath,
    [
      "--import",
      path.join(fixtures, "record-imports.mjs"),
      path.join(fixtures, "open-notebook.mjs"),
      store,
    ],
    // Run from the package's own directory, where "quire-mcp" names this package.
    {
      cwd: repoRoot,
      encoding: "utf8",
      env: { ...process.env, NODE_OPTIONS: "", QUIRE_RECORD_IMPORTS: record },
    },
  );
  expect(run.stdout, run.stderr).toBe("OK\n");
  const urls = JSON.parse(readFileSync(record, "utf8")) as ReadonlyArray<string>;
  rmSync(path.dirname(record), { recursive: true, force: true });
  return urls;
};

const sdk = (urls: ReadonlyArray<string>) =>
  urls.filter((url) => /\/node_modules\/(@aws-sdk|@smithy|minio)\//.test(url));

describe("importing quire-mcp", () => {
  it("a file-store notebook loads neither the AWS SDK nor minio", () => {
    assertBuilt();
    const urls = resolvedBy("file");
    expect(urls.some((url) => url.endsWith("/dist/src/index.js"))).toBe(true);
    expect(sdk(urls)).toEqual([]);
  });

  it("an s3:// store loads the AWS SDK, a minio:// store minio, only then", () => {
    expect(sdk(resolvedBy("s3://notes")).some((url) => url.includes("/@aws-sdk/client-s3/"))).toBe(
      true,
    );
    expect(sdk(resolvedBy("minio://notes")).some((url) => url.includes("/minio/"))).toBe(true);
  });
});
