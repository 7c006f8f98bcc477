import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isEditorWorkingFile } from "../../src/domain/editorFiles.js";

describe("isEditorWorkingFile", () => {
  it("knows the working files of vim, emacs, JetBrains, Kate, GNOME and desktops", () => {
    for (const name of [
      ".note.md.swp",
      ".note.md.swo",
      ".note.md.swa",
      "note.md~",
      ".#note.md",
      "#note.md#",
      "note.md___jb_tmp___",
      "note.md___jb_old___",
      ".note.md.kate-swp",
      ".goutputstream-ABC123",
      ".DS_Store",
      "Thumbs.db",
      "4913",
    ])
      expect(isEditorWorkingFile(name), name).toBe(true);
  });

  it("leaves notes alone, quire's own conflict names too", () => {
    for (const name of [
      "note.md",
      "note.md~local",
      "note.md~remote",
      "~",
      "#",
      "##",
      ".#",
      ".swp",
      ".x.swq",
      "x.swp",
      "#hashtag.md",
      "a#b#",
      ".kate-swp",
      ".hidden.md",
      "49130",
      "jb___jb_tmp___.md",
    ])
      expect(isEditorWorkingFile(name), name).toBe(false);
  });

  it("a name that ends in .md and starts with a letter is never one", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z][a-z0-9 #~._-]{0,20}\.md$/), (name) => {
        expect(isEditorWorkingFile(name)).toBe(false);
      }),
    );
  });
});
