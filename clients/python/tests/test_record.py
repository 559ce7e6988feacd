"""slot(..., record=PATH) on every error path: the destination is checked
before the slot is asked for (as governor run --record does), an acquire's
own error is never hidden by the record's, and no path leaves a slot held."""

from __future__ import annotations

import asyncio
import json
import os
import unittest
from unittest import mock

from tests import support

import governor
from governor import _record


class RecordErrorTests(support.FileCase):

    def held(self, g: governor.Governor, resource: str) -> int:
        return sum(len(r.holders) for r in g.slots(resource))

    def test_missing_folder_is_refused_before_acquiring(self) -> None:
        g = self.gov()
        rec = self.path("runs/meta.jsonl")
        with self.assertRaises(governor.GovernorError) as cm:
            with g.slot("rm", limit=1, record=rec):
                self.fail("the body ran")
        self.assertEqual((type(cm.exception), cm.exception.code), (governor.GovernorError, 125))
        self.assertIn(rec, str(cm.exception))
        self.assertIn("does not exist", str(cm.exception))
        self.assertEqual(self.held(g, "rm"), 0, "the refused slot is held")
        with g.slot("rm", limit=1) as lease:  # a second slot in the same process
            self.assertGreater(lease.token, 0)
        self.assertFalse(os.path.exists(self.path("runs")))

    def test_missing_folder_is_refused_in_aslot(self) -> None:
        g = self.gov()

        async def main() -> None:
            with self.assertRaises(governor.GovernorError):
                async with g.aslot("ra", limit=1, record=self.path("runs/meta.jsonl")):
                    self.fail("the body ran")
        asyncio.run(main())
        self.assertEqual(self.held(g, "ra"), 0, "the refused slot is held")

    def test_not_a_regular_file_is_refused_before_acquiring(self) -> None:
        g = self.gov()
        for bad, what in ((self.tmp, "a directory"), ("/dev/null", "a device")):
            with self.assertRaises(governor.GovernorError) as cm:
                with g.slot("rf", limit=1, record=bad):
                    self.fail("the body ran")
            self.assertIn(what, str(cm.exception))
        os.symlink(self.path("elsewhere"), self.path("link"))
        with self.assertRaises(governor.GovernorError) as cm:
            with g.slot("rf", limit=1, record=self.path("link")):
                self.fail("the body ran")
        self.assertIn("symbolic link", str(cm.exception))
        self.assertEqual(self.held(g, "rf"), 0)

    def test_a_file_others_can_write_is_refused(self) -> None:
        rec = self.path("shared.jsonl")
        with open(rec, "w"):
            pass
        os.chmod(rec, 0o666)
        with self.assertRaises(governor.GovernorError) as cm:
            with self.gov().slot("rw", limit=1, record=rec):
                self.fail("the body ran")
        self.assertIn("writable by group or others", str(cm.exception))

    def test_a_failing_acquire_keeps_its_own_error(self) -> None:
        g, other = self.gov(), self.gov()
        rec = self.path("busy.jsonl")
        with other.slot("rb", limit=1):
            with self.assertRaises(governor.Busy):
                with g.slot("rb", limit=1, record=rec):
                    self.fail("the body ran")
        with open(rec) as f:
            lines = [json.loads(l) for l in f]
        self.assertEqual([(l["kind"], l["outcome"], l["exit_code"]) for l in lines], [("end", "busy", 73)])

    def test_an_end_line_that_fails_does_not_hide_the_acquires_error(self) -> None:
        g, other = self.gov(), self.gov()
        with other.slot("re", limit=1):
            with mock.patch.object(_record.Record, "_write", side_effect=OSError(28, "No space left on device")):
                with self.assertRaises(governor.Busy):
                    with g.slot("re", limit=1, record=self.path("e.jsonl")):
                        self.fail("the body ran")

    def test_a_grant_line_that_fails_releases_the_slot(self) -> None:
        g = self.gov()
        with mock.patch.object(_record.Record, "_write", side_effect=OSError(28, "No space left on device")):
            with self.assertRaises(OSError):
                with g.slot("rg", limit=1, record=self.path("g.jsonl")):
                    self.fail("the body ran")
        self.assertEqual(self.held(g, "rg"), 0, "the slot whose grant line failed is held")

    def test_a_grant_line_that_fails_releases_the_slot_in_aslot(self) -> None:
        g = self.gov()

        async def main() -> None:
            with mock.patch.object(_record.Record, "_write", side_effect=OSError(28, "No space left on device")):
                with self.assertRaises(OSError):
                    async with g.aslot("rh", limit=1, record=self.path("h.jsonl")):
                        self.fail("the body ran")
        asyncio.run(main())
        self.assertEqual(self.held(g, "rh"), 0, "the slot whose grant line failed is held")


if __name__ == "__main__":
    unittest.main()


class RecordCommandTests(support.FileCase):
    """The record's command line is the process's, shown as governor run
    --record shows it: every case of the fixture the Go redaction test and
    the TypeScript client read (governor/testdata/redaction.json)."""

    def test_command_is_redacted_as_the_cli_does(self) -> None:
        # In the repository; a run against an installed wheel (CI) names it
        # by GOVERNOR_REDACTION_CASES.
        fixture = os.environ.get("GOVERNOR_REDACTION_CASES") or os.path.join(
            support.ROOT, "..", "..", "governor", "testdata", "redaction.json")
        if not os.path.exists(fixture):
            if os.environ.get("CI"):
                self.fail("%s is not here (set GOVERNOR_REDACTION_CASES): CI runs these cases, never skips them" % fixture)
            self.skipTest("the repository's governor/testdata is not here")
        with open(fixture) as f:
            cases = json.load(f)["cases"]
        self.assertTrue(cases)
        g = self.gov()
        rec = self.path("meta.jsonl")
        for case in cases:
            with mock.patch("sys.argv", case["args"]):
                with g.slot("rc", limit=1, record=rec):
                    pass
        with open(rec) as f:
            lines = [json.loads(line) for line in f]
        self.assertEqual(len(lines), 2 * len(cases))
        for case, grant, end in zip(cases, lines[0::2], lines[1::2]):
            self.assertEqual((grant["kind"], end["kind"]), ("grant", "end"))
            self.assertEqual(grant["command"], case["shown"], case["args"])
            self.assertEqual(end["command"], case["shown"], case["args"])
