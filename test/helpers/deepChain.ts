/**
 * Directory chains deeper than a host path may be long (Linux: 4,096 bytes): made one
 * level at a time relative to the directory above, by a child process that `chdir`s down
 * (an absolute path, or a relative one from the top, would fail ENAMETOOLONG), so the
 * test process's own working directory is never changed.
 */
import { execFileSync } from "node:child_process";

/** The child: `node -e <this> <directory> <file or ""> <chunk>…` */
const script = `
const { mkdirSync, writeFileSync } = require("node:fs");
const [directory, file, ...chunks] = process.argv.slice(1);
process.chdir(directory);
for (const chunk of chunks) {
  mkdirSync(chunk, { recursive: true });
  process.chdir(chunk);
}
if (file !== "") writeFileSync(file, "deep\\n");
`;

/**
 * Creates the directories `segments` one below the other in `directory` (existing ones are
 * kept), and when `file` is given a file of that name (holding `deep\n`) in the deepest.
 */
export const makeDeepChain = (
  directory: string,
  segments: ReadonlyArray<string>,
  file?: string,
): void => {
  // Each chunk stays well within PATH_MAX as a relative path.
  const chunks: string[] = [];
  let chunk: string[] = [];
  let bytes = 0;
  for (const segment of segments) {
    const length = Buffer.byteLength(segment) + 1;
    if (bytes + length > 3000 && chunk.length > 0) {
      chunks.push(chunk.join("/"));
      chunk = [];
      bytes = 0;
    }
    chunk.push(segment);
    bytes += length;
  }
  if (chunk.length > 0) chunks.push(chunk.join("/"));
  execFileSync(process.execPath, ["-e", script, directory, file ?? "", ...chunks]);
};

/**
 * Removes `path` and everything below it, however deep (`rm -rf` works relative to the
 * directories it descends; node's `rm` names each path whole and fails ENAMETOOLONG).
 */
export const removeDeep = (path: string): void => {
  execFileSync("rm", ["-rf", "--", path]);
};
