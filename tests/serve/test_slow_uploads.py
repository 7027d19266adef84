"""Slow uploads against the real `voxtray serve` (whisper-tiny.en, default limits, an API
key), from real sockets on loopback: one key holder trickling ten bodies a byte a second
must not keep the other clients from being served, and an honest slow link still is."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.audio import Clip
from tests.support.serving import REPO, Served, serving_tiny_en
from tests.support.slow_upload import paced_upload, trickling
from voxtray.models.store import ModelStore
from voxtray.scoring.wer import word_errors
from voxtray.serve.uploads import client_key

pytest.importorskip("uvicorn", reason="the serve extra is not installed")

pytestmark = [pytest.mark.slow, pytest.mark.hostile]

ATTACKER = "127.0.0.1"
OTHER = "127.0.0.2"
MAX_WER = 0.3  # whisper-tiny.en on these clips is near 0.1; a refusal gives no text at all
PER_CLIENT = 4  # `--max-client-uploads`' default


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, model_store: ModelStore) -> Iterator[Served]:
    with serving_tiny_en(tmp_path_factory.mktemp("slow-uploads"), model_store) as server:
        yield server


@pytest.fixture(scope="module")
def clip(eval_clips: list[Clip]) -> Clip:
    return next(c for c in eval_clips if 3.0 <= c.duration_s <= 6.0)


def _post(served: Served, clip: Clip, source: str) -> httpx.Response:
    transport = httpx.HTTPTransport(local_address=source)
    with httpx.Client(transport=transport, timeout=120) as client:
        return client.post(
            served.base_url + "/audio/transcriptions",
            headers={"Authorization": f"Bearer {served.token}"},
            files={"file": ("a.wav", clip.path.read_bytes(), "audio/wav")},
            data={"model": "whisper-1"},
        )


def test_ten_slow_uploads_from_one_address_leave_the_others_served(
    served: Served, clip: Clip
) -> None:
    with trickling(served.url, served.token, 10, source=ATTACKER) as slow:
        time.sleep(1.5)  # every trickle's head is in and its body has begun
        same_address = _post(served, clip, ATTACKER)
        answers = []
        for _ in range(3):
            answers.append(_post(served, clip, OTHER))
            time.sleep(0.5)
        for answer in answers:
            assert answer.status_code == 200, answer.text
            assert word_errors(clip.reference, answer.json()["text"]).rate < MAX_WER
        trickled = [future.result(timeout=25) for future in slow]
    # The attacker's own address is at its cap: told to come back, not queued behind.
    assert same_address.status_code == 429, same_address.text
    assert same_address.json()["error"]["code"] == "too_many_uploads"
    assert int(same_address.headers["retry-after"]) >= 1
    codes = sorted(answer.code for answer in trickled)
    assert codes == ["too_many_uploads"] * (10 - PER_CLIENT) + ["upload_too_slow"] * PER_CLIENT
    # Cut well before the 30 s the whole upload may take, once below the minimum rate.
    assert max(answer.after_s for answer in trickled) < 20
    assert all(answer.status in (408, 429) for answer in trickled)
    assert _post(served, clip, ATTACKER).status_code == 200  # served again once they are cut


def test_an_upload_over_a_slow_honest_link_is_served(served: Served, clip: Clip) -> None:
    """A file sent at 12 kB/s (a poor mobile link) takes longer than the minimum rate's
    grace period and is still transcribed."""
    data = clip.path.read_bytes()
    answer = paced_upload(served.url, served.token, data, "whisper-1", 12_000, source=OTHER)
    assert answer.after_s > 6, answer
    assert answer.status == 200, answer
    assert word_errors(clip.reference, answer.text).rate < MAX_WER


def test_health_answers_while_uploads_trickle(served: Served) -> None:
    with trickling(served.url, served.token, 10, source=ATTACKER):
        time.sleep(1.0)
        reply = httpx.get(served.url + "/health", timeout=5)
    assert reply.status_code == 200


@pytest.mark.parametrize(
    ("host", "key"),
    [
        ("192.0.2.7", "192.0.2.7"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"),
        ("2001:db8:1:3::1", "2001:db8:1:3::/64"),
        ("", ""),
    ],
)
def test_uploads_are_counted_per_ipv4_address_and_ipv6_64(host: str, key: str) -> None:
    assert client_key(host) == key


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--max-client-uploads", "0"), "limits must be positive"),
        (("--body-timeout-s", "nan"), "limits must be positive"),
        (("--min-upload-kb-s", "-1"), "--min-upload-kb-s must be 0 or more"),
        (("--min-upload-kb-s", "nan"), "--min-upload-kb-s must be 0 or more"),
    ],
)
def test_upload_limits_are_checked_before_loading(
    tmp_path: Path, flags: tuple[str, ...], message: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "voxtray", "serve", "--port", "0", "--no-auth", *flags],
        cwd=REPO,
        env={**os.environ, "VOXTRAY_HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [f"voxtray: error: {message}"]
