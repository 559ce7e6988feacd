// A stand-in for `governor bridge` for the client's own unit tests: speaks
// the envelope, grants every acquire at once, and misbehaves on request
// (FAKE_PROTOCOL: the protocol it claims; FAKE_ERROR: a JSON error object to
// answer acquire with). touch is answered, then its lease is lost; lose
// sends a loss of args.lease, then the reply. echo answers with its args and an event, written a
// few bytes at a time (a line split across reads, a UTF-8 character cut).
import { createInterface } from "node:readline";
import { writeSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

const protocol = Number(process.env.FAKE_PROTOCOL ?? "1");
const failWith = process.env.FAKE_ERROR ? JSON.parse(process.env.FAKE_ERROR) : undefined;
let leases = 0;
const send = (o: unknown) => process.stdout.write(JSON.stringify(o) + "\n");

createInterface({ input: process.stdin }).on("line", (line) => {
  const req = JSON.parse(line);
  const reply = (result: unknown) => send({ id: req.id, ok: true, result });
  switch (req.op) {
    case "hello":
      return reply({ protocol, version: "fake", pid: process.pid, backend: "file", project: "p", session: "s" });
    case "acquire": {
      if (failWith) return send({ id: req.id, ok: false, error: failWith });
      const lease = `L${++leases}`;
      reply({ lease, resources: req.args.resources.map((r: string) => ({ resource: r, handle: `${r}@id.secret`, lease_id: "id", token: leases, weight: 1, nested: false })), env: { GOVERNOR_HELD: "x" } });
      if (req.args.resources.includes("lose-me")) send({ event: "lost", lease, resource: "lose-me", reason: "taken over", code: 122 });
      return;
    }
    case "touch": // then lost: a loss that comes to a lease already made
      reply({});
      return send({ event: "lost", lease: req.args.lease, resource: "touched", reason: "taken over", code: 122 });
    case "echo": {
      const bytes = Buffer.from(JSON.stringify({ event: "echoed", args: req.args }) + "\n" + JSON.stringify({ id: req.id, ok: true, result: req.args }) + "\n");
      void (async () => {
        for (let i = 0; i < bytes.length; i += 3) {
          writeSync(1, bytes.subarray(i, i + 3));
          await sleep(1);
        }
      })();
      return;
    }
    case "lose": // a loss of a lease no Lease was made for, before the reply
      send({ event: "lost", lease: req.args.lease, resource: "never", reason: "expired", code: 122 });
      return reply({});
    case "bye":
      reply({});
      return process.exit(0);
    default:
      return reply({});
  }
}).on("close", () => process.exit(0));
