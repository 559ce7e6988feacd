#!/usr/bin/env python3
"""A conductor session (seed 003): leases per issue, plan and file, taken in
one fixed lock order, a fenced version number, and the relay's takeover.

    python3 conductor.py --session A --issue 2316 --plan l20261031 --file CHANGELOG.md
    python3 conductor.py --session B --takeover A --force ...   # pick up A's work

- One acquire takes issue:N, plan:NAME and file:PATH together: governor takes
  them in the lock order (lock_order in exec-defaults.yaml, then by name), so
  two conductors never wait for each other in a cycle.
- Refused: prints who holds it (session, pid, host, last heartbeat) and how
  to take it over, and exits 73.
- The version number comes from a fenced sequence: a conductor whose leases
  were taken over is refused its next number (exit 73), so two sessions never
  publish the same version.
- --takeover SESSION takes over every lease of SESSION (dead owner, expired,
  or with --force any), recorded in 'governor events'.
- With --wait-line, it waits for a line on stdin before asking for a second
  version number (the tests use it to take it over in between).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import governor  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--session", required=True)
    ap.add_argument("--issue", required=True)
    ap.add_argument("--plan", required=True)
    ap.add_argument("--file", required=True)
    ap.add_argument("--takeover", help="the session whose leases to take over")
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--wait-line", action="store_true")
    a = ap.parse_args()
    g = governor.Governor(session=a.session)
    resources = ["issue:" + a.issue, "plan:" + a.plan, "file:" + a.file.replace("/", "_")]
    try:
        if a.takeover:
            lease = g.takeover(session=a.takeover, force=a.force)
        else:
            lease = g.acquire(*resources, limit=1)
    except governor.Busy as e:
        print("refused: %s" % e.message, file=sys.stderr)
        for h in e.holders:
            print("  held by session %s (pid %s on %s), last heartbeat %s; take over with: "
                  "conductor.py --session NEW --takeover %s [--force]"
                  % (h["session"], h["pid"], h["host"], h["heartbeat_at"], h["session"]), file=sys.stderr)
        return e.code
    try:
        print("holding %s token %d" % (" ".join(sorted(lease.tokens)), lease.token), flush=True)
        version = lease.seq_next("version", resource="plan:" + a.plan)
        print("version %d" % version, flush=True)
        lease.touch()  # a milestone
        if a.wait_line:
            sys.stdin.readline()
            try:
                version = lease.seq_next("version", resource="plan:" + a.plan)
                print("version %d" % version, flush=True)
            except (governor.Busy, governor.LeaseLost) as e:
                print("fenced: %s" % e.message, flush=True)
                return e.code
    finally:
        try:
            lease.release()
        except governor.LeaseLost:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
