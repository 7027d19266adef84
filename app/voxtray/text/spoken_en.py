"""English spoken punctuation and commands: the table `voxtray.text.postprocess` reads."""

from __future__ import annotations

from voxtray.text.spoken import Command, SpokenTable

ENGLISH = SpokenTable(
    marks={
        "comma": ",",
        "period": ".",
        "full stop": ".",
        "question mark": "?",
        "exclamation mark": "!",
        "exclamation point": "!",
        "colon": ":",
        "semicolon": ";",
    },
    breaks={
        "new line": "\n",
        "new paragraph": "\n\n",
    },
    commands={
        "scratch that": Command.SCRATCH,
        "press enter": Command.PRESS_ENTER,
    },
    # A mark word right after one of these is a noun ("a comma", "the period"), not a mark.
    noun_markers=frozenset(
        [
            "a",
            "an",
            "the",
            "this",
            "that",
            "these",
            "those",
            "each",
            "every",
            "per",
            "my",
            "your",
            "his",
            "her",
            "its",
            "our",
            "their",
            "another",
            "no",
            "any",
            "some",
            "which",
            "what",
            "whose",
        ]
    ),
    command_blockers=frozenset(
        [
            "to",
            "you",
            "i",
            "we",
            "they",
            "he",
            "she",
            "it",
            "can",
            "could",
            "should",
            "must",
            "will",
            "would",
            "might",
            "may",
            "don't",
            "didn't",
            "doesn't",
            "not",
            "never",
            "and",
            "or",
            "then",
            "also",
        ]
    ),
)
