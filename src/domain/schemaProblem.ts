/**
 * A short, fixed description of why stored JSON failed its schema: the field path and
 * the kind of problem, never a dump of the schema or of the offending value (which
 * could be long, or carry keys and hashes into a result).
 */
import { ParseResult } from "effect";

const kinds: Readonly<Record<string, string>> = {
  Missing: "is missing",
  Unexpected: "is not a known field",
  Type: "has the wrong type",
  Refinement: "has an invalid value",
  Forbidden: "cannot be checked",
  Transformation: "has an invalid value",
  Pointer: "has an invalid value",
  Composite: "has an invalid value",
};

/** One line naming the first problem of `issue`: e.g. `checkpoint.size has the wrong type`. */
export const describeIssue = (issue: ParseResult.ParseIssue): string => {
  const first = ParseResult.ArrayFormatter.formatIssueSync(issue)[0];
  if (first === undefined) return "the value is invalid";
  const path = first.path.map(String).join(".");
  return `${path === "" ? "the value" : path} ${kinds[first._tag] ?? "has an invalid value"}`;
};
