// Maps a compiled dist/ position back to its TypeScript source line via the emitted
// source map, so profiles name `src/…/file.ts:line`.
import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B64_VALUE = new Map([...B64].map((c, i) => [c, i]));

const decodeVlq = (segment) => {
  const values = [];
  let value = 0;
  let shift = 0;
  for (const char of segment) {
    const digit = B64_VALUE.get(char);
    value += (digit & 31) << shift;
    if (digit & 32) shift += 5;
    else {
      values.push(value & 1 ? -(value >>> 1) : value >>> 1);
      value = 0;
      shift = 0;
    }
  }
  return values;
};

/** For each generated line (0-based): the first mapped `{ source, line }` (0-based), or null. */
const parseMap = (map) => {
  const lines = [];
  let source = 0;
  let line = 0;
  for (const generated of map.mappings.split(";")) {
    let first = null;
    for (const segment of generated.split(",")) {
      if (segment === "") continue;
      const v = decodeVlq(segment);
      if (v.length >= 4) {
        source += v[1];
        line += v[2];
        if (first === null) first = { source: map.sources[source], line };
      }
    }
    lines.push(first);
  }
  return lines;
};

const cache = new Map();

/** `file:line` (1-based) of the TypeScript source for a dist .js path and 0-based line; null if unknown. */
export const originalPosition = (jsPath, line0) => {
  if (!cache.has(jsPath)) {
    const mapFile = `${jsPath}.map`;
    cache.set(
      jsPath,
      existsSync(mapFile)
        ? { dir: path.dirname(jsPath), lines: parseMap(JSON.parse(readFileSync(mapFile, "utf8"))) }
        : null,
    );
  }
  const entry = cache.get(jsPath);
  const hit = entry?.lines[line0];
  return hit ? { file: path.resolve(entry.dir, hit.source), line: hit.line + 1 } : null;
};
