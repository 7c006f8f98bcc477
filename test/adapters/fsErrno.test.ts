/**
 * The errno classification shared by the file system adapters: a quota exceeded
 * (EDQUOT) is the same "no space" as a full device (ENOSPC), so both end in the
 * `disk full` detail; a file grown past what the file system or `ulimit -f` allows
 * (EFBIG) is `TooLarge`.
 */
import { describe, expect, it } from "vitest";
import { reasonForErrno } from "../../src/adapters/fsErrno.js";
import { localFailure, workingCopyFailure } from "../../src/app/usecases/shared/failures.js";
import { FsError } from "../../src/ports/FileSystem.js";

const failed = (code: string) =>
  new FsError({
    reason: reasonForErrno(code, false),
    path: "/ws/a/n.md",
    message: `${code}: failed, write`,
  });

describe("errno classification", () => {
  it("maps EDQUOT exactly as ENOSPC: NoSpace, detail disk full", () => {
    expect(reasonForErrno("EDQUOT", false)).toBe("NoSpace");
    expect(reasonForErrno("EDQUOT", true)).toBe(reasonForErrno("ENOSPC", true));
    for (const code of ["ENOSPC", "EDQUOT"]) {
      expect(localFailure(failed(code), "writing").detail).toBe("disk full");
      expect(workingCopyFailure(failed(code), "writing a file")).toMatchObject({
        code: "ENGINE_FAILED",
        reason: "LOCAL_IO",
        detail: "disk full",
      });
    }
  });

  it("maps EFBIG to TooLarge with a detail naming the cause", () => {
    expect(reasonForErrno("EFBIG", false)).toBe("TooLarge");
    const error = workingCopyFailure(failed("EFBIG"), "writing a file");
    expect(error).toMatchObject({
      code: "ENGINE_FAILED",
      reason: "LOCAL_IO",
      detail: "file too large",
    });
    expect(error.message).toContain("/ws/a/n.md");
  });
});
