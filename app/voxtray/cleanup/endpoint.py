"""Where clean-up sends text: an OpenAI-compatible chat endpoint (Ollama, llama.cpp's
llama-server, LM Studio, vLLM, OpenAI), taken apart, and whether it is this computer."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from voxtray.errors import BadInputError
from voxtray.inference.recognizers.remote_http import RemoteError, Target, parse_target
from voxtray.settings_checks import (
    CLEANUP_DEFAULT_ENDPOINT,
    CLEANUP_SCHEMES,
    cleanup_endpoint_problem,
    host_name,
)

DEFAULT_ENDPOINT = CLEANUP_DEFAULT_ENDPOINT

_CHAT = "/chat/completions"
_SCHEMES = CLEANUP_SCHEMES


class EndpointError(BadInputError):
    """The endpoint setting cannot be used; the message says why in one line."""


@dataclass(frozen=True)
class Endpoint:
    """A chat endpoint: `base` is the API root (`.../v1`), `host` the name consent uses,
    `local` whether it is this computer (loopback), so text never leaves it."""

    base: Target
    host: str
    local: bool

    @property
    def chat(self) -> Target:
        return _under(self.base, _CHAT)

    @property
    def models(self) -> Target:
        return _under(self.base, "/models")

    @property
    def shown(self) -> str:
        """The API root without credentials, for messages."""
        return self.base.shown


def _under(base: Target, suffix: str) -> Target:
    path = base.path.rstrip("/") + suffix
    return Target(base.scheme, base.host, base.port, path, base.user, base.password)


def is_local_host(host: str) -> bool:
    """Loopback only: `localhost`, 127.0.0.0/8, ::1 (and ::ffff:127.x). A LAN address,
    or a name that happens to resolve to this computer, is another machine as far as
    consent goes: nothing is resolved here."""
    name = host_name(host)
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return bool(address.is_loopback or (mapped is not None and mapped.is_loopback))


def endpoint_problem(url: object) -> str | None:
    """Why `url` cannot be a clean-up endpoint, in a few words; None if it can."""
    problem = cleanup_endpoint_problem(url)
    if problem is not None:
        return problem
    assert isinstance(url, str)
    try:
        parse_target(url, _SCHEMES)
    except RemoteError as exc:
        return str(exc).rpartition(": ")[2]
    return None


def parse_endpoint(url: str) -> Endpoint:
    """`url` as an endpoint: `http://host:port` means `/v1`; a path is kept as given
    (`https://api.example.com/openai/v1`), less a trailing `/chat/completions`.

    Raises:
        EndpointError: `url` is not usable (see `endpoint_problem`).
    """
    problem = endpoint_problem(url)
    if problem is not None:
        raise EndpointError(f"clean-up endpoint: {problem}")
    target = parse_target(url, _SCHEMES)
    path = target.path.rstrip("/").removesuffix(_CHAT).rstrip("/") or "/v1"
    base = Target(target.scheme, target.host, target.port, path)
    return Endpoint(base=base, host=host_name(target.host), local=is_local_host(target.host))
