"""Provider gates: ``gov.provider(name).call(fn)``. Imported on first use."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Optional

    from ._api import Governor, Lease


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


class Provider:
    """A provider gate: ``call(fn)`` / ``acall(fn)`` run fn under the
    provider's gate slot and rate budget, sharing cool-offs and adaptive
    limits with every other process."""

    def __init__(self, gov: "Governor", name: str, wait: bool = True, timeout: "Optional[float]" = None) -> None:
        self.gov, self.name, self.wait, self.timeout = gov, name, wait, timeout

    def _args(self, tokens: "Optional[int]") -> "Dict[str, Any]":
        a: "Dict[str, Any]" = {"provider": self.name, "if_busy": "wait" if self.wait else "fail"}
        if tokens:
            a["tokens"] = tokens
        if self.timeout:
            a["wait_timeout"] = self.timeout
        return a

    def _report_args(self, lease: "Lease", exc: "Optional[BaseException]") -> "Optional[Dict[str, Any]]":
        """The provider_report's args for the call's outcome; None: nothing to report."""
        args: "Dict[str, Any]" = {"lease": lease.id, "outcome": "ok"}
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

    def _report(self, lease: "Lease", exc: "Optional[BaseException]") -> None:
        args = self._report_args(lease, exc)
        if args is not None:
            self.gov._bridge().call("provider_report", args)

    async def _areport(self, lease: "Lease", exc: "Optional[BaseException]") -> None:
        args = self._report_args(lease, exc)
        if args is not None:
            await self.gov._acall(self.gov._bridge(), "provider_report", args)

    def call(self, fn: "Callable[..., Any]", *a: "Any", tokens: "Optional[int]" = None, **kw: "Any") -> "Any":
        lease = self.gov._call_lease("provider_acquire", self._args(tokens))
        try:
            out = fn(*a, **kw)
        except BaseException as e:
            self._report(lease, e)
            raise
        else:
            self._report(lease, None)
            return out
        finally:
            lease.release()

    async def acall(self, fn: "Callable[..., Any]", *a: "Any", tokens: "Optional[int]" = None, **kw: "Any") -> "Any":
        import inspect
        lease = await self.gov._acall_lease("provider_acquire", self._args(tokens))
        try:
            out = fn(*a, **kw)
            if inspect.isawaitable(out):
                out = await out
        except BaseException as e:
            await self._areport(lease, e)
            raise
        else:
            await self._areport(lease, None)
            return out
        finally:
            await lease.arelease()
