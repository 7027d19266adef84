"""Connection limits for the HTTP server, enforced as connections open: a request head
must arrive within a deadline (idle and slow-header connections are closed), and each
client address, and the server as a whole, hold a bounded number of connections.

When a limit is reached the oldest idle connection (no request running) makes room;
only when every connection is busy is the new one refused, with a 503. So connections
that never send a request cannot keep `/health` or anyone else out.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Asgi = Callable[[Scope, Receive, Send], Awaitable[None]]

_REFUSED_BODY = (
    b'{"error":{"message":"too many connections from this address","type":"server_error",'
    b'"param":null,"code":"server_busy"}}'
)
_REFUSAL = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"Content-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\n"
    + f"Content-Length: {len(_REFUSED_BODY)}\r\n\r\n".encode()
    + _REFUSED_BODY
)


@dataclass(frozen=True)
class ConnectionLimits:
    header_timeout_s: float = 10.0
    max_per_client: int = 32
    max_total: int = 256


class ConnectionGuard:
    """The open connections of one server, in the order they opened."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self._open: dict[GuardedProtocol, str] = {}
        self.refused = 0
        self.evicted = 0

    def admit(self, connection: GuardedProtocol, client: str) -> bool:
        """Make room for `connection` if need be; False: refuse it (all others busy)."""
        mine = [c for c, who in self._open.items() if who == client]
        if len(mine) >= self.limits.max_per_client and not self._evict(mine):
            return False
        if len(self._open) >= self.limits.max_total and not self._evict(list(self._open)):
            return False
        self._open[connection] = client
        return True

    def _evict(self, candidates: list[GuardedProtocol]) -> bool:
        for connection in candidates:
            if not connection.busy:
                self.forget(connection)
                connection.close()
                self.evicted += 1
                return True
        self.refused += 1
        return False

    def forget(self, connection: GuardedProtocol) -> None:
        self._open.pop(connection, None)


class GuardedProtocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol under a `ConnectionGuard`."""

    guard: ConnectionGuard

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.busy = False
        self._deadline: asyncio.TimerHandle | None = None
        inner: Asgi = self.app
        self.app = self._tracked(inner)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        client = self.client[0] if self.client else ""
        if not self.guard.admit(self, client):
            self.connections.discard(self)
            transport.write(_REFUSAL)
            transport.close()
            return
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.guard.forget(self)
        super().connection_lost(exc)

    def close(self) -> None:
        self._disarm()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.guard.limits.header_timeout_s, self.close)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _tracked(self, inner: Asgi) -> Asgi:
        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            self.busy = True
            self._disarm()
            try:
                await inner(scope, receive, send)
            finally:
                self.busy = False
                if self.transport is not None and not self.transport.is_closing():
                    self._arm()

        return app


def guarded_protocol(guard: ConnectionGuard) -> type[GuardedProtocol]:
    """A protocol class for `uvicorn.Config(http=...)` bound to `guard`."""
    return type("Guarded", (GuardedProtocol,), {"guard": guard})
