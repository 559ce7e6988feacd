// The client's version: its package.json's, which the release command
// stamps from the VERSION file at the repository's root (one source for
// the binary, the wheels and the npm packages).
import { createRequire } from "node:module";

/** This client's version ("0.1.0"); the engine's is Governor.engine(). */
export const VERSION: string = (createRequire(import.meta.url)("../../package.json") as { version: string }).version;
