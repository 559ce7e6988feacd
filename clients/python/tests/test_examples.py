"""The seeds' scenarios, run from clients/python/examples."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests import support
from tests.support import assert_no_overlap

EXAMPLES = os.path.join(support.ROOT, "examples")


class ExampleTests(support.FileCase):

    def run_example(self, name: str, *args: str, **kw: object) -> subprocess.Popen:
        p = subprocess.Popen([sys.executable, os.path.join(EXAMPLES, name)] + list(args), env=self.backend.env(),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(p)
        return p

    def test_eval_entry_takes_the_heavy_slot_with_a_wait_record(self) -> None:
        rec, work = self.path("meta.jsonl"), self.path("work")
        ps = [self.run_example("eval_entry.py", "--record", rec, "--work-file", work, "--seconds", "0.1")
              for _ in range(3)]
        for p in ps:
            out, err = p.communicate(timeout=support.DEADLINE)
            self.assertEqual(p.returncode, 0, err)
            self.assertIn("child sees True acquired", out)
        assert_no_overlap(self, work)
        with open(rec) as f:
            recs = [json.loads(l) for l in f]
        self.assertEqual(sorted(r["kind"] for r in recs), ["end"] * 3 + ["grant"] * 3)
        self.assertEqual(len({r["id"] for r in recs}), 3)
        self.assertTrue(all(r["wait_seconds"] >= 0 and not r["nested"] for r in recs))

    def test_eval_entry_nests_inside_governor_run(self) -> None:
        rec = self.path("meta.jsonl")
        out = subprocess.run([support.binary(), "run", "--resource", "heavy", "--limit", "1", "--", sys.executable,
                              os.path.join(EXAMPLES, "eval_entry.py"), "--record", rec, "--seconds", "0"],
                             env=self.backend.env(), capture_output=True, text=True, timeout=support.DEADLINE)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("nested", out.stdout)
        with open(rec) as f:
            recs = [json.loads(l) for l in f]
        self.assertTrue(all(r["nested"] and r["wait_seconds"] == 0 for r in recs), recs)
        self.assertTrue(all(r.get("outer_run") for r in recs), recs)

    def test_conductor_lock_order_takeover_and_fenced_version(self) -> None:
        common = ["--issue", "2316", "--plan", "l20261031", "--file", "CHANGELOG.md"]
        a = self.run_example("conductor.py", "--session", "A", "--wait-line", *common)
        self.assertEqual(a.stdout.readline().split()[:1], ["holding"])
        v1 = int(a.stdout.readline().split()[1])
        busy = self.run_example("conductor.py", "--session", "C", *common)
        _, err = busy.communicate(timeout=support.DEADLINE)
        self.assertEqual(busy.returncode, 73, err)
        self.assertIn("held by session A", err)
        self.assertIn("--takeover A", err)
        b = self.run_example("conductor.py", "--session", "B", "--takeover", "A", "--force", *common)
        out, err = b.communicate(timeout=support.DEADLINE)
        self.assertEqual(b.returncode, 0, err)
        v2 = int(out.splitlines()[1].split()[1])
        self.assertGreater(v2, v1)
        out, err = a.communicate("go\n", timeout=support.DEADLINE)
        self.assertIn("fenced", out, err)
        self.assertIn(a.returncode, (73, 122))

    def matrix(self, budget: str, report: str) -> subprocess.Popen:
        return self.run_example("eval_matrix.py", "--budget", budget, "--report", self.path(report))

    def test_eval_matrix_stops_cleanly_when_the_days_budget_is_spent(self) -> None:
        p = self.matrix("0.05", "a.json")
        out, err = p.communicate(timeout=support.DEADLINE)
        self.assertEqual(p.returncode, 75, err)
        with open(self.path("a.json")) as f:
            r = json.load(f)
        self.assertTrue(r["ran"] and r["skipped"], r)
        self.assertEqual(len(r["ran"]) + len(r["skipped"]), 12)
        self.assertLessEqual(r["spent"], 0.05)
        self.assertEqual(r["stopped_by"]["name"], "evals-day")
        self.assertIn("stopping", err)
        # It stops: after the first skipped cell, nothing ran.
        kinds = [l.split()[0] for l in out.splitlines()[:-1]]
        self.assertEqual(kinds, sorted(kinds), out)  # every "ran" before every "skipped"
        self.assertIn("ran %d skipped %d" % (len(r["ran"]), len(r["skipped"])), out)
        # The day's budget is spent for every later run: nothing more fits.
        p = self.matrix("0.05", "b.json")
        p.communicate(timeout=support.DEADLINE)
        with open(self.path("b.json")) as f:
            r2 = json.load(f)
        self.assertLessEqual(r["spent"] + r2["spent"], 0.05)

    def test_eval_matrices_started_together_share_the_budget(self) -> None:
        ps = [self.matrix("0.06", "m%d.json" % i) for i in range(3)]
        for p in ps:
            _, err = p.communicate(timeout=support.DEADLINE)
            self.assertIn(p.returncode, (0, 75), err)
        spent = 0.0
        for i in range(3):
            with open(self.path("m%d.json" % i)) as f:
                spent += json.load(f)["spent"]
        self.assertGreater(spent, 0)
        self.assertLessEqual(spent, 0.06 + 1e-9)

    def test_eval_matrix_within_budget_runs_everything(self) -> None:
        p = self.matrix("5", "all.json")
        out, err = p.communicate(timeout=support.DEADLINE)
        self.assertEqual(p.returncode, 0, err)
        self.assertIn("ran 12 skipped 0", out)


class RedisExampleTests(support.RedisCaseMixin, ExampleTests):
    pass
