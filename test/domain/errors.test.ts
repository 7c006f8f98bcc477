import { Effect, Exit } from "effect";
import { it as effectIt } from "@effect/vitest";
import { describe, expect, it } from "vitest";
import {
  DomainError,
  domainError,
  engineDetails,
  errorActions,
  errorCodes,
  errorEntry,
  errorReasons,
  errorRows,
  fileReasons,
  isReasonOf,
  reasonsOf,
  withNote,
} from "../../src/domain/errors.js";

describe("the error table", () => {
  it("has the ten SPEC codes, each with at least one reason", () => {
    expect(errorCodes).toEqual([
      "INVALID_REQUEST",
      "INVALID_CONTENT",
      "CONTENT_CONFLICT",
      "READ_ONLY_PATH",
      "REMOTE_BUSY",
      "STORAGE_FAILURE",
      "STORAGE_INTEGRITY",
      "RECOVERY_FAILURE",
      "ENGINE_FAILED",
      "INCOMPATIBLE_STORE",
    ]);
    for (const code of errorCodes) expect(reasonsOf(code).length).toBeGreaterThan(0);
  });

  it("keeps every reason the brief and SPEC §3 name", () => {
    const pairs = new Set(errorRows.map((row) => `${row.code}/${row.reason}`));
    const required = {
      INVALID_REQUEST: [
        "INVALID_ARGUMENT",
        "PATH_OUTSIDE_ROOT",
        "PATH_NOT_ABSOLUTE",
        "PATH_TOO_LONG",
        "PATH_NOT_DIRECTORY",
        "MESSAGE_BLANK",
        "MESSAGE_TOO_LONG",
        "NOT_PULLED",
        "NESTED_WORKING_COPY",
        "MASS_DELETE",
      ],
      INVALID_CONTENT: ["INVALID_FILES"],
      CONTENT_CONFLICT: ["MERGE_CONFLICT", "UNRESOLVED_MARKERS"],
      READ_ONLY_PATH: ["PATH_SET_VIOLATION"],
      REMOTE_BUSY: ["CAS_RETRIES_EXHAUSTED"],
      STORAGE_FAILURE: [
        "STORE_UNAVAILABLE",
        "ACCESS_DENIED",
        "TIMEOUT",
        "THROTTLED",
        "PUBLICATION_UNKNOWN",
      ],
      STORAGE_INTEGRITY: [
        "CHECKSUM_MISMATCH",
        "MANIFEST_INVALID",
        "PACK_MISSING",
        "PACK_INVALID",
        "UNSUPPORTED_VERSION",
      ],
      RECOVERY_FAILURE: ["UNEXPECTED_FAILURE", "RECOVERY_PENDING"],
      ENGINE_FAILED: ["LOCAL_IO", "LOCAL_ACCESS", "BUSY", "INTERNAL"],
      INCOMPATIBLE_STORE: [
        "NO_CONDITIONAL_CREATE",
        "NO_CONDITIONAL_REPLACE",
        "NO_READ_AFTER_WRITE",
        "ACCESS_DENIED",
        "BUCKET_MISSING",
      ],
    };
    for (const [code, reasons] of Object.entries(required)) {
      for (const reason of reasons)
        expect(pairs.has(`${code}/${reason}`), `${code}/${reason}`).toBe(true);
    }
  });

  it("pins the actions and retryable flags the contract names", () => {
    const pinned: ReadonlyArray<readonly [string, string, string, boolean]> = [
      ["INVALID_REQUEST", "NOT_PULLED", "PULL_FIRST", false],
      ["INVALID_REQUEST", "INVALID_ARGUMENT", "FIX_REQUEST", false],
      ["INVALID_CONTENT", "INVALID_FILES", "EDIT_FILES", false],
      ["CONTENT_CONFLICT", "MERGE_CONFLICT", "EDIT_FILES", false],
      ["READ_ONLY_PATH", "PATH_SET_VIOLATION", "COMMIT_AGAIN", true],
      ["REMOTE_BUSY", "CAS_RETRIES_EXHAUSTED", "RETRY_LATER", true],
      ["STORAGE_FAILURE", "STORE_UNAVAILABLE", "RETRY_LATER", true],
      ["STORAGE_FAILURE", "ACCESS_DENIED", "CHECK_CONFIGURATION", false],
      ["STORAGE_FAILURE", "TIMEOUT", "RETRY_LATER", true],
      ["STORAGE_FAILURE", "PUBLICATION_UNKNOWN", "PULL_TO_VERIFY", false],
      ["STORAGE_INTEGRITY", "PACK_MISSING", "CONTACT_OPERATOR", false],
      ["RECOVERY_FAILURE", "UNEXPECTED_FAILURE", "PULL_AGAIN", true],
      ["RECOVERY_FAILURE", "RECOVERY_PENDING", "CONTACT_OPERATOR", false],
      ["ENGINE_FAILED", "LOCAL_IO", "RETRY_LATER", true],
      // A permission or a read-only file system: repeating the call cannot help.
      ["ENGINE_FAILED", "LOCAL_ACCESS", "CHECK_CONFIGURATION", false],
      ["ENGINE_FAILED", "BUSY", "RETRY_LATER", true],
      ["ENGINE_FAILED", "INTERNAL", "CONTACT_OPERATOR", false],
    ];
    for (const [code, reason, action, retryable] of pinned) {
      const row = errorRows.find(
        (candidate) => candidate.code === code && candidate.reason === reason,
      );
      expect(row, `${code}/${reason}`).toMatchObject({ action, retryable });
    }
    for (const row of errorRows.filter((candidate) => candidate.code === "INCOMPATIBLE_STORE")) {
      expect(row).toMatchObject({ action: "CHECK_CONFIGURATION", retryable: false });
    }
    for (const row of errorRows.filter((candidate) => candidate.code === "STORAGE_INTEGRITY")) {
      expect(row).toMatchObject({ action: "CONTACT_OPERATOR", retryable: false });
    }
  });

  it("uses every action, and only known ones, with non-empty prose", () => {
    expect(new Set(errorRows.map((row) => row.action))).toEqual(new Set(errorActions));
    for (const row of errorRows) {
      expect(row.reason).toMatch(/^[A-Z][A-Z0-9_]*$/);
      expect(row.when.length).toBeGreaterThan(0);
      expect(row.remedy.length).toBeGreaterThan(0);
      expect(`${row.when}${row.remedy}`).not.toContain("|");
    }
    expect(errorReasons.length).toBe(new Set(errorRows.map((row) => row.reason)).size);
  });

  it("has the closed file-reason and detail sets", () => {
    expect([...fileReasons].sort()).toEqual(
      [
        "NOT_UTF8",
        "CONTAINS_NUL",
        "SYMLINK",
        "SPECIAL_FILE",
        "INVALID_NAME",
        "CASE_COLLISION",
        "FILE_DIRECTORY_CLASH",
        "TOO_LARGE",
        "INVALID_ATTRIBUTES",
        "TEXT_CONFLICT",
        "DELETE_MODIFY",
        "ADD_ADD",
        "FILE_DIRECTORY",
        "CASE_CONFLICT",
        "MARKER_BLOCK",
        "UNPUBLISHED_CHANGE",
        "READ_ONLY",
        "NOT_WRITABLE",
      ].sort(),
    );
    expect(engineDetails).toEqual([
      "disk full",
      "permission denied",
      "read-only file system",
      "too many open files",
      "name too long",
      "file too large",
    ]);
  });

  it("looks entries up and recognises reasons per code", () => {
    expect(errorEntry("STORAGE_FAILURE", "ACCESS_DENIED").action).toBe("CHECK_CONFIGURATION");
    expect(isReasonOf("INCOMPATIBLE_STORE", "ACCESS_DENIED")).toBe(true);
    expect(isReasonOf("INVALID_REQUEST", "ACCESS_DENIED")).toBe(false);
    expect(isReasonOf("INVALID_REQUEST", "toString")).toBe(false);
  });
});

describe("domainError", () => {
  it("fills action and retryable from the table and defaults files to []", () => {
    const error = domainError({ code: "STORAGE_FAILURE", reason: "TIMEOUT", message: "timed out" });
    expect(error).toBeInstanceOf(DomainError);
    expect(error._tag).toBe("DomainError");
    expect(error).toMatchObject({
      code: "STORAGE_FAILURE",
      reason: "TIMEOUT",
      action: "RETRY_LATER",
      retryable: true,
      message: "timed out",
      files: [],
    });
    expect("detail" in error).toBe(false);
    expect("recovery" in error).toBe(false);
  });

  it("keeps files, detail and recovery where the code allows them", () => {
    const conflict = domainError({
      code: "CONTENT_CONFLICT",
      reason: "MERGE_CONFLICT",
      message: "m",
      files: [{ path: "a.md", reason: "TEXT_CONFLICT", ranges: [{ start: 1, end: 5 }] }],
    });
    expect(conflict.files).toEqual([
      { path: "a.md", reason: "TEXT_CONFLICT", ranges: [{ start: 1, end: 5 }] },
    ]);
    const engine = domainError({
      code: "ENGINE_FAILED",
      reason: "LOCAL_IO",
      message: "m",
      detail: "disk full",
    });
    expect(engine.detail).toBe("disk full");
    const recovery = {
      stage: "materialize",
      remoteAccepted: "unknown",
      resynchronized: false,
    } as const;
    const recovered = domainError({
      code: "RECOVERY_FAILURE",
      reason: "UNEXPECTED_FAILURE",
      message: "m",
      recovery,
    });
    expect(recovered.recovery).toEqual(recovery);
    expect(recovered.action).toBe("PULL_AGAIN");
  });

  it("withNote adds to the message and keeps everything else, the log-only cause included", () => {
    const failed = domainError({
      code: "RECOVERY_FAILURE",
      reason: "UNEXPECTED_FAILURE",
      message: "Stopped",
      recovery: { stage: "materialize", remoteAccepted: "unknown", resynchronized: false },
      hostCause: "EIO: i/o error",
    });
    const noted = withNote(failed, "It wrote a.md.");
    expect(noted.message).toBe("Stopped. It wrote a.md.");
    expect({ ...noted }).toEqual({ ...failed });
    expect(noted.hostCause).toBe("EIO: i/o error");
  });

  it("rejects mismatched inputs at compile time", () => {
    // Never called: the @ts-expect-error lines fail typechecking if they ever compile.
    const _typeChecks = () => {
      // @ts-expect-error MERGE_CONFLICT is not an INVALID_REQUEST reason
      domainError({ code: "INVALID_REQUEST", reason: "MERGE_CONFLICT", message: "m" });
      domainError({
        code: "STORAGE_FAILURE",
        reason: "TIMEOUT",
        message: "m",
        // @ts-expect-error detail only belongs to ENGINE_FAILED
        detail: "disk full",
      });
      // @ts-expect-error detail is a closed set
      domainError({ code: "ENGINE_FAILED", reason: "LOCAL_IO", message: "m", detail: "oops" });
      // @ts-expect-error RECOVERY_FAILURE requires its recovery report
      domainError({ code: "RECOVERY_FAILURE", reason: "RECOVERY_PENDING", message: "m" });
      domainError({
        code: "INVALID_CONTENT",
        reason: "INVALID_FILES",
        message: "m",
        // @ts-expect-error file reasons are a closed set
        files: [{ path: "a", reason: "BAD", ranges: [] }],
      });
    };
    expect(typeof _typeChecks).toBe("function");
  });

  effectIt.effect("is a yieldable tagged failure", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(
        Effect.gen(function* () {
          return yield* domainError({
            code: "REMOTE_BUSY",
            reason: "CAS_RETRIES_EXHAUSTED",
            message: "busy",
          });
        }),
      );
      expect(Exit.isFailure(exit)).toBe(true);
      const caught = yield* domainError({
        code: "ENGINE_FAILED",
        reason: "BUSY",
        message: "locked",
      }).pipe(Effect.catchTag("DomainError", (error) => Effect.succeed(error.reason)));
      expect(caught).toBe("BUSY");
    }),
  );
});
