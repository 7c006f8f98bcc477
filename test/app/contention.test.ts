import { describe, expect, it } from "vitest";
import { busyError, type Setback } from "../../src/app/usecases/commit/contention.js";

const setbacks: ReadonlyArray<Setback> = ["lost", "aborted", "noPlace"];

describe("busyError: a commit whose retries ran out", () => {
  it("is REMOTE_BUSY/CAS_RETRIES_EXHAUSTED, retryable, whatever ended its last attempt", () => {
    for (const setback of setbacks) {
      const error = busyError(setback);
      expect([error.code, error.reason, error.action, error.retryable]).toEqual([
        "REMOTE_BUSY",
        "CAS_RETRIES_EXHAUSTED",
        "RETRY_LATER",
        true,
      ]);
      expect(error.message).toMatch(/nothing was published\. Call notes_commit again later/);
    }
  });

  it("says which setback it was, so that a store failing others' uploads is not reported as contention", () => {
    const messages = setbacks.map((setback) => busyError(setback).message);
    expect(new Set(messages).size).toBe(setbacks.length);
    expect(busyError("lost").message).toMatch(/Other participants kept publishing first/);
    expect(busyError("aborted").message).toMatch(
      /abandoned because another working copy's upload to the store failed.*check the store/,
    );
    expect(busyError("noPlace").message).toMatch(/busy publishing other working copies' commits/);
  });
});
