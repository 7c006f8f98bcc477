/** The release version, read from the package's own package.json. */
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
 * The `version` of the nearest `package.json` named `quire-mcp` above this module. The
 * module runs from `src/` under tests and from `dist/src/` when built, so the manifest
 * is found by walking up rather than by a fixed relative path. `0.0.0` if none is found.
 */
export const packageVersion = (): string => {
  const require = createRequire(import.meta.url);
  let directory = NodePath.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const manifest: unknown = require(NodePath.join(directory, "package.json"));
      if (isQuireManifest(manifest)) return manifest.version;
    } catch {
      // No readable manifest here; keep walking up.
    }
    const parent = NodePath.dirname(directory);
    if (parent === directory) return "0.0.0";
    directory = parent;
  }
};
