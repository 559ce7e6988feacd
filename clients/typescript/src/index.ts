// governor for TypeScript: slots, leases and provider gates over one
// `governor bridge` co-process per Governor (docs/typescript.md).
import { Governor, type AcquireOptions, type SlotOptions } from "./governor.js";
import type { Lease } from "./lease.js";
import type { ProviderOptions } from "./provider.js";

export { Governor, holding, seconds, type AcquireOptions, type SlotOptions, type Duration, type GovernorOptions, type SlotsResult, type TakeoverOptions } from "./governor.js";
export { Lease, type HeldResource } from "./lease.js";
export { Provider, type ProviderOptions, type ProviderRunOptions } from "./provider.js";
export { Price, usageFromJSON, type Budget, type BudgetState, type Usage } from "./budget.js";
export { findBinary, platformPackage } from "./binary.js";
export { PROTOCOL } from "./bridge.js";
export { VERSION } from "./version.js";
export {
  GovernorError,
  Busy,
  Skipped,
  Withdrawn,
  Superseded,
  LeaseLost,
  BackendError,
  ProtocolError,
} from "./errors.js";

let shared: Governor | undefined;

/** The default Governor: configured from the environment (GOVERNOR_DIR, GOVERNOR_REDIS_URL, ...). */
export function defaultGovernor(): Governor {
  return (shared ??= new Governor());
}

export function acquire(resource: string | string[], opts?: AcquireOptions): Promise<Lease> {
  return defaultGovernor().acquire(resource, opts);
}
export function withSlot<T>(resource: string | string[], opts: SlotOptions, fn: (lease: Lease) => Promise<T> | T): Promise<T> {
  return defaultGovernor().withSlot(resource, opts, fn);
}
export function provider(name: string, opts?: ProviderOptions) {
  return defaultGovernor().provider(name, opts);
}
export function slots(...resources: string[]) {
  return defaultGovernor().slots(...resources);
}
