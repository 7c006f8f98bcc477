/** Types of mergeCases.mjs, for the smoke test in test/bench. */
export interface MergeCase {
  readonly name: string;
  readonly lines: number;
  readonly editsPerSide: number;
  readonly base: string;
  readonly local: string;
  readonly remote: string;
}
export declare const proseCase: (
  name: string,
  lineCount: number,
  perSide: number,
  seed: number,
) => MergeCase;
export declare const identicalCase: (
  name: string,
  lineCount: number,
  perSide: number,
  seed: number,
) => MergeCase;
export declare const mergeCases: () => ReadonlyArray<MergeCase>;
