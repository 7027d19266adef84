"""Dictation history: `store` (SQLite, written before the text is typed) and `audio` (each
dictation's kept recording)."""
