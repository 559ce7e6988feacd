"""Provider gates: ``gov.provider(name).call(fn)``. Imported on first use."""

from __future__ import annotations

from ._bridge import nest_env
from ._wire import amount

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Union

    from ._api import Governor, Lease
    from ._budget import Budget, Price


class RateLimited(Exception):
    """Raise it (or an exception with ``status``/``status_code`` 429 and
    ``headers``) from a provider call: the provider cools off for every
    process."""

    def __init__(self, message: str = "rate limited", *, retry_after: "Optional[float]" = None,
                 status: int = 429, headers: "Optional[Dict[str, str]]" = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status
        self.headers = headers or {}


_MAX_TOKENS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


class Provider:
    """A provider gate: ``call(fn)`` / ``acall(fn)`` run fn under the
    provider's gate slot and rate budget, sharing cool-offs and adaptive
    limits with every other process.

    Each call reserves its upper-bound cost, all or none, on the spend
    budgets of the bridge's configuration whose scope holds it (the
    provider, the call's ``model`` keyword, ...), as ``governor run
    --provider`` does, and on ``budgets`` (governor.Budget, or a
    configured budget's name), and settles what it cost: the estimate is
    ``estimate=``, else ``price.estimate(tokens, max_tokens)``
    (max_tokens read from the call's own keywords), else the
    configuration's price for the provider and model; the cost is what
    the result's usage costs at that price, else the estimate. A call
    with no estimate and no price is charged nothing. A call that does
    not fit raises Busy (``wait=False``) with ``budget`` set, or waits.

    A result whose usage it can read also settles the call's token
    reservation (``tokens``) at the tokens used, input and output, as
    Go's ``Provider.Do`` does; otherwise it stays at the estimate."""

    def __init__(self, gov: "Governor", name: str, wait: bool = True, timeout: "Optional[float]" = None,
                 budgets: "Optional[Sequence[Union[Budget, str]]]" = None, price: "Optional[Price]" = None) -> None:
        self.gov, self.name, self.wait, self.timeout = gov, name, wait, timeout
        self.budgets, self.price = list(budgets or ()), price

    def _args(self, tokens: "Optional[int]", estimate: "Optional[float]", kw: "Dict[str, Any]") -> "Dict[str, Any]":
        a: "Dict[str, Any]" = {"provider": self.name, "if_busy": "wait" if self.wait else "fail"}
        if tokens:
            a["tokens"] = tokens
        if self.timeout:
            a["wait_timeout"] = self.timeout
        # The call's model and max_tokens go too: the configuration's
        # budgets whose scope holds the call are charged, and without a
        # price here, its prices price the call (as governor run --provider).
        model = kw.get("model")
        if isinstance(model, str) and model:
            a["model"] = model
        most = next((kw[k] for k in _MAX_TOKENS if isinstance(kw.get(k), int) and not isinstance(kw[k], bool)), None)
        if most is not None:
            a["max_tokens"] = most
        if estimate is None and self.price is not None and most is not None:
            estimate = self.price.estimate(tokens or 0, most)  # a price given here wins
        if self.budgets:
            if estimate is None and most is None:
                raise ValueError("provider %s has spend budgets: give estimate=, or the call's max_tokens (priced by "
                                 "the gate's price, else the configuration's prices)" % self.name)
            from ._budget import budgets_wire
            a["budgets"] = budgets_wire(self.budgets)
        if estimate is not None:
            a["estimate"] = amount(estimate)
        env = nest_env()  # inside a run holding the provider, the call joins its hold (as slot's acquire)
        if env:
            a["env"] = env
        return a

    def _settlement(self, out: "Any") -> "Tuple[Optional[int], Optional[Dict[str, Any]]]":
        """The tokens the call used (input and output, as Go's
        Provider.Do is told) and what settles its cost, read from its
        result's usage: ``cost`` at the gate's price, else the ``usage``
        (the bridge prices it with the configuration's prices); None:
        unknown (the token reservation then stays at its estimate, and
        the cost is settled at its estimate)."""
        from ._budget import usage_from_json
        u = usage_from_json(out)
        if u is None:
            return None, None
        if self.price is not None:
            spend: "Dict[str, Any]" = {"cost": self.price.cost(u)}
        else:
            spend = {"usage": {"input_tokens": u.input_tokens, "cached_input_tokens": u.cached_input_tokens,
                               "output_tokens": u.output_tokens}}
        return u.input_tokens + u.output_tokens, spend

    def _report_args(self, lease: "Lease", exc: "Optional[BaseException]", used_tokens: "Optional[int]" = None,
                     spend: "Optional[Dict[str, Any]]" = None) -> "Optional[Dict[str, Any]]":
        """The provider_report's args for the call's outcome; None: nothing
        to report. spend (cost or usage) goes when the lease reserved spend."""
        args: "Dict[str, Any]" = {"lease": lease.id, "outcome": "ok"}
        if used_tokens is not None:
            args["used_tokens"] = used_tokens
        if spend is not None and lease.budgets:
            args.update(spend)
        status = getattr(exc, "status", None) or getattr(exc, "status_code", None) if exc is not None else None
        if exc is not None and (isinstance(exc, RateLimited) or status in (429, 529)):
            args.update(outcome="rate_limited", status=int(status or 429))
            headers = getattr(exc, "headers", None)
            if headers:
                args["headers"] = {str(k): str(v) for k, v in dict(headers).items()}
            ra = getattr(exc, "retry_after", None)
            if ra:
                args["retry_after"] = float(ra)
        elif exc is not None:
            return None
        return args

    def _end(self, lease: "Lease", exc: "Optional[BaseException]", out: "Any" = None) -> None:
        """Reports the call's outcome and releases its lease in one request
        (provider_report with release: the cost is settled with the slot's
        release); with nothing to report, releases it."""
        args = self._report_args(lease, exc, *self._settlement(out)) if exc is None else self._report_args(lease, exc)
        if args is None:
            lease.release()
        else:
            lease._release_with("provider_report", args)

    async def _aend(self, lease: "Lease", exc: "Optional[BaseException]", out: "Any" = None) -> None:
        args = self._report_args(lease, exc, *self._settlement(out)) if exc is None else self._report_args(lease, exc)
        if args is None:
            await lease.arelease()
        else:
            await lease._arelease_with("provider_report", args)

    def call(self, fn: "Callable[..., Any]", *a: "Any", tokens: "Optional[int]" = None,
             estimate: "Optional[float]" = None, **kw: "Any") -> "Any":
        """fn(*a, **kw) under the gate. ``tokens``: the input's token
        estimate (rate budget, and the price's input); ``estimate``: the
        call's upper-bound cost, for the provider's budgets."""
        lease = self.gov._call_lease("provider_acquire", self._args(tokens, estimate, kw))
        try:
            out = fn(*a, **kw)
            self._end(lease, None, out)
        except BaseException as e:
            if not lease.released:
                self._end(lease, e)
            raise
        finally:
            lease.release()  # when _end did not get to (a no-op when it did)
        return out

    async def acall(self, fn: "Callable[..., Any]", *a: "Any", tokens: "Optional[int]" = None,
                    estimate: "Optional[float]" = None, **kw: "Any") -> "Any":
        import inspect
        lease = await self.gov._acall_lease("provider_acquire", self._args(tokens, estimate, kw))
        try:
            out = fn(*a, **kw)
            if inspect.isawaitable(out):
                out = await out
            await self._aend(lease, None, out)
        except BaseException as e:
            if not lease.released:
                await self._aend(lease, e)
            raise
        finally:
            await lease.arelease()  # when _aend did not get to (a no-op when it did)
        return out
