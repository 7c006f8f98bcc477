/**
 * The channel from the stdio transport to the tool handler for `tools/call` requests
 * that the transport could not deliver as sent (see `jsonRpcLine.ts`): the transport
 * notes the defect on the request object it delivers, the handler looks it up and
 * answers INVALID_REQUEST instead of running the tool. Keyed weakly by the request
 * object itself, so nothing a client sends can forge or collide with an entry.
 */
import type { JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import type { CallDefect } from "./jsonRpcLine.js";

const defects = new WeakMap<JSONRPCRequest, CallDefect>();

/** Marks `request` (about to be delivered) as malformed, for {@link defectOf}. */
export const noteDefect = (request: JSONRPCRequest, defect: CallDefect): void => {
  defects.set(request, defect);
};

/** The defect noted for `request`, if any. */
export const defectOf = (request: JSONRPCRequest): CallDefect | undefined => defects.get(request);
