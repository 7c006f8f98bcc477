/** The release version and the package's own directory, read from its package.json. */
import { createRequire } from "node:module";
import * as NodePath from "node:path";
import { fileURLToPath } from "node:url";

const isQuireManifest = (value: unknown): value is { name: "quire-mcp"; version: string } =>
  typeof value === "object" &&
  value !== null &&
  "name" in value &&
  value.name === "quire-mcp" &&
  "version" in value &&
  typeof value.version === "string";

/**
 * The directory and manifest of the nearest `package.json` named `quire-mcp` above this
 * module. The module runs from `src/` under tests, from `dist/src/` when built and from
 * `dist/cli/` bundled, so the manifest is found by walking up rather than by a fixed
 * relative path.
 */
const findPackage = (): { readonly root: string; readonly version: string } | undefined => {
  const require = createRequire(import.meta.url);
  let directory = NodePath.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const manifest: unknown = require(NodePath.join(directory, "package.json"));
      if (isQuireManifest(manifest)) return { root: directory, version: manifest.version };
    } catch {
      // No readable manifest here; keep walking up.
    }
    const parent = NodePath.dirname(directory);
    if (parent === directory) return undefined;
    directory = parent;
  }
};

/** The `version` of the package's manifest; `0.0.0` if none is found. */
export const packageVersion = (): string => findPackage()?.version ?? "0.0.0";

/**
 * The absolute path of the package's launcher (`<package>/bin/quire.js`, what the `quire`
 * bin links to), or `undefined` when the package directory cannot be found.
 */
export const launcherPath = (): string | undefined => {
  const found = findPackage();
  return found === undefined ? undefined : NodePath.join(found.root, "bin", "quire.js");
};
