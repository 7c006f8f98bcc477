import { describe, expect, it } from "vitest";
import { useColor } from "../../src/app/cli/terminal.js";

describe("useColor", () => {
  it("colours only a TTY without a non-empty NO_COLOR", () => {
    expect(useColor(true, undefined)).toBe(true);
    expect(useColor(true, "")).toBe(true);
    expect(useColor(true, "1")).toBe(false);
    expect(useColor(false, undefined)).toBe(false);
    expect(useColor(undefined, undefined)).toBe(false);
  });

  it("never colours a dumb terminal (Emacs' shell, which shows escapes as text)", () => {
    expect(useColor(true, undefined, "dumb")).toBe(false);
    expect(useColor(true, undefined, "xterm-256color")).toBe(true);
    expect(useColor(true, undefined, "")).toBe(true);
  });
});
