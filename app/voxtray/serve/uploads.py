"""Uploads while they arrive: how many one client may have in progress, and how long and
how slowly one may take.

A body is held in memory while it arrives, so the server admits only a few uploads at a
time. Without a cap per client, one key holder could take every one of those places with
bodies sent a byte a second; without a minimum rate, each of them would keep its place for
the whole upload time. Clients are counted by address, an IPv6 address by its /64 (one
home or one host is given a whole /64).
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from starlette.requests import Request


@dataclass(frozen=True)
class UploadLimits:
    max_bytes: int = 25 * 2**20
    timeout_s: float = 30.0
    per_client: int = 4
    min_bytes_per_s: float = 1000.0  # 0: no minimum
    grace_s: float = 5.0  # the rate is judged only after this


class UploadTimedOut(Exception):
    """The body did not arrive in time; `too_slow` when the minimum rate was the limit."""

    def __init__(self, too_slow: bool) -> None:
        super().__init__("too slow" if too_slow else "too late")
        self.too_slow = too_slow


def client_key(host: str) -> str:
    """What one client's uploads are counted under: its IPv4 address or its IPv6 /64."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


class UploadSlots:
    """Uploads being received, per client (event-loop thread only)."""

    def __init__(self, per_client: int) -> None:
        self.per_client = per_client
        self._held: Counter[str] = Counter()

    @property
    def total(self) -> int:
        return sum(self._held.values())

    def full_for(self, client: str) -> bool:
        return self._held[client] >= self.per_client

    @contextmanager
    def held(self, client: str) -> Iterator[None]:
        self._held[client] += 1
        try:
            yield
        finally:
            self._held[client] -= 1
            if self._held[client] <= 0:
                del self._held[client]


async def arriving(request: Request, limits: UploadLimits) -> AsyncIterator[bytes]:
    """The body's chunks as they arrive. Raises `UploadTimedOut` once the upload has taken
    `timeout_s`, or, after `grace_s`, once it has averaged less than the minimum rate: a
    body trickled a byte a second is cut after the grace period, not the whole timeout."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    last = began + limits.timeout_s
    received = 0
    chunks = request.stream().__aiter__()
    while True:
        deadline = last
        if limits.min_bytes_per_s > 0:
            behind = began + max(limits.grace_s, received / limits.min_bytes_per_s)
            deadline = min(last, behind)
        try:
            async with asyncio.timeout_at(deadline):
                chunk = await anext(chunks)
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise UploadTimedOut(too_slow=deadline < last) from None
        received += len(chunk)
        yield chunk
