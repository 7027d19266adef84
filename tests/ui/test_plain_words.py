"""Error text for people: the tray's wording of what the core refuses."""

from __future__ import annotations

from voxtray.cli.guard import worded
from voxtray.models.store import REFUSED_UNTRUSTED, UnpinnedError
from voxtray.ui.plain_words import plain


def _refused() -> UnpinnedError:
    return UnpinnedError(
        f"demo downloads from https://example.org/demo.tar.gz without a sha256 pinned in the "
        f"catalog; {REFUSED_UNTRUSTED}",
        model="demo",
        url="https://example.org/demo.tar.gz",
    )


def test_each_front_end_names_its_own_way_to_trust_a_download() -> None:
    assert plain(str(_refused())).endswith(
        f"{REFUSED_UNTRUSTED} (trust it with Install anyway in Settings)"
    )
    assert worded(_refused()).endswith(
        f"{REFUSED_UNTRUSTED} (trust it with: voxtray models install demo --allow-unpinned)"
    )
    assert worded(ValueError("other")) == "other"


def test_a_damaged_model_is_repaired_in_the_windows_words() -> None:
    from voxtray.errors import DamagedModelError, NotFoundError
    from voxtray.ui.worker import worded as window_worded

    damaged = DamagedModelError("model whisper-base cannot be loaded: truncated", "whisper-base")
    said = window_worded(damaged)
    assert said.startswith("model whisper-base cannot be loaded: truncated; ")
    assert "reinstall whisper-base in Settings, Model (Remove, then Install)" in said
    assert "--force" not in said  # the command line's words stay on the command line
    assert window_worded(NotFoundError("no such model")) == "no such model"


def test_an_engine_that_cannot_run_the_model_is_named_in_each_front_ends_words() -> None:
    from voxtray.errors import WrongEngineError
    from voxtray.ui.worker import worded as window_worded

    wrong = WrongEngineError("the ort engine runs Whisper models; parakeet is nemo-ctc", "sherpa")
    assert "--engine" not in str(wrong)  # the core names neither a flag nor a setting
    assert worded(wrong).endswith("(use --engine sherpa)")
    said = window_worded(wrong)
    assert said.endswith("choose Engine: sherpa (or auto) in Settings, Model")
    assert "--engine" not in said
