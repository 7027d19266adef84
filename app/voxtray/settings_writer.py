"""The one writer of settings.json, and the rule for the settings that reload the model.

Every change is the settings its author changed (`Changes`, by setting name), written over
the file as it is on disk at that moment: a window, the tray or the command line never
writes back its older copy of what someone else changed meanwhile.

The settings that reload the model (`RELOAD_KEYS`) change last: a new model is written to
the file only once it has loaded and warmed up (`write(..., defer_reload=True)`, then
`write_loaded` once it has), and a switch that fails leaves the running model's values in
place (`keep_running_model`), in the file, in what the app goes on with and in what the
dictation reports as running.
"""

from __future__ import annotations

from collections.abc import Mapping

from voxtray.config import Settings, SettingsStore
from voxtray.settings_schema import Applies, Key, keys_that

Changes = Mapping[str, object]
"""Settings by name (a `Key` value) and their new values."""

RELOAD_KEYS: tuple[Key, ...] = keys_that(Applies.RELOAD)


def changes_between(before: Settings, after: Settings) -> dict[str, object]:
    """What `after` changed of `before`."""
    return {key.value: after.get(key) for key in Key if after.get(key) != before.get(key)}


def any_changed(before: Settings, after: Settings, keys: tuple[Key, ...]) -> bool:
    return any(before.get(key) != after.get(key) for key in keys)


def model_settings(settings: Settings) -> dict[str, object]:
    """The settings of `settings` that reload the model."""
    return {key.value: settings.get(key) for key in RELOAD_KEYS}


def keep_running_model(settings: Settings, running: Settings) -> Settings:
    """`settings` with the running model's settings in place of its own."""
    return settings.replace(**model_settings(running))


class SettingsWriter:
    """Writes changes over settings.json; the only code that saves settings."""

    def __init__(self, store: SettingsStore) -> None:
        self.store = store

    def write(self, changes: Changes, *, defer_reload: bool = False) -> Settings:
        """Write `changes` over the file as it is now and return what the file holds.
        With `defer_reload`, changes to the settings that reload the model are left out:
        whoever loads the new model writes them once it has loaded.

        Raises:
            SettingsError: for an unknown setting or a value its setting refuses; the
                file is then left as it was.
            DiskError: if the file cannot be written; the previous file is then intact.
        """
        if defer_reload:
            changes = {name: value for name, value in changes.items() if name not in RELOAD_KEYS}
        on_disk, _warnings = self.store.load()
        written = on_disk.replace(**changes)
        self.store.save(written)
        return written

    def write_loaded(self, asked: Settings, running: Settings) -> Settings | None:
        """Write the model settings of `asked`, whose write was deferred, once the model
        that loaded (`running`) runs on them; None when another one loaded instead.

        Raises:
            DiskError: if the file cannot be written; the previous file is then intact.
        """
        if model_settings(running) != model_settings(asked):
            return None
        return self.write(model_settings(asked))
