// Where the governor binary comes from: $GOVERNOR_BIN, then the platform
// package (@governor/cli-<os>-<arch>, an optionalDependency), then PATH.
import { accessSync, constants } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, dirname, join } from "node:path";

/** The npm package that ships the binary for this platform, e.g. @governor/cli-linux-x64. */
export function platformPackage(platform: string = process.platform, arch: string = process.arch): string {
  return `@governor/cli-${platform}-${arch}`;
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The binary to start, or an Error saying where it was looked for. */
export function findBinary(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.GOVERNOR_BIN;
  if (fromEnv) {
    if (!executable(fromEnv)) throw new Error(`GOVERNOR_BIN=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  const pkg = platformPackage();
  try {
    const req = createRequire(import.meta.url);
    const bin = join(dirname(req.resolve(`${pkg}/package.json`)), "bin", "governor");
    if (executable(bin)) return bin;
  } catch {
    // not installed: fall through to PATH
  }
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const bin = join(dir, "governor");
    if (executable(bin)) return bin;
  }
  throw new Error(`governor binary not found: set GOVERNOR_BIN, install ${pkg}, or put governor on PATH`);
}
