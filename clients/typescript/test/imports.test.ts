// The client's module graph, as Node loads it (the compiled dist/src/*.js:
// type-only imports are gone there): no module imports one that imports it
// back (governor.ts and provider.ts did).
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

// In the tree, the compiled sources beside this test; where the suite runs
// against an installed package (CI installs the release's tarball into an
// empty project, whose dist/src holds only a shim), that package's modules.
const beside = fileURLToPath(new URL("../src/", import.meta.url));
const src = existsSync(join(beside, "governor.js"))
  ? beside
  : dirname(fileURLToPath(import.meta.resolve("@governor/client")));

/** The relative modules a compiled module's import and export statements (and dynamic imports) load. */
export function importsOf(code: string): string[] {
  const out = new Set<string>();
  const re = /(?:^|\n)\s*(?:import|export)\b[^;'"]*?from\s*["'](\.[^"']+)["']|(?:^|\n)\s*import\s*["'](\.[^"']+)["']|\bimport\(\s*["'](\.[^"']+)["']\s*\)/g;
  for (const m of code.matchAll(re)) out.add((m[1] ?? m[2] ?? m[3]).replace(/^\.\//, ""));
  return [...out].sort();
}

/** Every circle in graph, each as the path that closes it. */
export function circles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, number>();
  const stack: string[] = [];
  const visit = (m: string) => {
    state.set(m, 1);
    stack.push(m);
    for (const n of graph.get(m) ?? []) {
      if (state.get(n) === 1) found.push([...stack.slice(stack.indexOf(n)), n]);
      else if (!state.has(n)) visit(n);
    }
    stack.pop();
    state.set(m, 2);
  };
  for (const m of [...graph.keys()].sort()) if (!state.has(m)) visit(m);
  return found;
}

test("the client's modules import no circle", () => {
  const files = readdirSync(src).filter((f) => f.endsWith(".js"));
  assert.ok(files.includes("governor.js") && files.includes("provider.js"), `compiled modules in ${src}: ${files}`);
  const graph = new Map(files.map((f) => [f, importsOf(readFileSync(join(src, f), "utf8"))]));
  assert.ok(graph.get("governor.js")!.includes("provider.js"), `governor.js's imports as read: ${graph.get("governor.js")}`);
  assert.deepEqual(circles(graph), []);
});

test("the graph reader sees a circle", () => {
  const a = importsOf(`import { x } from "./b.js";\nexport { y } from "./c.js";\nconst m = await import("./d.js");`);
  assert.deepEqual(a, ["b.js", "c.js", "d.js"]);
  const graph = new Map([["a.js", a], ["b.js", ["a.js"]], ["c.js", []], ["d.js", []]]);
  assert.deepEqual(circles(graph), [["a.js", "b.js", "a.js"]]);
});
