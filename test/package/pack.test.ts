/**
 * What `npm pack` ships (SPEC §12): the launcher, the build, LICENSE, README, every
 * document the README and the docs link to, and the MCP registry's server.json, which
 * must describe this very package. The tarball's manifest carries no install-time script
 * (preinstall, install, postinstall, prepare), so a global install from it neither
 * rebuilds nor prints npm's install-script warning; a clone's `npm install` builds
 * through `preprepare`, which npm runs only for the project being installed.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/cli.js";

interface Manifest {
  readonly name: string;
  readonly version: string;
  readonly license: string;
  readonly mcpName: string;
  readonly bin: Record<string, string>;
  readonly scripts: Record<string, string>;
  readonly engines: Record<string, string>;
}

const manifest = JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8")) as Manifest;

/** The files `npm pack` would put in the tarball (scripts off: no rebuild just to list). */
const packedFiles = (): ReadonlyArray<string> => {
  const run = spawnSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
    cwd: repoRoot,
    encoding: "utf8",
  });
  expect(run.status, run.stderr).toBe(0);
  const [report] = JSON.parse(run.stdout) as ReadonlyArray<{
    files: ReadonlyArray<{ path: string }>;
  }>;
  return (report?.files ?? []).map((file) => file.path);
};

/** Relative link targets (no scheme, no pure anchors) of a Markdown file, resolved against its directory. */
const linkedFiles = (markdownPath: string): ReadonlyArray<string> => {
  const text = readFileSync(path.join(repoRoot, markdownPath), "utf8");
  const targets = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1] ?? "");
  return targets
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith("#"))
    .map((target) =>
      path.posix.normalize(
        path.posix.join(path.posix.dirname(markdownPath), target.split("#")[0] ?? ""),
      ),
    );
};

describe("npm pack", () => {
  const files = packedFiles();

  it("ships the launcher, the build, LICENSE, README and server.json", () => {
    for (const file of ["LICENSE", "README.md", "package.json", "server.json", "bin/quire.js"])
      expect(files).toContain(file);
    expect(files).toContain("dist/cli/main.js");
    expect(files).toContain("dist/src/index.js");
    expect(files).toContain("dist/src/index.d.ts");
    // No tests, sources of the bench, or the CI script.
    expect(files.filter((file) => /^(test|bench|src|\.ci)\//.test(file))).toEqual([]);
  });

  it("ships every document the README and the shipped docs link to", () => {
    const docs = files.filter((file) => file.endsWith(".md"));
    expect(docs).toContain("docs/s3.md");
    const missing = docs
      .flatMap((doc) => linkedFiles(doc).map((target) => ({ doc, target })))
      .filter(({ target }) => !files.includes(target));
    expect(missing).toEqual([]);
  });

  it("declares no install-time script, so installing the tarball neither rebuilds nor warns", () => {
    for (const script of ["preinstall", "install", "postinstall", "prepare"])
      expect(manifest.scripts[script], script).toBeUndefined();
    // A clone's `npm install` / `npm ci` still builds, and `npm pack` packs a fresh build.
    expect(manifest.scripts["preprepare"]).toBe("npm run build");
    expect(manifest.scripts["prepack"]).toBe("npm run build");
  });

  it("is quire-mcp with the bin quire, MIT-licensed with a LICENSE file", () => {
    expect(manifest.name).toBe("quire-mcp");
    expect(manifest.bin).toEqual({ quire: "bin/quire.js" });
    expect(manifest.license).toBe("MIT");
    expect(readFileSync(path.join(repoRoot, "LICENSE"), "utf8")).toMatch(/^MIT License\n/);
    expect(manifest.engines["node"]).toBe(">=20.19.0");
  });
});

describe("server.json (the MCP registry's entry)", () => {
  const server = JSON.parse(readFileSync(path.join(repoRoot, "server.json"), "utf8")) as {
    $schema: string;
    name: string;
    description: string;
    version: string;
    packages: ReadonlyArray<{
      registryType: string;
      identifier: string;
      version: string;
      transport: { type: string };
      packageArguments: ReadonlyArray<{ type: string; value?: string; name?: string }>;
    }>;
  };

  it("describes this package at this version, started with `serve` over stdio", () => {
    expect(server.$schema).toMatch(
      /^https:\/\/static\.modelcontextprotocol\.io\/schemas\/[\d-]+\/server\.schema\.json$/,
    );
    expect(server.name).toBe(manifest.mcpName);
    expect(server.name).toMatch(/^[a-zA-Z0-9.-]+\/[a-zA-Z0-9._-]+$/);
    expect(server.description.length).toBeLessThanOrEqual(100);
    expect(server.version).toBe(manifest.version);
    expect(server.packages).toHaveLength(1);
    const [npm] = server.packages;
    expect(npm?.registryType).toBe("npm");
    expect(npm?.identifier).toBe(manifest.name);
    expect(npm?.version).toBe(manifest.version);
    expect(npm?.transport).toEqual({ type: "stdio" });
    expect(npm?.packageArguments[0]).toMatchObject({ type: "positional", value: "serve" });
    // Every named argument is a real flag of `quire serve`.
    const help = readFileSync(path.join(repoRoot, "src/app/cli/help.ts"), "utf8");
    for (const argument of npm?.packageArguments ?? [])
      if (argument.type === "named") expect(help).toContain(`${argument.name} `);
  });
});
