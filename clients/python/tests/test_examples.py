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


class RedisExampleTests(support.RedisCaseMixin, ExampleTests):
    pass
