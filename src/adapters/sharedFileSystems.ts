/**
 * Which file systems are shared between hosts (network, cluster) or user-space (FUSE),
 * recognised by the `f_type` magic number `statfs(2)` reports. The file store's
 * compare-and-swap rests on `link(2)` and directory listings being coherent, which
 * such file systems promise at best among the processes of one host (client caches,
 * NFS attribute caching), so the store warns when its root is on one.
 */

/** `f_type` values (linux/magic.h and the file systems' own headers) and display names. */
const sharedFileSystems: ReadonlyMap<number, string> = new Map([
  [0x6969, "NFS"],
  [0x517b, "SMB"],
  [0xff534d42, "CIFS"],
  [0xfe534d42, "SMB2"],
  [0x65735546, "FUSE"],
  [0x01021997, "9P"],
  [0x00c36400, "Ceph"],
  [0x5346414f, "AFS"],
  [0x0bd00bd0, "Lustre"],
  [0x01161970, "GFS2"],
  [0x7461636f, "OCFS2"],
  [0x73757245, "Coda"],
]);

/**
 * The name of the shared or FUSE file system whose `statfs` type is `type`, or
 * `undefined` for any other (local) file system. Never fails: a type Node reports as a
 * negative 32-bit number is read as unsigned.
 */
export const sharedFileSystemName = (type: number): string | undefined =>
  Number.isSafeInteger(type) ? sharedFileSystems.get(type >>> 0) : undefined;
