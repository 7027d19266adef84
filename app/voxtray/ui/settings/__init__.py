"""The settings window: one page per `voxtray.settings_schema.Section`, each built from the
settings' entries (label, help, range, choices)."""
