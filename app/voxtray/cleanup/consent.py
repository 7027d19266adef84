"""Consent before text leaves the computer: clean-up is off until the user turns it on,
an endpoint on this computer needs nothing more, and any other host is used only once the
user has allowed that host by name."""

from __future__ import annotations

import re
from dataclasses import dataclass

from voxtray.cleanup.endpoint import EndpointError, is_local_host, parse_endpoint
from voxtray.cleanup.outcome import Reason
from voxtray.settings_checks import consented_hosts_problem, host_name, is_host

__all__ = [
    "ConsentedHosts",
    "Permission",
    "check_endpoint",
    "consent_question",
    "consented_hosts_problem",
]


@dataclass(frozen=True)
class ConsentedHosts:
    """The hosts the user allowed clean-up to send text to. In settings.json it is one
    host per line (`ConsentedHosts.parse` / `setting`); a host names one machine, without
    scheme, port or wildcard."""

    hosts: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, text: str) -> ConsentedHosts:
        """The setting's text (lines, or commas); entries that are no host are left out
        (`consented_hosts_problem` refuses them before they are saved)."""
        names = (host_name(entry) for entry in re.split(r"[\n,]", text))
        return cls(frozenset(name for name in names if is_host(name)))

    def setting(self) -> str:
        return "\n".join(sorted(self.hosts))

    def allows(self, host: str) -> bool:
        return host_name(host) in self.hosts

    def with_host(self, host: str) -> ConsentedHosts:
        return ConsentedHosts(self.hosts | {host_name(host)})

    def without(self, host: str) -> ConsentedHosts:
        return ConsentedHosts(self.hosts - {host_name(host)})


@dataclass(frozen=True)
class Permission:
    """Whether clean-up may send text to an endpoint, and if not, `reason` and `message`
    (one line naming the host). `local`: the endpoint is this computer."""

    allowed: bool
    host: str
    local: bool
    reason: Reason | None = None
    message: str = ""


def check_endpoint(url: str, consented: ConsentedHosts) -> Permission:
    """May clean-up send text to `url`? A loopback endpoint may; another host only when
    `consented` names it. Resolves nothing and sends nothing."""
    try:
        endpoint = parse_endpoint(url)
    except EndpointError as exc:
        return Permission(False, "", False, Reason.BAD_ENDPOINT, str(exc))
    if endpoint.local or consented.allows(endpoint.host):
        return Permission(True, endpoint.host, endpoint.local)
    message = (
        f"clean-up would send your text to {endpoint.host}, which is not this computer; "
        "allow that host first"
    )
    return Permission(False, endpoint.host, False, Reason.NO_CONSENT, message)


def consent_question(url: str) -> str:
    """What to ask the user before adding the endpoint's host to the consented hosts."""
    endpoint = parse_endpoint(url)
    if is_local_host(endpoint.host):
        return f"{endpoint.host} is this computer: your text stays here."
    plain = endpoint.base.scheme == "http"
    how = " unencrypted (http)" if plain else ""
    return (
        f"Send the text of every dictation{how} to {endpoint.host} to be cleaned up? "
        f"It leaves this computer; {endpoint.host} may keep it."
    )
