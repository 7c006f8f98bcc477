/**
 * The library as a dependency (SPEC §10): a strict TypeScript project (`skipLibCheck:
 * false`, only `@types/node`) that depends on quire's packed tarball typechecks the
 * README's library example, and its type graph holds no memfs declarations.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, repoRoot } from "../helpers/cli.js";
import { installQuireFromTarball, run } from "./support.js";

let project: string;
let tarballRoot: string;

/** The README's `ts` block that imports quire-mcp. */
const readmeExample = (): string => {
  const readme = readFileSync(path.join(repoRoot, "README.md"), "utf8");
  const block = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)]
    .map((match) => match[1] ?? "")
    .find((body) => body.includes('from "quire-mcp"'));
  if (block === undefined) throw new Error('README has no ts block importing "quire-mcp"');
  return block;
};

const devDependency = (name: string): string => {
  const manifest = JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8")) as {
    devDependencies: Record<string, string>;
  };
  const version = manifest.devDependencies[name];
  if (version === undefined) throw new Error(`no devDependency ${name}`);
  return version;
};

beforeAll(async () => {
  assertBuilt();
  const installed = await installQuireFromTarball();
  tarballRoot = path.dirname(installed.prefix);
  project = mkdtempSync(path.join(tmpdir(), "quire-consumer-"));
  writeFileSync(
    path.join(project, "package.json"),
    JSON.stringify({ name: "consumer", private: true, type: "module" }),
  );
  const npm = await run(
    "npm",
    [
      "install",
      "--no-audit",
      "--no-fund",
      installed.tarball,
      `typescript@${devDependency("typescript")}`,
      `@types/node@${devDependency("@types/node")}`,
    ],
    { cwd: project, env: process.env, timeoutMs: 600_000 },
  );
  if (npm.code !== 0) throw new Error(`npm install in the consumer failed:\n${npm.stderr}`);
  writeFileSync(
    path.join(project, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        lib: ["ES2023"],
        module: "NodeNext",
        moduleResolution: "NodeNext",
        types: ["node"],
        strict: true,
        skipLibCheck: false,
        exactOptionalPropertyTypes: true,
        noUncheckedIndexedAccess: true,
        noEmit: true,
      },
      include: ["example.ts"],
    }),
  );
  // The README's example as a module (top-level await), using what it computes.
  writeFileSync(path.join(project, "example.ts"), `${readmeExample()}\nexport { pulled };\n`);
}, 900_000);

afterAll(() => {
  if (project !== undefined) rmSync(project, { recursive: true, force: true });
  if (tarballRoot !== undefined) rmSync(tarballRoot, { recursive: true, force: true });
});

describe("a strict TypeScript project depending on the tarball", () => {
  it("typechecks the README's library example with skipLibCheck off; no memfs types in the graph", async () => {
    const tsc = await run(
      process.execPath,
      [
        path.join(project, "node_modules", "typescript", "bin", "tsc"),
        "-p",
        project,
        "--listFiles",
      ],
      { cwd: project, env: process.env, timeoutMs: 600_000 },
    );
    const files = tsc.stdout
      .split("\n")
      .filter((line) => line.endsWith(".d.ts") || line.endsWith(".ts"));
    expect(
      tsc.code,
      tsc.stdout
        .split("\n")
        .filter((line) => line.includes("error"))
        .join("\n"),
    ).toBe(0);
    expect(files.some((file) => file.includes("/node_modules/quire-mcp/dist/src/index.d.ts"))).toBe(
      true,
    );
    expect(files.filter((file) => /\/memfs\//.test(file))).toEqual([]);
    // The only @types package is node's.
    expect([
      ...new Set(
        files.map((file) => /\/node_modules\/@types\/([^/]+)\//.exec(file)?.[1]).filter(Boolean),
      ),
    ]).toEqual(["node"]);
  });
});
