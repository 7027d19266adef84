"""What the dictation says about itself: `voxtray status`'s reply and why a start is
refused, both from one `Snapshot` taken under the dictation's lock."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from voxtray.choices import DictationState
from voxtray.dictation.loaded import Loaded
from voxtray.dictation.utterance import Utterance
from voxtray.errors import ExitCode
from voxtray.inference.live import Partial
from voxtray.output.explain import explain as explain_output


@dataclass(frozen=True)
class Snapshot:
    state: DictationState
    detail: str
    loaded: Loaded | None
    last: Utterance | None
    partial: Partial | None
    """Live text, while listening."""
    unstored: int
    """Dictations whose text the history has not taken yet."""
    mic_problem: str | None
    closing: bool
    damaged_model: str | None = None
    """The installed model whose damage stopped the load, for the front ends' repair."""


def status_reply(now: Snapshot) -> dict[str, Any]:
    """The reply to `voxtray status` (and the control socket's other commands)."""
    reply: dict[str, Any] = {"ok": True, "state": now.state.value, "detail": now.detail}
    if (partial := now.partial) is not None:
        reply["partial"] = {"committed": partial.committed, "tentative": partial.tentative}
    loaded = now.loaded
    if loaded is not None:
        reply["model"] = loaded.model.model
        reply["engine"] = loaded.model.engine
        reply["provider"] = loaded.model.provider
    if now.unstored:
        reply["unstored"] = now.unstored
    if now.damaged_model is not None:
        reply["damaged_model"] = now.damaged_model
    if loaded is not None:
        output = loaded.output
        reply["output"] = {"method": str(output.name), "reason": explain_output(output)}
        if loaded.gpu_failure is not None:
            reply["gpu_failure"] = loaded.gpu_failure.to_json()
    if (last := now.last) is not None:
        reply["last"] = {
            "text": last.text,
            "timings_ms": last.timings_ms,
            "delivered": last.delivered,
            "verified": last.verified,
            "language": last.record.language,
            "cleanup": last.cleanup,
            "mode": last.mode,
        }
    return reply


def start_refusal(now: Snapshot) -> tuple[str, ExitCode] | None:
    """Why a dictation cannot start (one line and an exit code), or None when it can, or
    when it is only busy with the previous one."""
    if now.closing:
        return "Voxtray is quitting", ExitCode.NOT_RUNNING
    if now.state is DictationState.ERROR:
        code = ExitCode.NOT_FOUND if now.mic_problem is not None else ExitCode.INTERNAL
        return f"cannot start dictation: {now.detail or 'error'}", code
    if now.state is DictationState.LOADING:
        return f"cannot start dictation yet: {now.detail or 'loading'}", ExitCode.NOT_RUNNING
    return None
