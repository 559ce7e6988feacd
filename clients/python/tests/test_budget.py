"""Spend budgets from Python: reserved with the slot or the provider gate,
settled after; usage and price helpers read as Go's do."""

from __future__ import annotations

import json
import os
import unittest

from tests import support

import governor

# The shared fixture lives in the repository (governor/testdata); a run
# against an installed wheel (CI's release step) names it by
# GOVERNOR_USAGE_SHAPES.
SHAPES = os.environ.get("GOVERNOR_USAGE_SHAPES") or os.path.join(
    support.ROOT, "..", "..", "governor", "testdata", "usage-shapes.json")


def day(limit: float) -> "governor.Budget":
    return governor.Budget("evals-day", limit=limit, unit="USD", per="24h")


class UsageAndPriceTests(unittest.TestCase):
    """The cases Go's usage_test.go reads too (governor/testdata)."""

    def setUp(self) -> None:
        if not os.path.exists(SHAPES):
            if os.environ.get("CI"):
                self.fail("%s is not here (set GOVERNOR_USAGE_SHAPES): CI runs these cases, never skips them" % SHAPES)
            self.skipTest("the repository's governor/testdata is not here")
        with open(SHAPES) as f:
            self.shapes = json.load(f)

    def test_usage_shapes_read_as_go_reads_them(self) -> None:
        for c in self.shapes["usage"]:
            want = None if c["usage"] is None else governor.Usage(**c["usage"])
            self.assertEqual(governor.usage_from_json(c["body"]), want, c["name"])
            self.assertEqual(governor.usage_from_json(c["body"].encode()), want, c["name"])

    def test_prices_cost_as_go_costs_them(self) -> None:
        for c in self.shapes["prices"]:
            self.assertEqual(governor.Price(**c["price"]).cost(governor.Usage(**c["usage"])), c["cost"], c)

    def test_parsed_bodies_and_sdk_objects(self) -> None:
        class Message:
            def model_dump(self) -> dict:
                return {"usage": {"input_tokens": 5, "output_tokens": 6}}
        self.assertEqual(governor.usage_from_json({"usage": {"prompt_tokens": 3, "completion_tokens": 4}}),
                         governor.Usage(3, 0, 4))
        self.assertEqual(governor.usage_from_json(Message()), governor.Usage(5, 0, 6))
        self.assertIsNone(governor.usage_from_json(None))
        self.assertIsNone(governor.usage_from_json({"usage": {"input_tokens": True, "output_tokens": 1}}))

    def test_estimate_is_every_input_token_and_all_of_max_tokens(self) -> None:
        self.assertEqual(governor.Price(input=3, output=15).estimate(1000, 4096), 0.06444)
        with self.assertRaisesRegex(ValueError, "price output -1"):
            governor.Price(output=-1)


class BudgetTests(support.FileCase):

    def test_reserve_with_the_slot_settle_once(self) -> None:
        g, other = self.gov(), self.gov()
        with g.slot("b1", limit=1, budgets=[day(1)], estimate=0.3) as s:
            self.assertEqual([(b["name"], b["reserved"], b["unit"]) for b in s.budgets], [("evals-day", 0.3, "USD")])
            with self.assertRaises(governor.Busy) as cm:
                with other.slot("b2", limit=1, budgets=[day(1)], estimate=0.8):
                    self.fail("a call that does not fit ran")
            b = cm.exception.budget
            self.assertEqual((cm.exception.code, b["name"], b["spent"], b["reserved"], b["limit"], b["reason"]),
                             (73, "evals-day", 0, 0.3, 1, "exhausted"))
            self.assertTrue(b["reset"])
            self.assertIn("limit 1 USD", str(cm.exception))
            with self.assertRaises(governor.Skipped):
                with other.slot("b2", limit=1, budgets=[day(1)], estimate=0.8, if_busy="skip"):
                    pass
            self.assertTrue(s.settle(0.1))
            self.assertFalse(s.settle(0.5), "a second settle changes nothing")
        with other.slot("b2", limit=1, budgets=[day(1)], estimate=0.8):
            pass  # released unsettled: counted at its estimate
        with self.assertRaises(governor.Busy) as cm:
            g.acquire("b3", limit=1, budgets=[day(1)], estimate=0.2)
        self.assertEqual((cm.exception.budget["spent"], cm.exception.budget["reserved"]), (0.9, 0))

    def test_overrun_counts_in_full_and_async_settles(self) -> None:
        import asyncio
        g = self.gov()

        async def run() -> bool:
            async with g.aslot("o", limit=1, budgets=[day(1)], estimate=0.2) as s:
                return await s.asettle(costs={"evals-day": 0.7})
        self.assertTrue(asyncio.run(run()))
        with self.assertRaises(governor.Busy) as cm:
            g.acquire("o", limit=1, budgets=[day(1)], estimate=0.31)
        self.assertEqual(cm.exception.budget["spent"], 0.7)

    def test_bad_budget_is_refused_by_name(self) -> None:
        g = self.gov()
        with self.assertRaises(governor.GovernorError) as cm:
            g.acquire("x", limit=1, budgets=[governor.Budget("evals-day", limit=1, per="1x")], estimate=0.1)
        self.assertIn('"1x"', str(cm.exception))
        with self.assertRaises(governor.GovernorError) as cm:
            g.acquire("x", limit=1, budgets=[day(1)])
        self.assertIn("estimate", str(cm.exception))
        with self.assertRaisesRegex(TypeError, "neither a governor.Budget nor a configured budget's name"):
            g.acquire("x", limit=1, budgets=[{"name": "evals-day"}], estimate=0.1)

    def test_budget_by_its_configured_name(self) -> None:
        # The fleet's budgets live in the config file, as the CLI's do.
        config = self.path("exec-defaults.yaml")
        with open(config, "w") as f:
            f.write("budgets:\n  evals-day: {limit: 1, unit: USD, per: 24h}\n")
        os.chmod(config, 0o600)
        g = self.gov(config=config)
        with g.slot("n1", limit=1, budgets=["evals-day"], estimate=0.3) as s:
            self.assertEqual([(b["name"], b["reserved"], b["limit"], b["unit"]) for b in s.budgets],
                             [("evals-day", 0.3, 1, "USD")])
            with self.assertRaises(governor.Busy) as cm:
                g.acquire("n2", limit=1, budgets=["evals-day"], estimate=0.8)
            self.assertEqual((cm.exception.budget["name"], cm.exception.budget["reserved"]), ("evals-day", 0.3))
            s.settle(0.25)
        with self.assertRaises(governor.GovernorError) as cm:
            g.acquire("n2", limit=1, budgets=["nope"], estimate=0.1)
        self.assertEqual(cm.exception.code, 125)
        self.assertIn('"nope"', str(cm.exception))
        self.assertIn("evals-day", str(cm.exception))
        # The refusal held nothing; names and Budget objects mix.
        inline = governor.Budget("inline-day", limit=1, unit="USD", per="24h")
        with g.slot("n2", limit=1, if_busy="fail", budgets=["evals-day", inline], estimate=0.75) as s:
            self.assertEqual([b["spent"] for b in s.budgets], [0.25, 0])

    def test_a_disagreeing_definition_is_refused_naming_both(self) -> None:
        # A budget's unit and window live with its state (docs/budgets.md,
        # "The definition is the state's"): an inline budget or a config
        # that says another is refused, naming both, reserving nothing.
        g = self.gov()
        g.acquire("d1", limit=1, budgets=[day(1)], estimate=0.5).release()
        config = self.path("exec-defaults.yaml")
        with open(config, "w") as f:
            f.write("budgets:\n  evals-day: {limit: 1000, unit: USD, per: 1s}\n")
        os.chmod(config, 0o600)
        for other, budget in ((g, governor.Budget("evals-day", limit=1, unit="USD", per="1s")),
                              (g, governor.Budget("evals-day", limit=1, unit="tokens", per="24h")),
                              (self.gov(config=config), "evals-day")):
            with self.assertRaises(governor.GovernorError) as cm:
                other.acquire("d2", limit=1, budgets=[budget], estimate=0.9)
            self.assertEqual(cm.exception.code, 125, budget)
            self.assertIn('"USD per 24h0m0s"', str(cm.exception))
            self.assertRegex(str(cm.exception), '"(USD per 1s|tokens per 24h0m0s)"')
        with self.assertRaises(governor.Busy) as cm:  # spent 0.5 of 1: nothing else was reserved
            g.acquire("d3", limit=1, budgets=[day(1)], estimate=0.6)
        self.assertEqual((cm.exception.budget["spent"], cm.exception.budget["reserved"]), (0.5, 0))


class AmountTests(support.FileCase):
    """Amounts cross the bridge exactly (docs/bridge-protocol.md): a
    Decimal or a str as a decimal string, a float as the millionth it
    stands for; one finer than a millionth is refused by name, never
    rounded (an estimate of 1e-07 reserved 0 before)."""

    def test_amounts_cross_exactly(self) -> None:
        from decimal import Decimal
        g = self.gov()
        big = governor.Budget("exact", limit=Decimal("1000000000"), unit="USD", per="24h")
        for est in (Decimal("999999999.999999"), "0.000001", 0.1 + 0.2, 2e3):
            with g.slot("x1", limit=1, budgets=[big], estimate=est) as s:
                self.assertEqual(Decimal(repr(s.budgets[0]["reserved"])), Decimal(str(est)).quantize(Decimal("0.000001")),
                                 est)
                s.settle(0)
        for cost in (0.1, Decimal("0.2")):
            with g.slot("x2", limit=1, budgets=[day(1)], estimate="0.5") as s:
                s.settle(cost)
        with self.assertRaises(governor.Busy) as cm:
            g.acquire("x3", limit=1, budgets=[day(1)], estimate=1)
        self.assertEqual(repr(cm.exception.budget["spent"]), "0.3")  # the millionths kept, not 0.30000000000000004

    def test_an_amount_finer_than_a_millionth_is_refused_by_name(self) -> None:
        from decimal import Decimal
        g = self.gov()
        for bad, named in ((1e-7, "estimate 1e-07"), (0.1234567, "estimate 0.1234567"),
                           (Decimal("0.1234567"), 'estimate "0.1234567"'), ("2e3", 'estimate "2e3"')):
            with self.assertRaises(governor.GovernorError) as cm:
                g.acquire("x", limit=1, budgets=[day(1)], estimate=bad)
            self.assertEqual(cm.exception.code, 125, bad)
            self.assertIn(named, str(cm.exception))
        with self.assertRaisesRegex(TypeError, "amount True"):
            g.acquire("x", limit=1, budgets=[day(1)], estimate=True)
        with g.slot("x", limit=1, if_busy="fail", budgets=[day(1)], estimate=0.5) as s:  # nothing was held
            with self.assertRaises(governor.GovernorError) as cm:
                s.settle(costs={"evals-day": Decimal("0.0000004")})
            self.assertIn('budget evals-day cost "0.0000004"', str(cm.exception))
            self.assertTrue(s.settle(0.4))


class ProviderBudgetTests(support.FileCase):

    def setUp(self) -> None:
        super().setUp()
        self.config = self.path("exec-defaults.yaml")
        with open(self.config, "w") as f:
            f.write("providers:\n  anthropic: {max_concurrency: 2}\n")
        os.chmod(self.config, 0o600)

    def test_gate_settles_by_itself_from_the_usage(self) -> None:
        g = self.gov(config=self.config)
        price = governor.Price(input=3, output=15)
        p = g.provider("anthropic", budgets=[day(0.1)], price=price, wait=False)

        def create(**kw: object) -> bytes:
            return b'{"usage":{"input_tokens":1000,"output_tokens":2000}}'  # 0.003 + 0.03
        self.assertTrue(p.call(create, tokens=1000, max_tokens=4096).startswith(b"{"))  # estimate 0.06444 fits
        # Spent 0.033: a second call's estimate (0.06444) fits, a third not.
        p.call(lambda **kw: {"no": "usage"}, tokens=1000, max_tokens=4096)  # unreadable: counted at the estimate
        with self.assertRaises(governor.Busy) as cm:
            p.call(create, tokens=1000, max_tokens=4096)
        self.assertAlmostEqual(cm.exception.budget["spent"], 0.033 + 0.06444)
        with self.assertRaisesRegex(ValueError, "estimate"):
            p.call(create)

    def test_gate_reports_and_releases_in_one_request(self) -> None:
        # The report carries the release (the settle goes with the slot's
        # release); a 429 still starts the cool-off.
        g = self.gov(config=self.config)
        p = g.provider("anthropic", budgets=[day(1)], wait=False)
        b = g._bridge()
        ops: "list[str]" = []
        call = b.call
        b.call = lambda op, args, *a, **kw: ops.append(op) or call(op, args, *a, **kw)  # type: ignore[method-assign]
        for _ in range(3):  # two slots: each call freed its own
            self.assertEqual(p.call(lambda: {"usage": {"input_tokens": 1, "output_tokens": 1}}, estimate=0.2), {
                "usage": {"input_tokens": 1, "output_tokens": 1}})
        self.assertEqual(ops, ["provider_acquire", "provider_report"] * 3)
        with self.assertRaises(governor.RateLimited):
            p.call(lambda: (_ for _ in ()).throw(governor.RateLimited(retry_after=30)), estimate=0.2)
        with self.assertRaises(governor.Busy):
            p.call(lambda: "cooling off", estimate=0.2)
        self.assertEqual(ops[6:8], ["provider_acquire", "provider_report"])
        self.assertNotIn("release", ops)

    def test_explicit_estimate(self) -> None:
        g = self.gov(config=self.config)
        p = g.provider("anthropic", budgets=[day(1)], wait=False)
        self.assertEqual(p.call(lambda: "done", estimate=0.9), "done")
        with self.assertRaises(governor.Busy):
            p.call(lambda: "done", estimate=0.2)


class ScopedBudgetTests(support.FileCase):
    """A budget of the configuration whose scope holds a gate's call is
    charged though the gate names none, as governor run --provider
    charges it, and the configuration's prices price the call."""

    def setUp(self) -> None:
        super().setUp()
        self.config = self.path("exec-defaults.yaml")
        with open(self.config, "w") as f:
            f.write("providers:\n  anthropic: {max_concurrency: 2}\n  openai: {max_concurrency: 2}\n"
                    "budgets:\n  anthropic-day: {limit: 0.1, unit: USD, per: 24h, providers: [anthropic]}\n"
                    "prices:\n  anthropic: {input: 3, output: 15}\n")
        os.chmod(self.config, 0o600)

    def test_a_gate_naming_no_budget_is_charged_at_the_configured_price(self) -> None:
        g = self.gov(config=self.config)
        p = g.provider("anthropic", wait=False)  # no budgets, no price: the configuration's

        def create(**kw: object) -> bytes:
            return b'{"usage":{"input_tokens":1000,"output_tokens":2000}}'  # 0.003 + 0.03
        # The estimate (1000 input, 4096 output: 0.06444) fits; settled at 0.033.
        p.call(create, model="claude-sonnet-4-5", tokens=1000, max_tokens=4096)
        p.call(lambda **kw: {"no": "usage"}, tokens=1000, max_tokens=4096)  # unreadable: counted at the estimate
        with self.assertRaises(governor.Busy) as cm:
            p.call(create, tokens=1000, max_tokens=4096)
        self.assertEqual(cm.exception.budget["name"], "anthropic-day")
        self.assertAlmostEqual(cm.exception.budget["spent"], 0.033 + 0.06444)
        # No estimate and no max_tokens: not charged (run --provider without --cost).
        self.assertEqual(p.call(lambda: "free"), "free")
        # Another provider is out of the budget's scope.
        self.assertEqual(g.provider("openai", wait=False).call(create, max_tokens=4096, estimate=0.5)[:1], b"{")

    def test_a_price_in_code_wins(self) -> None:
        g = self.gov(config=self.config)
        p = g.provider("anthropic", price=governor.Price(input=30, output=150), wait=False)
        body = {"usage": {"input_tokens": 100, "output_tokens": 100}}  # 0.018 here, 0.0018 at the configured price
        self.assertEqual(p.call(lambda **kw: body, tokens=100, max_tokens=100), body)
        # An acquire of the provider with an estimate is charged as well (run --provider --cost).
        with self.assertRaises(governor.Busy) as cm:
            g.acquire("probe", limit=1, providers=["anthropic"], estimate=1, if_busy="fail")
        self.assertEqual(cm.exception.budget["name"], "anthropic-day")
        self.assertAlmostEqual(cm.exception.budget["spent"], 0.018)


class RedisAmountTests(support.RedisCaseMixin, AmountTests):
    pass


class RedisBudgetTests(support.RedisCaseMixin, BudgetTests):
    pass


class RedisProviderBudgetTests(support.RedisCaseMixin, ProviderBudgetTests):
    pass


class RedisScopedBudgetTests(support.RedisCaseMixin, ScopedBudgetTests):
    pass
