/**
 * Files that editors and desktops keep beside the files a person has open: swap, lock,
 * backup and auto-save files, and folder metadata (docs/working-copy.md, "Editor and
 * system files"). Why: they are not notes, and most are not notebook text either — a
 * vim swap file holds U+0000, an emacs lock is a symlink, `.DS_Store` is binary — so a
 * scan that took them refused every commit of the copy for as long as the person kept a
 * note open in vim or emacs, or a Mac showed the folder in Finder.
 * A working-copy scan skips such a file when it could not be a note anyway (a link, or
 * content that is not notebook text) and the notebook does not hold its path; a text
 * file is scanned whatever its name, so that nothing a commit could publish goes unseen.
 */

/** Exact names of desktop metadata and of vim's writability probe. */
const exactNames: ReadonlySet<string> = new Set([".DS_Store", "Thumbs.db", "4913"]);

/** A vim swap file: `.<name>.sw<a-p>` (vim counts down from `.swp` when one is taken). */
const vimSwap = /^\..+\.sw[a-p]$/u;

/**
 * Whether `name` (one path segment) is an editor's or a desktop's working file:
 * - `.DS_Store`, `Thumbs.db`; `4913` (vim's probe of whether a directory is writable);
 * - `<name>~` (vim and emacs backups); `.<name>.swp` … `.swa` (vim swap files);
 * - `.#<name>` (emacs locks, symlinks) and `#<name>#` (emacs auto-saves);
 * - `<name>___jb_tmp___`, `<name>___jb_old___` (JetBrains safe writes);
 * - `.<name>.kate-swp` (Kate); `.goutputstream-<id>` (GNOME's atomic saves).
 * Quire's own conflict names (`x.md~local`, `x.md~remote`) do not end in `~`. Pure.
 */
export const isEditorWorkingFile = (name: string): boolean => {
  if (exactNames.has(name)) return true;
  const first = name.charCodeAt(0);
  const last = name.charCodeAt(name.length - 1);
  // "~"
  if (last === 0x7e && name.length > 1) return true;
  // "#"
  if (first === 0x23 && last === 0x23 && name.length > 2) return true;
  if (name.endsWith("___jb_tmp___") || name.endsWith("___jb_old___")) return true;
  // "."
  if (first !== 0x2e) return false;
  return (
    (name.length > 2 && name.charCodeAt(1) === 0x23) ||
    vimSwap.test(name) ||
    (name.endsWith(".kate-swp") && name.length > ".kate-swp".length + 1) ||
    name.startsWith(".goutputstream-")
  );
};
