/** Exit statuses and terminal facts shared by the CLI modules (kept free of heavy imports). */

/** Exit statuses: success, a reported (domain or startup) error, invalid configuration, a signal, a bug. */
export const exitCodes = {
  ok: 0,
  reported: 1,
  config: 2,
  /** sysexits' EX_SOFTWARE: a bug inside quire. */
  internal: 70,
  /** sysexits' EX_IOERR: the command ran, but its report could not be written (stdout). */
  output: 74,
  interrupted: 130,
} as const;

/** Where the CLI writes and whether each stream gets colour. */
export interface Terminal {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly outColor: boolean;
  readonly errColor: boolean;
}

/**
 * Colour only on a TTY and never when NO_COLOR is non-empty (SPEC §9), nor when TERM is
 * `dumb`: such a terminal (Emacs' shell, some CI consoles) shows the escapes as text.
 */
export const useColor = (
  isTTY: boolean | undefined,
  noColor: string | undefined,
  term?: string,
): boolean => isTTY === true && (noColor ?? "") === "" && term !== "dumb";
