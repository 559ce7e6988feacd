#!/usr/bin/env python3
"""An evaluation matrix under a day's spend budget (issue 33): every cell
(model x task) reserves its upper-bound cost before it calls the model and
settles what the response's usage says it cost; once the day's budget
cannot hold the next cell, the matrix stops cleanly.

    python3 eval_matrix.py --budget 0.10 [--tasks 6] [--models small,large] [--report FILE]

- The budget ``evals-day`` (``--budget`` USD per calendar day, UTC) is
  shared by every process and machine on the same governor store: two
  matrices started at once never spend more than it together, because each
  cell's estimate is reserved atomically before the call (not "spent so
  far" checked first).
- A cell is estimated as ``Price.estimate(input tokens, max_tokens)``, its
  cost read from the response with ``governor.usage_from_json``.
- Output: one line per cell, ``ran MODEL TASK cost C`` or ``skipped MODEL
  TASK``, then ``ran N skipped M spent S of L USD``; ``--report`` writes
  the same as JSON.
- Exit status: 0 when every cell ran; 75 (governor's "skipped") when the
  budget stopped the matrix (what ran is reported and settled); 73 when
  the slot was busy; 125 on a configuration or backend error.

The model call is a stand-in (``call_model``) returning an Anthropic-shaped
body; replace it with a real client call and pass its response on.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import governor  # noqa: E402

PRICES = {"small": governor.Price(input=0.8, output=4, cached_input=0.08),
          "large": governor.Price(input=3, output=15, cached_input=0.3)}
MAX_TOKENS = 1024
SKIPPED = 75


def call_model(model, prompt_tokens, max_tokens):
    """A stand-in for the provider call: the body it returns, as bytes."""
    out = max_tokens // 2 + prompt_tokens % 97
    return json.dumps({"model": model, "content": [{"type": "text", "text": "..."}],
                       "usage": {"input_tokens": prompt_tokens, "output_tokens": out}}).encode()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, required=True, help="USD per calendar day (UTC) for the whole fleet")
    ap.add_argument("--tasks", type=int, default=6)
    ap.add_argument("--models", default="small,large")
    ap.add_argument("--report", help="write what ran and what was skipped as JSON")
    a = ap.parse_args()
    day = governor.Budget("evals-day", limit=a.budget, unit="USD", calendar="day", tz="UTC")
    cells = [(m, t) for m in a.models.split(",") for t in range(a.tasks)]
    ran, skipped, stop = [], [], None
    for model, task in cells:
        if stop is not None:
            skipped.append({"model": model, "task": task})
            print("skipped", model, task, flush=True)
            continue
        price, prompt = PRICES[model], 1000 + 100 * task
        try:
            with governor.slot("evals", limit=4, budgets=[day], estimate=price.estimate(prompt, MAX_TOKENS)) as cell:
                body = call_model(model, prompt, MAX_TOKENS)
                usage = governor.usage_from_json(body)
                cost = price.cost(usage) if usage else None
                cell.settle(cost)  # None: at the estimate
        except governor.Busy as e:
            if e.budget is None:
                print("the evals slot is busy:", e, file=sys.stderr)
                return e.code
            stop = e.budget
            print("budget %s: spent %s, reserved %s of %s %s; resets at %s: stopping" % (
                stop["name"], stop["spent"], stop["reserved"], stop["limit"], stop.get("unit", ""), stop["reset"]),
                file=sys.stderr)
            skipped.append({"model": model, "task": task})
            print("skipped", model, task, flush=True)
            continue
        except governor.GovernorError as e:
            print("governor:", e, file=sys.stderr)
            return e.code
        ran.append({"model": model, "task": task, "cost": cost})
        print("ran", model, task, "cost", cost, flush=True)
    spent = round(sum(r["cost"] or 0 for r in ran), 6)
    print("ran %d skipped %d spent %s of %s USD" % (len(ran), len(skipped), spent, a.budget), flush=True)
    if a.report:
        with open(a.report, "w") as f:
            json.dump({"ran": ran, "skipped": skipped, "spent": spent, "limit": a.budget, "stopped_by": stop}, f)
    return SKIPPED if skipped else 0


if __name__ == "__main__":
    sys.exit(main())
