/**
 * A small tmpfs for the full-disk tests: mounted on a fresh directory, unmounted and
 * removed after. Mounting needs root (CAP_SYS_ADMIN); without it the test fails loudly,
 * saying so (`npm run test:disk`, run by CI as root).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";

/** Mounts a tmpfs of `size` (mount's syntax: "1m", "4m") on a new directory named from `prefix`; its path. */
export const mountTmpfs = (prefix: string, size: string): string => {
  const mountPoint = mkdtempSync(path.join(tmpdir(), prefix));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", mountPoint], {
      stdio: "pipe",
    });
  } catch (error) {
    throw new Error(
      `this test mounts a small tmpfs and needs root (CAP_SYS_ADMIN): ${String(error)}`,
    );
  }
  return mountPoint;
};

/** Unmounts `mountPoint` (if still mounted) and removes it. */
export const unmountTmpfs = (mountPoint: string): void => {
  try {
    execFileSync("umount", [mountPoint]);
  } catch {
    // Already gone.
  }
  rmSync(mountPoint, { recursive: true, force: true });
};
