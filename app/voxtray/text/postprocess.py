"""Text after recognition: spoken punctuation, line breaks, commands and the user's
replacements, per language.

Whisper already punctuates, so a spoken mark is read from the text it wrote: a mark word
counts as punctuation only where the speaker paused after it (it ends the utterance, or
Whisper put a sentence mark after it, or commas on both sides) and no article or
possessive makes it a noun ("a comma", "the period"). "The trial period ends" keeps its
word; "Hello, comma, how are you" becomes "Hello, how are you". Whisper's punctuation next
to a spoken mark gives way to it. Commands act, so one after a word that makes it part of a
sentence ("you need to press enter", "don't scratch that") is text unless a pause comes
between; "Send the report press enter." presses Enter.

A text with nothing to act on comes back unchanged, character for character.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from voxtray.text.spoken import Command, SpokenTable
from voxtray.text.spoken_en import ENGLISH

TABLES: dict[str, SpokenTable] = {"en": ENGLISH}
"""Spoken forms per language code; a language without a table gets replacements only."""

_PUNCT = ",.;:!?…"
_AFTER = re.compile(rf"\s*([{_PUNCT}]*)\s*")
_BEFORE_PUNCT = re.compile(rf"([{_PUNCT}]*)\s*$")
_LAST_WORD = re.compile(r"([\w'’]+)[^\w'’]*$")
_PRONOUN_I = re.compile(r"I(?:['’]\w+)?$")


class ActionKind(enum.StrEnum):
    """What the caller does besides typing the text."""

    BACKSPACE = "backspace"  # before typing: erase `count` characters typed earlier
    PRESS_ENTER = "press_enter"  # after typing: press Enter


@dataclass(frozen=True)
class Action:
    kind: ActionKind
    count: int = 1


@dataclass(frozen=True)
class Replacement:
    """Say `spoken` (any case, whole words), get `written`."""

    spoken: str
    written: str


class TextSettings(Protocol):
    """The settings text handling reads (`voxtray.config.Settings` has them)."""

    @property
    def language(self) -> str: ...
    @property
    def spoken_punctuation(self) -> bool: ...
    @property
    def spoken_commands(self) -> bool: ...
    @property
    def replacements_enabled(self) -> bool: ...
    @property
    def replacements(self) -> str: ...


@dataclass(frozen=True)
class TextOptions:
    """Which processing runs; every part can be switched off on its own.

    Attributes:
        language: Code of the spoken table (`TABLES`) to use.
        spoken_punctuation: Spoken marks and line breaks become punctuation.
        spoken_commands: "scratch that" and "press enter" act instead of being typed.
        use_replacements: Apply `replacements`.
        replacements: The user's list, applied in order.
        capitals: Off: the text starts in lower case (a mode for code editors).
        period: Off: a full stop ending the text is left out.
    """

    language: str = "en"
    spoken_punctuation: bool = True
    spoken_commands: bool = True
    use_replacements: bool = True
    replacements: tuple[Replacement, ...] = ()
    capitals: bool = True
    period: bool = True

    @classmethod
    def of(cls, source: TextSettings) -> TextOptions:
        """The options the settings name (`voxtray.config.Settings`), their `replacements`
        as text, one `spoken -> written` a line."""
        return cls(
            language=source.language,
            spoken_punctuation=source.spoken_punctuation,
            spoken_commands=source.spoken_commands,
            use_replacements=source.replacements_enabled,
            replacements=parse_replacements(source.replacements),
        )


@dataclass(frozen=True)
class HistoryContext:
    """What was typed before this utterance.

    Attributes:
        previous: The previous utterance's text exactly as it was typed (`Processed.typed`).
        retractable: It is still where it was typed, the caret right after it, so
            backspacing over it erases it and nothing else.
    """

    previous: str = ""
    retractable: bool = False


@dataclass(frozen=True)
class Processed:
    """The text to type and the actions around it (BACKSPACE before, PRESS_ENTER after)."""

    text: str
    actions: tuple[Action, ...] = ()

    @property
    def typed(self) -> str:
        """The text with the space that separates it from the next utterance."""
        if not self.text or self.text.endswith("\n"):
            return self.text
        return self.text + " "

    @property
    def backspaces(self) -> int:
        return sum(a.count for a in self.actions if a.kind is ActionKind.BACKSPACE)

    @property
    def press_enter(self) -> bool:
        return any(a.kind is ActionKind.PRESS_ENTER for a in self.actions)


def parse_replacements(lines: str) -> tuple[Replacement, ...]:
    """One `spoken -> written` per line; blank lines and lines without `->` are skipped."""
    found = []
    for line in lines.splitlines():
        spoken, arrow, written = line.partition("->")
        if arrow and spoken.strip() and written.strip():
            found.append(Replacement(spoken.strip(), written.strip()))
    return tuple(found)


def bad_replacement_lines(lines: str) -> list[int]:
    """The 1-based numbers of non-blank lines that are not `spoken -> written`."""
    bad = []
    for number, line in enumerate(lines.splitlines(), 1):
        spoken, arrow, written = line.partition("->")
        if line.strip() and not (arrow and spoken.strip() and written.strip()):
            bad.append(number)
    return bad


def process(text: str, options: TextOptions, context: HistoryContext | None = None) -> Processed:
    """Apply spoken punctuation, commands and replacements to one utterance's text."""
    context = context or HistoryContext()
    table = TABLES.get(options.language.split("-")[0].casefold())
    processed = Processed(text)
    if table is not None and (options.spoken_punctuation or options.spoken_commands):
        processed = _Spoken(table, options, context).run(text)
    if options.use_replacements and options.replacements:
        replaced = _replace(processed.text, options.replacements)
        processed = Processed(replaced, processed.actions)
    if not (options.capitals and options.period):
        processed = Processed(_shaped(processed.text, options), processed.actions)
    return processed


def _shaped(text: str, options: TextOptions) -> str:
    """The start in lower case and the closing full stop left out, as the options say. A
    first word in capitals ("API", "I") is a name, not a sentence's capital."""
    if not options.capitals:
        first = text.split(maxsplit=1)[0] if text.strip() else ""
        plain_capital = first[:1].isupper() and not first[1:2].isupper() and first != "I"
        if plain_capital:
            start = text.index(first)
            text = text[:start] + first[0].lower() + text[start + 1 :]
    if not options.period and text.endswith(".") and not text.endswith(".."):
        text = text[:-1]
    return text


@dataclass(frozen=True)
class _Hit:
    start: int
    end: int  # past the spoken form and Whisper's punctuation right after it
    phrase: str
    after_punct: str


class _Case(enum.Enum):
    KEEP = 0
    UPPER = 1
    LOWER = 2


class _Spoken:
    """One pass over one utterance with one table."""

    def __init__(self, table: SpokenTable, options: TextOptions, context: HistoryContext):
        self.table = table
        self.options = options
        self.context = context
        self.out = ""
        self.case = _Case.KEEP
        self.erase_previous = False
        self.enter = False

    def run(self, text: str) -> Processed:
        hits = [hit for hit in self._candidates(text) if self._is_spoken_form(text, hit)]
        if not hits:
            return Processed(text)
        cursor = 0
        for hit in hits:
            self._apply(text[cursor : hit.start], hit)
            cursor = hit.end
        self._add_text(text[cursor:])
        return Processed(self.out, self._actions())

    def _candidates(self, text: str) -> list[_Hit]:
        pattern = _phrase_pattern(
            self.table, self.options.spoken_punctuation, self.options.spoken_commands
        )
        if pattern is None:
            return []
        hits = []
        for match in pattern.finditer(text):
            after = _AFTER.match(text, match.end())
            assert after is not None  # the pattern matches the empty string
            phrase = " ".join(re.split(r"[\s-]+", match.group(0).lower()))
            hits.append(
                _Hit(match.start(), after.end(), _canonical(self.table, phrase), after.group(1))
            )
        return hits

    def _is_spoken_form(self, text: str, hit: _Hit) -> bool:
        before = text[: hit.start]
        before_punct = _BEFORE_PUNCT.search(before)
        paused_before = not before.strip() or bool(before_punct and before_punct.group(1))
        final = hit.end >= len(text)
        pause_after = (
            final
            or any(c in ".!?;:…" for c in hit.after_punct)
            or ("," in hit.after_punct and paused_before)
        )
        if not pause_after:
            return False
        previous = _LAST_WORD.search(before)
        previous_word = previous.group(1).lower().replace("’", "'") if previous else ""
        if hit.phrase in self.table.commands:
            return paused_before or previous_word not in self.table.command_blockers
        is_noun = previous_word in self.table.noun_markers and not paused_before
        return not is_noun

    def _apply(self, segment: str, hit: _Hit) -> None:
        table = self.table
        if hit.phrase in table.marks:
            self._add_text(_strip_tail_punct(segment))
            mark = table.marks[hit.phrase]
            self.out = self.out.rstrip(" ") + mark
            if mark in table.sentence_ends:
                self.case = _Case.UPPER
            elif any(c in table.sentence_ends for c in hit.after_punct):
                self.case = _Case.LOWER  # Whisper's own sentence end capitalised it
            return
        self._add_text(segment)
        if hit.phrase in table.breaks:
            self.out = self.out.rstrip(" ") + table.breaks[hit.phrase]
            self.case = _Case.UPPER
        elif table.commands[hit.phrase] is Command.SCRATCH:
            if not self.out.strip():
                self.erase_previous = True
            self.out = ""
            self.case = _Case.UPPER
        else:
            self.enter = True

    def _add_text(self, segment: str) -> None:
        words = segment.strip()
        if not words:
            return
        words = _recase(words, self.case)
        self.case = _Case.KEEP
        if self.out and not self.out[-1].isspace():
            self.out += " "
        self.out += words

    def _actions(self) -> tuple[Action, ...]:
        actions: list[Action] = []
        previous = self.context.previous
        if self.context.retractable and previous:
            if self.erase_previous:
                actions.append(Action(ActionKind.BACKSPACE, len(previous)))
            elif self.out[:1] in (*self.table.marks.values(), "\n") and previous.endswith(" "):
                actions.append(Action(ActionKind.BACKSPACE, 1))  # join to the text before
        if self.enter:
            actions.append(Action(ActionKind.PRESS_ENTER))
        return tuple(actions)


def _canonical(table: SpokenTable, phrase: str) -> str:
    """The table's key for a phrase written with or without its space ("newline")."""
    squashed = phrase.replace(" ", "")
    for key in (*table.marks, *table.breaks, *table.commands):
        if key.replace(" ", "") == squashed:
            return key
    return phrase


@functools.lru_cache(maxsize=32)
def _phrase_pattern(table: SpokenTable, marks: bool, commands: bool) -> re.Pattern[str] | None:
    phrases = [*table.marks, *table.breaks] if marks else []
    if commands:
        phrases += list(table.commands)
    if not phrases:
        return None
    alternatives = sorted(
        (r"[\s-]*".join(re.escape(word) for word in phrase.split()) for phrase in phrases),
        key=len,
        reverse=True,
    )
    return re.compile(rf"(?<![\w'’])(?:{'|'.join(alternatives)})(?![\w'’])", re.IGNORECASE)


def _strip_tail_punct(segment: str) -> str:
    return segment.rstrip().rstrip(_PUNCT).rstrip()


def _recase(words: str, case: _Case) -> str:
    index = next((i for i, c in enumerate(words) if c.isalpha()), None)
    if index is None or case is _Case.KEEP:
        return words
    if case is _Case.UPPER:
        return words[:index] + words[index].upper() + words[index + 1 :]
    first_word = words[index:].split(maxsplit=1)[0]
    if _PRONOUN_I.match(first_word) or (len(first_word) > 1 and first_word.isupper()):
        return words
    return words[:index] + words[index].lower() + words[index + 1 :]


@functools.lru_cache(maxsize=8)
def _replacement_patterns(
    replacements: tuple[Replacement, ...],
) -> list[tuple[re.Pattern[str], str]]:
    compiled = []
    for item in replacements:
        words = item.spoken.split()
        if not words:
            continue
        body = r"[\s-]+".join(re.escape(word) for word in words)
        compiled.append((re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE), item.written))
    return compiled


def _replace(text: str, replacements: tuple[Replacement, ...]) -> str:
    for pattern, written in _replacement_patterns(replacements):
        text = pattern.sub(_literal(written), text)
    return text


def _literal(written: str) -> Callable[[re.Match[str]], str]:
    return lambda _match: written
