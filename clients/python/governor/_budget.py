"""Spend budgets: ``Budget``, ``Price``, ``Usage`` and ``usage_from_json``.
Imported on first use (see docs/budgets.md, "From Python").

Amounts are in the budget's unit (``40`` is $40 for a USD budget); the
engine keeps them as integers of millionths of the unit, and ``Price``
computes as Go's ``governor.Price`` does, in millionths rounded up, so
that a cost computed here and one computed in Go agree to the last one."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import datetime
    from typing import Any, Dict, List, Optional, Sequence, Union

_MICRO = 1_000_000


class Budget:
    """A spend budget, given inline with a slot or a provider gate:
    ``Budget("evals-day", limit=40, unit="USD", per="24h")``.

    ``per``: the window, a duration string (``"24h"``, ``"90m"``),
    seconds, or a ``datetime.timedelta``; or ``calendar="day"`` /
    ``"month"`` in ``tz`` (an IANA zone, default UTC). ``soft``: a
    threshold below the limit whose crossing is recorded. The engine
    checks every field and names a bad one (``GovernorError``, code 125)."""

    __slots__ = ("name", "limit", "unit", "per", "calendar", "tz", "soft")

    def __init__(self, name: str, *, limit: float, unit: str = "USD",
                 per: "Union[None, str, float, datetime.timedelta]" = None,
                 calendar: "Optional[str]" = None, tz: "Optional[str]" = None, soft: "Optional[float]" = None) -> None:
        self.name, self.limit, self.unit = name, limit, unit
        self.per, self.calendar, self.tz, self.soft = per, calendar, tz, soft

    def _wire(self) -> "Dict[str, Any]":
        from ._wire import amount
        w: "Dict[str, Any]" = {"name": self.name, "limit": amount(self.limit), "unit": self.unit}
        per = self.per
        if per is not None:
            w["per"] = per if isinstance(per, (str, int, float)) else float(per.total_seconds())
        for k in ("calendar", "tz"):
            v = getattr(self, k)
            if v is not None:
                w[k] = v
        if self.soft is not None:
            w["soft"] = amount(self.soft)
        return w

    def __repr__(self) -> str:
        window = "per=%r" % (self.per,) if self.per is not None else "calendar=%r, tz=%r" % (self.calendar, self.tz)
        return "Budget(%r, limit=%r, unit=%r, %s)" % (self.name, self.limit, self.unit, window)


def budgets_wire(budgets: "Sequence[Any]") -> "List[Any]":
    """budgets as the bridge takes them: a governor.Budget inline, a str
    by name (a budget of the configuration, budgets.NAME)."""
    out: "List[Any]" = []
    for b in budgets:
        if isinstance(b, str):
            out.append(b)
        elif hasattr(b, "_wire"):
            out.append(b._wire())
        else:
            raise TypeError("budgets: %r is neither a governor.Budget nor a configured budget's name (str)" % (b,))
    return out


class Usage:
    """What a provider's response says a call used. ``input_tokens``
    excludes ``cached_input_tokens``."""

    __slots__ = ("input_tokens", "cached_input_tokens", "output_tokens")

    def __init__(self, input_tokens: int = 0, cached_input_tokens: int = 0, output_tokens: int = 0) -> None:
        self.input_tokens, self.cached_input_tokens, self.output_tokens = input_tokens, cached_input_tokens, output_tokens

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Usage) and (self.input_tokens, self.cached_input_tokens, self.output_tokens) == \
            (other.input_tokens, other.cached_input_tokens, other.output_tokens)

    def __repr__(self) -> str:
        return "Usage(input_tokens=%d, cached_input_tokens=%d, output_tokens=%d)" % (
            self.input_tokens, self.cached_input_tokens, self.output_tokens)


def _int(v: "Any") -> "Optional[int]":
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def usage_from_json(body: "Any") -> "Optional[Usage]":
    """The usage of a response body (bytes, str, or the parsed dict; an
    SDK object with ``model_dump()`` or ``to_dict()`` too) in the shapes of
    Anthropic's Messages API (``usage.input_tokens``, ``output_tokens``,
    ``cache_read_input_tokens``, ``cache_creation_input_tokens``) and
    OpenAI's Chat Completions (``prompt_tokens``, ``completion_tokens``,
    ``prompt_tokens_details.cached_tokens``) and Responses
    (``input_tokens``, ``output_tokens``, ``input_tokens_details.cached_tokens``),
    as Go's ``governor.UsageFromJSON`` reads them. None when it has no
    usage it can read: then settle at the estimate, never at zero."""
    if isinstance(body, (bytes, bytearray, str)):
        import json
        try:
            body = json.loads(body)
        except ValueError:
            return None
    elif not isinstance(body, dict):
        for conv in ("model_dump", "to_dict"):
            f = getattr(body, conv, None)
            if callable(f):
                body = f()
                break
    u = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(u, dict):
        return None

    def cached(details: str) -> int:
        d = u.get(details)
        return (_int(d.get("cached_tokens")) or 0) if isinstance(d, dict) else 0
    prompt, completion = _int(u.get("prompt_tokens")), _int(u.get("completion_tokens"))
    inp, out = _int(u.get("input_tokens")), _int(u.get("output_tokens"))
    if prompt is not None and completion is not None:  # OpenAI chat: prompt includes cached
        c = cached("prompt_tokens_details")
        r = Usage(prompt - c, c, completion)
    elif inp is not None and out is not None:
        c = cached("input_tokens_details")
        if c > 0:  # OpenAI responses: input includes cached
            r = Usage(inp - c, c, out)
        else:  # Anthropic: input excludes the cache; a cache write is billed as input here
            r = Usage(inp + (_int(u.get("cache_creation_input_tokens")) or 0),
                      _int(u.get("cache_read_input_tokens")) or 0, out)
    else:
        return None
    if min(r.input_tokens, r.cached_input_tokens, r.output_tokens) < 0:
        return None
    return r


class Price:
    """A provider's or model's price, in the budget's unit per million
    tokens of each kind (``Price(input=3, output=15, cached_input=0.3)``
    for $3/$15/$0.30 per million), plus ``per_call``."""

    __slots__ = ("input", "output", "cached_input", "per_call")

    def __init__(self, input: float = 0, output: float = 0, cached_input: float = 0, per_call: float = 0) -> None:
        for k, v in (("input", input), ("output", output), ("cached_input", cached_input), ("per_call", per_call)):
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 <= v < 1e9:
                raise ValueError("price %s %r; allowed: 0 or more (units per million tokens)" % (k, v))
        self.input, self.output, self.cached_input, self.per_call = input, output, cached_input, per_call

    def cost(self, usage: Usage) -> float:
        """What usage costs at this price, in units (rounded up to a
        millionth)."""
        m = [round(v * _MICRO) for v in (self.input, self.cached_input, self.output, self.per_call)]
        tok = usage.input_tokens * m[0] + usage.cached_input_tokens * m[1] + usage.output_tokens * m[2]
        return ((tok + _MICRO - 1) // _MICRO + m[3]) / _MICRO

    def estimate(self, input_tokens: int, max_tokens: int) -> float:
        """The upper bound of a call's cost: every input token uncached,
        and the whole of max_tokens of output."""
        return self.cost(Usage(input_tokens, 0, max_tokens))

    def __repr__(self) -> str:
        return "Price(input=%r, output=%r, cached_input=%r, per_call=%r)" % (
            self.input, self.output, self.cached_input, self.per_call)
