"""The bridge's lines in JSON, without the json package on the way in.

``import json`` costs a cold script ~4 ms (it compiles regular expressions
through ``re``); the bridge's lines need only what json's C accelerator,
``_json``, already does: its scanner decodes a line, its string escaper
quotes a string. Requests are small dicts of strings, numbers, booleans,
lists and dicts, encoded here. Without ``_json`` (another Python), the json
package does both."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

try:
    from _json import encode_basestring_ascii as _quote, make_scanner as _make_scanner
except ImportError:  # pragma: no cover - CPython has it
    _quote = None


class _Context:
    """What _json's scanner reads from a JSONDecoder: the defaults."""
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # NaN, Infinity, -Infinity
    memo: "dict[str, str]" = {}


def _encode(v: "Any") -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    t = type(v)
    if t is str:
        return _quote(v)
    if t is int:
        return int.__repr__(v)
    if t is dict:
        return "{" + ",".join(_key(k) + ":" + _encode(x) for k, x in v.items()) + "}"
    if t is list or t is tuple:
        return "[" + ",".join(_encode(x) for x in v) + "]"
    if t is float:
        if v != v or v in (_INF, -_INF):
            raise ValueError("%r is not a JSON number; allowed: a finite number" % v)
        return float.__repr__(v)
    # Subclasses (an IntEnum, an OrderedDict, a str subclass) as their base.
    for base in (str, int, float, dict, list, tuple):
        if isinstance(v, base):
            return _encode(base(v) if base is not dict else dict(v))
    raise TypeError("%r (%s) is not JSON; allowed: str, int, float, bool, None, list, tuple, dict"
                    % (v, type(v).__name__))


def _key(k: "Any") -> str:
    if type(k) is str:
        return _quote(k)
    if isinstance(k, str):
        return _quote(str(k))
    raise TypeError("dict key %r (%s) is not a string" % (k, type(k).__name__))


_INF = float("inf")


def amount(v: "Any") -> "Any":
    """An amount (an estimate, a cost, a budget's limit) as the bridge
    takes it (docs/bridge-protocol.md): an int or a float as it is (the
    bridge refuses one finer than a millionth of the unit, naming it); a
    decimal.Decimal or a str as a decimal string, read exactly (never the
    float nearest it)."""
    t = type(v)
    if t is int or t is float or t is str:
        return v
    decimal = sys.modules.get("decimal")  # a Decimal exists only once decimal is imported
    if decimal is not None and isinstance(v, decimal.Decimal):
        return format(v, "f")  # no exponent: Decimal("2E+3") is "2000"
    if isinstance(v, str):
        return str(v)
    if isinstance(v, bool) or not hasattr(v, "__float__"):
        raise TypeError("amount %r (%s); allowed: an int, a float, a decimal.Decimal or a decimal string such as \"0.25\""
                        % (v, type(v).__name__))
    return float(v)  # another number (a Fraction, numpy's), as before


def _unencodable(v: "Any") -> "Any":
    raise TypeError("%r (%s) is not JSON; allowed: str, int, float, bool, None, list, tuple, dict"
                    % (v, type(v).__name__))


def _c_encoder() -> "Any":
    """json's own C encoder (as json.dumps(v, separators=(",", ":"),
    allow_nan=False) makes it), or None where its constructor differs."""
    try:
        from _json import make_encoder
        enc = make_encoder(None, _unencodable, _quote, None, ":", ",", False, False, False)
        if "".join(enc({"a": [1, 2.5, "\u00e9", None, True]}, 0)) == '{"a":[1,2.5,"\\u00e9",null,true]}':
            return enc
    except Exception:
        pass
    return None


if _quote is not None:
    _scan = _make_scanner(_Context())
    _cenc = _c_encoder()
    if _cenc is not None:
        def _encode(v: "Any") -> str:  # noqa: F811 - the C encoder where it can be had
            return "".join(_cenc(v, 0))

    def decode(line: str) -> "Any":
        """One JSON value (ValueError if the line is not one)."""
        try:
            v, end = _scan(line, 0)
        except StopIteration:
            raise ValueError("not JSON: %r" % line[:200]) from None
        if end != len(line) and line[end:].strip():
            raise ValueError("not JSON: %r" % line[:200])
        return v

    def encode(v: "Any") -> str:
        """v as compact JSON, non-ASCII escaped (as json.dumps)."""
        return _encode(v)

    def request(rid: int, op: str, args: "Any", noreply: bool = False) -> bytes:
        """A request's line (noreply: a release not waited for)."""
        return ('{"id":%d,"op":%s,"args":%s%s}\n' % (rid, _quote(op), _encode(args),
                                                     ',"noreply":true' if noreply else "")).encode()
else:  # pragma: no cover
    import json as _json_mod

    decode = _json_mod.JSONDecoder().decode

    def encode(v: "Any") -> str:
        return _json_mod.dumps(v, separators=(",", ":"), allow_nan=False)

    def request(rid: int, op: str, args: "Any", noreply: bool = False) -> bytes:
        r = {"id": rid, "op": op, "args": args}
        if noreply:
            r["noreply"] = True
        return (encode(r) + "\n").encode()
