/** The part of s3rver's (untyped, CommonJS) API the integration suite uses. */
declare module "s3rver" {
  import type { AddressInfo } from "node:net";
  interface S3rverOptions {
    readonly address?: string;
    readonly port?: number;
    readonly silent?: boolean;
    readonly directory?: string;
    readonly vhostBuckets?: boolean;
    readonly resetOnClose?: boolean;
    readonly configureBuckets?: ReadonlyArray<{ readonly name: string }>;
  }
  export default class S3rver {
    constructor(options: S3rverOptions);
    run(): Promise<AddressInfo>;
    close(): Promise<void>;
  }
}
