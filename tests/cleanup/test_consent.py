"""Where clean-up may send text: endpoints taken apart, what counts as this computer, the
consent that names a host, the settings' checks, the prompts and the key's own store."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.remote import MemoryKeyring
from voxtray.cleanup import (
    DEFAULT_ENDPOINT,
    PRESETS,
    ConsentedHosts,
    Reason,
    check_endpoint,
    cleanup_key_store,
    consent_question,
    consented_hosts_problem,
    endpoint_problem,
    is_local_host,
    prompt_problem,
    resolve_prompt,
)
from voxtray.cleanup.endpoint import EndpointError, parse_endpoint
from voxtray.cleanup.prompts import RULES
from voxtray.inference.remote_key import ApiKeyStore


@pytest.mark.parametrize(
    "host",
    ["localhost", "LocalHost.", "127.0.0.1", "127.3.2.1", "::1", "[::1]", "::ffff:127.0.0.1"],
)
def test_loopback_is_this_computer(host: str) -> None:
    assert is_local_host(host)


@pytest.mark.parametrize(
    "host",
    ["0.0.0.0", "192.168.1.10", "10.0.0.2", "api.openai.com", "localhost.example.com",
     "127.0.0.1.nip.io", "::ffff:10.0.0.1", "gpu-box"],
)  # fmt: skip
def test_anything_else_is_another_machine(host: str) -> None:
    assert not is_local_host(host)


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("http://localhost:11434", "/v1"),
        ("http://localhost:11434/v1/", "/v1"),
        ("http://127.0.0.1:8080/v1/chat/completions", "/v1"),
        ("https://api.example.com/openai/v1", "/openai/v1"),
    ],
)
def test_an_endpoint_is_its_api_root(url: str, path: str) -> None:
    endpoint = parse_endpoint(url)
    assert endpoint.base.path == path
    assert endpoint.chat.path == path + "/chat/completions"
    assert endpoint.models.path == path + "/models"


def test_the_default_endpoint_is_ollama_on_this_computer() -> None:
    endpoint = parse_endpoint(DEFAULT_ENDPOINT)
    assert (endpoint.host, endpoint.base.port, endpoint.local) == ("localhost", 11434, True)
    assert check_endpoint(DEFAULT_ENDPOINT, ConsentedHosts()).allowed


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("", "URL is needed"),
        ("ftp://example.com/v1", "http or https"),
        ("http://user:sk-secret@example.com/v1", "API key field"),
        ("https://example.com/v1?key=sk-secret", "query"),
        ("http://example.com:port/v1", "port"),
        (" http://localhost:11434/v1", "spaces"),
        ("http:///v1", "host"),
    ],
)
def test_an_unusable_endpoint_is_refused_in_words(url: str, says: str) -> None:
    problem = endpoint_problem(url)
    assert problem is not None
    assert says in problem
    assert "sk-secret" not in problem
    with pytest.raises(EndpointError):
        parse_endpoint(url)
    permission = check_endpoint(url, ConsentedHosts())
    assert not permission.allowed
    assert permission.reason is Reason.BAD_ENDPOINT


def test_another_host_needs_consent_that_names_it() -> None:
    url = "https://api.openai.com/v1"
    refused = check_endpoint(url, ConsentedHosts())
    assert not refused.allowed
    assert refused.reason is Reason.NO_CONSENT
    assert "api.openai.com" in refused.message
    assert not check_endpoint(url, ConsentedHosts.parse("api.mistral.ai")).allowed
    assert check_endpoint(url, ConsentedHosts.parse("API.OpenAI.com.")).allowed
    lan = "http://192.168.1.20:11434/v1"
    assert not check_endpoint(lan, ConsentedHosts.parse("api.openai.com")).allowed
    assert check_endpoint(lan, ConsentedHosts().with_host("192.168.1.20")).allowed


def test_consented_hosts_round_trip_through_the_setting() -> None:
    hosts = ConsentedHosts.parse("api.openai.com, gpu-box\n\n::1")
    assert hosts.hosts == {"api.openai.com", "gpu-box", "::1"}
    assert ConsentedHosts.parse(hosts.setting()) == hosts
    assert hosts.without("GPU-box").hosts == {"api.openai.com", "::1"}
    assert consented_hosts_problem(hosts.setting()) is None
    assert consented_hosts_problem("") is None


@pytest.mark.parametrize(
    "value", ["https://api.openai.com", "api.openai.com:443", "*.openai.com", "a b", 42]
)
def test_a_consent_entry_that_is_no_host_is_refused(value: object) -> None:
    assert consented_hosts_problem(value) is not None


def test_the_consent_question_names_the_host_and_how_it_travels() -> None:
    question = consent_question("http://gpu-box:11434/v1")
    assert "gpu-box" in question
    assert "unencrypted" in question
    assert "unencrypted" not in consent_question("https://api.openai.com/v1")
    assert "stays here" in consent_question(DEFAULT_ENDPOINT)


def test_prompts_are_presets_by_name_or_the_users_own() -> None:
    assert resolve_prompt("") == resolve_prompt("default")
    assert resolve_prompt("").startswith(RULES)
    for name in PRESETS:
        assert "never answer it" in resolve_prompt(name)
    assert resolve_prompt("  Fix my spelling only.  ") == "Fix my spelling only."
    assert prompt_problem("x" * 5000) is not None
    assert prompt_problem(3) is not None
    assert prompt_problem("casual") is None


def test_the_clean_up_key_is_kept_apart_from_the_remote_engines(tmp_path: Path) -> None:
    cleanup = cleanup_key_store(tmp_path / "cleanup-api-key")
    remote = ApiKeyStore(tmp_path / "remote-api-key", keyring=None)
    cleanup.keyring = None  # this machine's keyring, if any, is not the test's
    cleanup.set("sk-cleanup")
    remote.set("vx-remote")
    assert (cleanup.get(), remote.get()) == ("sk-cleanup", "vx-remote")
    assert cleanup.account == "cleanup-api-key"
    assert remote.account == "remote-api-key"
    assert (tmp_path / "cleanup-api-key").stat().st_mode & 0o777 == 0o600


def test_both_keys_share_a_keyring_under_their_own_names(tmp_path: Path) -> None:
    keyring = MemoryKeyring()
    cleanup = cleanup_key_store(tmp_path / "cleanup-api-key")
    cleanup.keyring = keyring
    remote = ApiKeyStore(tmp_path / "remote-api-key", keyring=keyring)
    cleanup.set("sk-cleanup")
    remote.set("vx-remote")
    assert keyring.saved == {
        ("voxtray", "cleanup-api-key"): "sk-cleanup",
        ("voxtray", "remote-api-key"): "vx-remote",
    }
    cleanup.set("")
    assert remote.get() == "vx-remote"
    assert not list(tmp_path.iterdir())  # nothing on disk while a keyring keeps them
