#!/usr/bin/env python3
"""A live evaluation entry point (seed 000): the whole run, before any local
LLM or real provider is called, holds the machine's heavy slot.

    python3 eval_entry.py --record runs/meta.jsonl [--work-file F] [--seconds S]

- Waits for the heavy slot (``resources.heavy`` in exec-defaults.yaml; with
  ``mkdir_lock`` set it is the with-heavy-lock slot itself, so wrappers and
  this script exclude each other).
- Inside ``governor run --resource heavy`` or ``with-heavy-lock`` it nests:
  nothing is acquired again (GOVERNOR_HELD / HEAVY_LOCK_HELD).
- Appends a grant and an end line per invocation to --record, the wait
  measured on the monotonic clock, nested waits told apart ("nested").
- Child processes (the real product under evaluation) get ``lease.env``, so
  a heavy step they start nests instead of waiting for itself.
"""

import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import governor  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--record", required=True, help="the run's metadata JSONL (wait record)")
    ap.add_argument("--work-file", help="append S/E lines around the work (for tests)")
    ap.add_argument("--seconds", type=float, default=0.1, help="how long the 'evaluation' runs")
    a = ap.parse_args()
    try:
        with governor.slot("heavy", limit=1, wait=True, record=a.record) as lease:
            mark(a.work_file, "S")
            # The evaluation's own child: a product run that may take heavy again.
            env = dict(os.environ, **lease.env)
            child = subprocess.run([sys.executable, "-c",
                                    "import os; print('child sees', bool(os.environ.get('GOVERNOR_HELD')))"],
                                   env=env, capture_output=True, text=True)
            print(child.stdout.strip(), "nested" if lease.nested else "acquired", "waited %.3fs" % lease.waited)
            time.sleep(a.seconds)
            mark(a.work_file, "E")
    except governor.Busy as e:
        print("heavy slot not granted:", e, file=sys.stderr)
        return e.code
    return 0


def mark(path, kind):
    if path:
        with open(path, "a") as f:
            f.write("%s %d\n" % (kind, os.getpid()))


if __name__ == "__main__":
    sys.exit(main())
