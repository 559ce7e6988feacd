// One version: the client's VERSION and the engine version the bridge's
// hello reports are the same (the release stamps both from the VERSION file).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Governor, VERSION } from "../src/index.js";
import { governorBin, tmp } from "./helpers.js";

test("the client and the engine it drives report one version", async () => {
  assert.match(VERSION, /^\d+\.\d+\.\d+/);
  const gov = new Governor({ bin: governorBin(), dir: tmp() });
  try {
    const engine = await gov.engine();
    assert.equal(engine.version, VERSION, "the binary the bridge runs is another version than this client");
    assert.match(engine.commit, /^([0-9a-f]{7,40}(-dirty)?)?$/);
  } finally {
    await gov.close();
  }
});
