"""What the remote engines share: one overall deadline per request, URLs checked and
their credentials split off, and a POST that keeps the key with its own origin."""

from __future__ import annotations

import base64
import contextlib
import http.client
import socket
import ssl
import threading
import types
from dataclasses import dataclass
from urllib.parse import SplitResult, unquote, urljoin, urlsplit

from voxtray.errors import NetworkError

MAX_ANSWER_BYTES = 16 * 2**20
_MAX_REDIRECTS = 3


class RemoteError(NetworkError):
    """The server could not be reached, was too slow, refused or answered nonsense."""


class UnreachableError(RemoteError):
    """Nothing answered at the server's address: refused, no route, no such host."""


class TimedOutError(RemoteError):
    """The exchange took longer than its deadline."""


@dataclass(frozen=True)
class Target:
    """A server URL taken apart: where to connect, and the credentials it carried."""

    scheme: str
    host: str
    port: int
    path: str
    user: str | None = None
    password: str | None = None

    @property
    def origin(self) -> tuple[str, str, int]:
        return self.scheme, self.host.lower(), self.port

    @property
    def shown(self) -> str:
        """The URL without its credentials, for messages."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.path}"

    def basic_auth(self) -> str | None:
        if self.user is None:
            return None
        pair = f"{self.user}:{self.password or ''}".encode()
        return "Basic " + base64.b64encode(pair).decode()


_DEFAULT_PORTS = {"http": 80, "https": 443}


def parse_target(url: str, schemes: tuple[str, ...]) -> Target:
    """`url` taken apart, or a `RemoteError` saying what is wrong with it."""
    parts = urlsplit(url.strip())
    if parts.scheme not in schemes:
        raise RemoteError(f"{_redacted(parts)}: use a URL starting {' or '.join(schemes)}://")
    try:
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        raise RemoteError(f"{_redacted(parts)}: the port is not a number from 1 to 65535") from None
    if not parts.hostname or not port:
        raise RemoteError(f"{_redacted(parts)}: the URL needs a host and a port")
    return Target(
        scheme=parts.scheme,
        host=parts.hostname,
        port=port,
        path=parts.path or "/",
        user=unquote(parts.username) if parts.username is not None else None,
        password=unquote(parts.password) if parts.password is not None else None,
    )


def redact(url: str) -> str:
    """`url` without the credentials it may carry."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    netloc, slash, path = rest.partition("/")
    shown = netloc.rsplit("@", 1)[-1] + slash + path
    return f"{scheme}://{shown}" if sep else shown


def _redacted(parts: SplitResult) -> str:
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return f"{parts.scheme}://{netloc}{parts.path}" if parts.scheme else netloc + parts.path


class Deadline:
    """Shuts a socket down when the whole exchange has taken `timeout_s`, whichever step
    (connect, headers, body, events) it is in."""

    def __init__(self, timeout_s: float, what: str) -> None:
        self.timeout_s = timeout_s
        self.what = what
        self.expired = False
        self._sock: socket.socket | None = None
        self._timer = threading.Timer(timeout_s, self._expire)
        self._timer.daemon = True
        self._lock = threading.Lock()

    def __enter__(self) -> Deadline:
        self._timer.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        trace: types.TracebackType | None,
    ) -> None:
        self._timer.cancel()
        if self.expired and kind is not None and not isinstance(exc, RemoteError):
            raise self.error() from None

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sock = sock
            if self.expired:
                _shut(sock)

    def error(self) -> TimedOutError:
        return TimedOutError(f"{self.what}: no answer within {self.timeout_s:g} s")

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            if self._sock is not None:
                _shut(self._sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


def post(target: Target, body: bytes, headers: dict[str, str], deadline: Deadline) -> Answer:
    """POST `body`, following redirects only within the target's origin."""
    return send("POST", target, body, headers, deadline)


def send(
    method: str, target: Target, body: bytes | None, headers: dict[str, str], deadline: Deadline
) -> Answer:
    """One request, following redirects only within the target's origin."""
    for _ in range(_MAX_REDIRECTS + 1):
        answer = _send_once(method, target, body, headers, deadline)
        if answer.status not in (301, 302, 303, 307, 308):
            return answer
        target = _redirect(target, answer.headers.get("location", ""))
    raise RemoteError(f"{target.shown}: more than {_MAX_REDIRECTS} redirects")


def _redirect(target: Target, location: str) -> Target:
    joined = urljoin(target.shown, location)
    try:
        to = parse_target(joined, ("http", "https"))
    except RemoteError:
        raise RemoteError(f"{target.shown}: redirected to an unusable URL") from None
    if to.user is not None or to.origin != target.origin:
        reason = "a downgrade to http" if target.scheme == "https" else "another server"
        raise RemoteError(f"{target.shown}: redirected to {to.shown} ({reason}); not followed")
    return Target(to.scheme, to.host, to.port, to.path, target.user, target.password)


def _connection(target: Target, timeout_s: float) -> http.client.HTTPConnection:
    if target.scheme == "https":
        context = ssl.create_default_context()
        return http.client.HTTPSConnection(
            target.host, target.port, timeout=timeout_s, context=context
        )
    return http.client.HTTPConnection(target.host, target.port, timeout=timeout_s)


def _send_once(
    method: str, target: Target, body: bytes | None, headers: dict[str, str], deadline: Deadline
) -> Answer:
    connection = _connection(target, deadline.timeout_s)
    try:
        connection.connect()
        assert connection.sock is not None
        deadline.watch(connection.sock)
        connection.request(method, target.path, body=body, headers=headers)
        reply = connection.getresponse()
        answer = Answer(reply.status, _headers(reply), _body(reply, target))
        if deadline.expired:  # what arrived was cut short by the deadline
            raise deadline.error()
        return answer
    except RemoteError:
        raise
    except (http.client.HTTPException, ValueError) as exc:
        if deadline.expired:
            raise deadline.error() from None
        raise RemoteError(f"{target.shown}: not an HTTP answer ({_short(exc)})") from None
    except TimeoutError:
        raise deadline.error() from None
    except ssl.SSLError as exc:
        raise RemoteError(f"{target.shown}: TLS failed: {_short(exc)}") from None
    except OSError as exc:
        if deadline.expired:
            raise deadline.error() from None
        raise UnreachableError(f"cannot reach {target.shown}: {exc.strerror or exc}") from None
    finally:
        connection.close()


def _headers(reply: http.client.HTTPResponse) -> dict[str, str]:
    return {key.lower(): value for key, value in reply.getheaders()}


def _body(reply: http.client.HTTPResponse, target: Target) -> bytes:
    claimed = reply.getheader("content-length", "")
    if claimed.strip().isdigit() and int(claimed) > MAX_ANSWER_BYTES:
        raise RemoteError(f"{target.shown}: the answer claims {int(claimed)} bytes; too large")
    data = reply.read(MAX_ANSWER_BYTES + 1)
    if len(data) > MAX_ANSWER_BYTES:
        raise RemoteError(f"{target.shown}: the answer is larger than {MAX_ANSWER_BYTES} bytes")
    if claimed.strip().isdigit() and len(data) < int(claimed):
        raise http.client.IncompleteRead(data, int(claimed) - len(data))
    return data


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:120]
    return f"{exc.__class__.__name__}: {text}" if text else exc.__class__.__name__
