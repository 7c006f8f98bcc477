/**
 * The names the file system adapters give their own short-lived files next to a
 * working-copy file: temp files of atomic writes and files set aside by a guarded replace.
 * Both must fit in NAME_MAX (255 bytes) whatever the note's name, and must be recognisable
 * by a later scan (ports/FileSystem.ts `leftoverTempName`, `setAsideName`).
 */
import { randomBytes } from "node:crypto";

// Names only need to be unique among concurrent writers (O_EXCL catches the rest): a
// random per-process part and a counter, rather than random bytes per file.
const processPart = randomBytes(6).toString("hex");
let counter = 0;

const next = (): string => {
  counter = (counter + 1) % Number.MAX_SAFE_INTEGER;
  return `${processPart}${counter.toString(36)}`;
};

/** Whether `name` is longer than the part of it a derived name may carry. */
const tooLong = (name: string): boolean => name.length > 66 && Buffer.byteLength(name) > 200;

/** The first code points of `name` that fit in 200 UTF-8 bytes. */
const cut = (name: string): string => {
  let prefix = "";
  for (const character of name) {
    if (Buffer.byteLength(prefix + character) > 200) break;
    prefix += character;
  }
  return prefix;
};

/** `.<name>.quire-<id>.tmp`, the name part cut to 200 bytes: a temp file of an atomic write. */
export const tempNameFor = (name: string): string =>
  `.${tooLong(name) ? cut(name) : name}.quire-${next()}.tmp`;

/**
 * The name a guarded replace or remove gives the file it moves out of the way:
 * `.<name>.quire-<id>.aside`, from which the original name can be read back; for a name
 * over 200 bytes `.<first 200 bytes>.quire-<id>.cut`, which names it only in part.
 */
export const asideNameFor = (name: string): string =>
  tooLong(name) ? `.${cut(name)}.quire-${next()}.cut` : `.${name}.quire-${next()}.aside`;
