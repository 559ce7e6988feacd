"""A client process for the tests: python3 worker.py MODE RESOURCE INTERVALS [ARG].

It takes RESOURCE (limit 1, waiting) with the governor package from the
environment's configuration, appends "S <pid>" to INTERVALS once it holds
it and "E <pid>" before it releases it, and prints one JSON line with the
lease (bridge pid, token) on stdout. MODE:
  hold SECONDS   hold the slot SECONDS, then release it
  forever        hold until killed
  until-lost     hold until the lease is lost (the body is interrupted), then write E
  try [ESTIMATE] one acquire that does not wait (INTERVALS unused), reserving ESTIMATE
                 on the budget WORKER_BUDGET (Budget's keywords as JSON) when given;
                 prints {"granted": true, "token"} or {"granted": false, "kind", "code",
                 "message", "budget"} and releases what it got
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import governor  # noqa: E402
from tests.support import append  # noqa: E402


def try_once(g: governor.Governor, resource: str, estimate: str) -> int:
    kw = {}
    if estimate != "0":
        kw = {"budgets": [governor.Budget(**json.loads(os.environ["WORKER_BUDGET"]))], "estimate": float(estimate)}
    try:
        lease = g.acquire(resource, limit=1, if_busy="fail", **kw)
    except governor.GovernorError as e:
        print(json.dumps({"granted": False, "kind": e.kind, "code": e.code, "message": str(e),
                          "budget": getattr(e, "budget", None)}), flush=True)
        return 0
    print(json.dumps({"granted": True, "token": lease.token}), flush=True)
    lease.release()
    return 0


def main() -> int:
    mode, resource, intervals = sys.argv[1:4]
    arg = sys.argv[4] if len(sys.argv) > 4 else "0"
    me = str(os.getpid())
    g = governor.Governor(project=os.environ.get("GOVERNOR_PROJECT"))
    if mode == "try":
        return try_once(g, resource, arg)
    ttl = float(os.environ.get("WORKER_TTL", "0")) or None
    try:
        with g.slot(resource, limit=1, wait=True, ttl=ttl) as lease:
            append(intervals, "S " + me)
            print(json.dumps({"bridge": g.bridge_pid, "token": lease.token, "lease_id": lease.resources[0]["lease_id"]}),
                  flush=True)
            try:
                if mode == "hold":
                    time.sleep(float(arg))
                elif mode == "forever":
                    while True:
                        time.sleep(1)
                elif mode == "until-lost":
                    while not lease.lost.is_set():
                        time.sleep(0.01)
            finally:
                append(intervals, "E " + me)
    except governor.LeaseLost:
        return 122
    return 0


if __name__ == "__main__":
    sys.exit(main())
