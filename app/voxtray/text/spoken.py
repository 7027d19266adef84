"""The shape of one language's spoken punctuation and command table."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Command(enum.StrEnum):
    """A spoken command that acts instead of being typed."""

    SCRATCH = "scratch"  # take back the text said before it
    PRESS_ENTER = "press_enter"  # press Enter after the text is typed


@dataclass(frozen=True, eq=False)  # hashed by identity: a table is a constant
class SpokenTable:
    """One language's spoken forms, all lower case, words separated by one space.

    Attributes:
        marks: Spoken punctuation -> the mark ("comma" -> ",").
        breaks: Spoken line breaks -> the newline(s) they type.
        commands: Spoken commands -> what they do.
        noun_markers: Words after which a mark word is a noun ("a comma", "the period").
        command_blockers: Words after which a command is part of a sentence ("you need
            to press enter", "don't scratch that"), unless a pause comes between.
    """

    marks: dict[str, str]
    breaks: dict[str, str]
    commands: dict[str, Command]
    noun_markers: frozenset[str] = field(default_factory=frozenset)
    command_blockers: frozenset[str] = field(default_factory=frozenset)
    sentence_ends: str = ".!?"
