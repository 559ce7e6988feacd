"""Lease: what one acquire holds, its loss and its release (the bridge
requests a held lease makes)."""

from __future__ import annotations

import _thread

from . import errors
from ._wire import amount

TYPE_CHECKING = False
if TYPE_CHECKING:
    import threading
    import decimal
    from typing import Any, Callable, Dict, List, Optional, Union

    Amount = Union[int, float, str, decimal.Decimal]

    from ._api import Governor
    from ._bridge import Bridge


class Lease:
    """What one acquire holds: ``token`` (the fencing token of its first
    resource), ``handle`` (RESOURCE@ID.SECRET), ``tokens``/``handles`` per
    resource, ``lost`` (a threading.Event set when it is lost),
    ``lost_reason``, ``env`` (what a child needs to nest inside it),
    ``waited`` (seconds), ``nested`` (resources an ancestor holds)."""

    def __init__(self, gov: "Governor", bridge: Bridge, result: "Dict[str, Any]") -> None:
        self._gov, self._bridge = gov, bridge
        self.id: str = result["lease"]
        self.resources: "List[Dict[str, Any]]" = result.get("resources") or []
        self.nested: "List[str]" = result.get("nested") or []
        self.env: "Dict[str, str]" = dict(result.get("env") or {})
        self.waited: float = float(result.get("waited") or 0.0)
        self.notes: "List[str]" = result.get("notes") or []
        self._record: "Optional[Dict[str, Any]]" = result.get("record")  # asked for by record=PATH
        self.tokens: "Dict[str, int]" = {r["resource"]: r["token"] for r in self.resources}
        self.budgets: "List[Dict[str, Any]]" = result.get("budgets") or []  # as the reservation left them
        self.handles: "Dict[str, str]" = {r["resource"]: r["handle"] for r in self.resources}
        self._lost = False
        self._lost_event: "Optional[threading.Event]" = None
        self.lost_reason = ""
        self.released = False
        self._on_lost: "List[Callable[[], None]]" = []
        self._mu = _thread.allocate_lock()
        bridge.register(self.id, self)

    @property
    def lost(self) -> "threading.Event":
        """A threading.Event, set once the lease is lost (made when first
        asked for: threading is not imported before)."""
        ev = self._lost_event
        if ev is None:
            import threading
            with self._mu:
                if self._lost_event is None:
                    ev = threading.Event()
                    if self._lost:
                        ev.set()
                    self._lost_event = ev
                ev = self._lost_event
        return ev

    def _set_lost(self, reason: str) -> None:
        """Marks it lost (self._mu held)."""
        self.lost_reason = reason
        self._lost = True
        if self._lost_event is not None:
            self._lost_event.set()

    @property
    def token(self) -> int:
        own = [r for r in self.resources if not r.get("nested")] or self.resources
        return own[0]["token"] if own else 0

    @property
    def handle(self) -> str:
        own = [r for r in self.resources if not r.get("nested")] or self.resources
        return own[0]["handle"] if own else ""

    def _lose(self, reason: str) -> "List[Callable[[], None]]":
        """Marks the lease lost; returns the callbacks to run (the bridge
        runs them: Bridge.run_callbacks), none when it was lost already."""
        with self._mu:
            if self._lost or self.released:
                return []
            self._set_lost(reason)
            return list(self._on_lost)

    def on_lost(self, cb: "Callable[[], None]") -> None:
        """Calls cb once the lease is lost (from the thread that read the
        loss, never while a caller reads the bridge's output)."""
        with self._mu:
            self._on_lost.append(cb)
            lost = self._lost
        if lost:
            cb()

    def check(self) -> None:
        """Raises LeaseLost once the lease is lost: call it before a
        protected write."""
        if self._lost:
            raise errors.LeaseLost("lease %s lost: %s" % (self.id, self.lost_reason))

    def touch(self) -> None:
        """Marks progress (``governor touch``) for ``progress_timeout``."""
        self._bridge.call("touch", {"lease": self.id})

    def seq_next(self, name: str, resource: "Optional[str]" = None) -> int:
        """The next number of fenced sequence ``name``, fenced by this
        lease's token: refused (Busy) once the lease was taken over."""
        args: "Dict[str, Any]" = {"lease": self.id, "name": name}
        if resource:
            args["resource"] = resource
        return int(self._bridge.call("seq_next", args)["number"])

    @staticmethod
    def _settle_args(lease: str, cost: "Optional[Amount]", costs: "Optional[Dict[str, Amount]]") -> "Dict[str, Any]":
        args: "Dict[str, Any]" = {"lease": lease}
        if cost is not None:
            args["cost"] = amount(cost)
        if costs is not None:
            args["costs"] = {k: amount(v) for k, v in costs.items()}
        return args

    def settle(self, cost: "Optional[Amount]" = None, *, costs: "Optional[Dict[str, Amount]]" = None) -> bool:
        """Tells the actual cost of the work this lease guarded, in the
        budgets' unit: ``cost`` on every budget, or ``costs`` by name; none:
        at the estimate. An amount is an int, a float or, exact, a
        decimal.Decimal or a decimal string ("0.25"); one finer than a
        millionth of the unit is refused (GovernorError, 125), never
        rounded. Once per lease: a second settle changes nothing and
        returns False. A lease released unsettled counts its estimate.
        Above the estimate, the actual is counted in full (an overrun)."""
        return bool(self._bridge.call("settle", self._settle_args(self.id, cost, costs))["settled"])

    async def asettle(self, cost: "Optional[Amount]" = None, *, costs: "Optional[Dict[str, Amount]]" = None) -> bool:
        r = await self._gov._acall(self._bridge, "settle", self._settle_args(self.id, cost, costs))
        return bool(r["settled"])

    def _start_release(self) -> bool:
        """Marks it released; True if the bridge must be told."""
        with self._mu:
            if self.released:
                return False
            self.released = True
        self._bridge.unregister(self.id)
        if self._bridge.dead is not None:
            if self._lost:
                raise errors.LeaseLost("lease %s lost: %s" % (self.id, self.lost_reason))
            return False
        return True

    def _released_lost(self) -> None:
        with self._mu:
            if not self._lost:
                self._set_lost("lost")

    def _quietly(self, wait: "Optional[bool]") -> bool:
        """Whether the release goes without waiting for its reply: wait
        False, or None for a lease granted from this process's capacity
        share (no other process sees its slots come back), where the
        bridge takes it, unless the lease is known lost (that one waits,
        and raises LeaseLost here)."""
        if wait is None:
            own = [r for r in self.resources if not r.get("nested")]
            wait = not own or any(r.get("token") for r in own)
        return not wait and self._bridge.noreply and not self._lost

    def release(self, wait: "Optional[bool]" = None) -> None:
        """Releases every resource of the lease; LeaseLost if it was lost.

        A lease granted from the process's capacity share (``capacity:
        true``; token 0), or any with ``wait=False``, is released without
        waiting for the bridge's reply: the bridge runs every later request
        of this Governor after it, so a slot it frees is free for this
        Governor's next acquire (another process's acquire may come
        first), and when it fails (a loss the bridge saw at the release and
        this process had not read yet, a backend error) the next call of
        this Governor raises its error, naming the lease, and does not run;
        ``Governor.close`` raises what no call took. Other leases, and
        ``wait=True``, wait: the slot is free for every process once this
        returns. A lease known lost waits, and raises LeaseLost here."""
        if not self._start_release():
            return
        if self._quietly(wait):
            self._bridge.send_quiet("release", {"lease": self.id})
            return
        try:
            self._bridge.call("release", {"lease": self.id})
        except errors.LeaseLost:
            self._released_lost()
            raise

    async def arelease(self, wait: "Optional[bool]" = None) -> None:
        """release() from asyncio, waiting or not as release does."""
        if not self._start_release():
            return
        if self._quietly(wait):
            self._bridge.send_quiet("release", {"lease": self.id})
            return
        try:
            await self._gov._acall(self._bridge, "release", {"lease": self.id})
        except errors.LeaseLost:
            self._released_lost()
            raise

    def _release_with(self, op: str, args: "Dict[str, Any]") -> "Dict[str, Any]":
        """Releases it with op's request (args and release: provider_report's):
        one request for both. LeaseLost if it was lost. A request refused
        (bad input releases nothing) is followed by a plain release. Released
        before: op alone. As release, a lease from the capacity share does
        not wait (then it returns {}; the bridge releases the lease whatever
        op finds, and a failure is raised by the next call)."""
        if not self._start_release():
            return self._bridge.call(op, args)
        if self._quietly(None):  # the bridge releases it whatever op finds
            self._bridge.send_quiet(op, dict(args, release=True))
            return {}
        try:
            return self._bridge.call(op, dict(args, release=True))
        except errors.LeaseLost:
            self._released_lost()
            raise
        except errors.GovernorError:
            try:
                self._bridge.call("release", {"lease": self.id})
            except errors.GovernorError:
                pass  # released by op
            raise

    async def _arelease_with(self, op: str, args: "Dict[str, Any]") -> "Dict[str, Any]":
        if not self._start_release():
            return await self._gov._acall(self._bridge, op, args)
        if self._quietly(None):
            self._bridge.send_quiet(op, dict(args, release=True))
            return {}
        try:
            return await self._gov._acall(self._bridge, op, dict(args, release=True))
        except errors.LeaseLost:
            self._released_lost()
            raise
        except errors.GovernorError:
            try:
                await self._gov._acall(self._bridge, "release", {"lease": self.id})
            except errors.GovernorError:
                pass  # released by op
            raise

    def __repr__(self) -> str:
        return "<governor.Lease %s %s token=%s%s>" % (self.id, ",".join(self.tokens), self.token,
                                                      " lost" if self._lost else "")
