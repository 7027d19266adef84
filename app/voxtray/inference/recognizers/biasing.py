"""Contextual biasing for greedy Whisper decoding: the vocabulary favoured only where the
audio is already heading into one of its entries.

The entries' token sequences, in the spellings the decoder may produce, form a prefix
tree. At each step a token that starts or continues an entry gets `bonus` on its score.
When the text leaves an entry unfinished after the bonus changed a choice, the decoder
goes back to the first changed token and takes the model's own choice there instead, so
a bonus never leaves a fragment of a word behind. Where no entry is under way and no
token starts one, the scores are untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

FULL_START_LETTERS = 4
"""A first token of this many letters or more gets the whole bonus; shorter, a share."""
LOWER_CASE_SHARE = 0.5
"""The start bonus of an entry's lower-case spelling, so "WireGuard" wins over "wireguard"
where both fit."""
DEFAULT_BONUS = 5.0
"""Log-probability bonus per token of an entry, tuned on tests/data/vocabulary
(docs/benchmarks.md, "Vocabulary")."""


class _Node:
    __slots__ = ("_keys", "children", "complete")

    def __init__(self) -> None:
        self.children: dict[int, _Node] = {}
        self.complete = False  # an entry ends here
        self._keys: NDArray[np.int64] | None = None

    def tokens(self) -> NDArray[np.int64]:
        if self._keys is None:
            self._keys = np.fromiter(self.children, dtype=np.int64, count=len(self.children))
        return self._keys


def spellings(entry: str) -> list[str]:
    """The spellings an entry may take in a transcript: as written, with a capital first
    letter (a sentence's start) and in lower case."""
    forms = [entry, entry[:1].upper() + entry[1:], entry.lower()]
    return list(dict.fromkeys(forms))


class VocabularyTrie:
    """The token sequences of a vocabulary's entries, each spelling after a space: inside
    text a word starts with one, and so does Whisper's first word.

    `start_weights` scale the bonus of each first token (in `root.tokens()` order) by how
    much of a word it spells: " N" of " Niamh" says little, and a full bonus for it made
    tiny.en hear "Niamh" in unclear speech; " Hester" gets all of it. An entry's lower-case
    spelling, where it differs, starts with `LOWER_CASE_SHARE` of that.
    """

    def __init__(
        self,
        entries: Iterable[str],
        encode: Callable[[str], list[int]],
        token_bytes: Sequence[bytes],
    ) -> None:
        self.root = _Node()
        self.size = 0
        share: dict[int, float] = {}  # each first token's largest share by spelling
        for entry in entries:
            entry = entry.strip()
            for spelling in spellings(entry):
                tokens = encode(" " + spelling) if spelling else []
                if tokens:
                    self.size += self._add(tokens)
                    weight = LOWER_CASE_SHARE if spelling == entry.lower() != entry else 1.0
                    share[tokens[0]] = max(share.get(tokens[0], 0.0), weight)
        keys = self.root.tokens()
        letters = np.array([len(token_bytes[key].strip()) for key in keys], np.float32)
        shares = np.array([share[int(key)] for key in keys], np.float32)
        self.start_weights = shares * np.minimum(1.0, letters / FULL_START_LETTERS)

    def _add(self, tokens: list[int]) -> int:
        if not tokens:
            return 0
        node = self.root
        for token in tokens:
            child = node.children.get(token)
            if child is None:
                child = node.children[token] = _Node()
            node = child
        node.complete = True
        return 1

    def __bool__(self) -> bool:
        return self.size > 0


@dataclass
class _Step:
    node: _Node  # where the text stands in the tree after this token
    changed_at: int | None  # first position of the unfinished entry that the bonus chose
    plain: int  # the token the model chose without a bonus
    plain_logprob: float


class BiasedChoice:
    """One greedy decoding's bias state: which entry is under way and where the bonus
    changed the model's choice. Positions count every token of the transcript (a forced
    prefix included)."""

    def __init__(self, trie: VocabularyTrie, bonus: float, prefix: list[int]) -> None:
        self._trie = trie
        self._bonus = bonus
        self._steps: list[_Step] = []
        self._unbiased_at = -1  # the position a take-back gave the model's own choice
        self._pending: tuple[int, float] = (0, 0.0)
        self.taken_back = 0
        for token in prefix:
            self._push(token, token, 0.0, changed=False)

    def _under_way(self) -> _Node | None:
        return self._steps[-1].node if self._steps else None

    def _candidates(self) -> list[_Node]:
        """Nodes whose children get the bonus: the entry under way, and a new entry's
        start where none is unfinished."""
        node = self._under_way()
        root = self._trie.root
        if node is None or node is root:
            return [root]
        return [node, root] if node.complete else [node]

    def choose(self, scores: NDArray[np.float32], plain: int, plain_logprob: float) -> int:
        """The token to take at the next position, given the allowed scores and the
        model's own choice `plain`."""
        position = len(self._steps)
        best, best_score = plain, float(scores[plain])
        if position != self._unbiased_at:
            for node in self._candidates():
                keys = node.tokens()
                if keys.size == 0:
                    continue
                boosted = scores[keys] + (
                    self._bonus * self._trie.start_weights
                    if node is self._trie.root
                    else np.float32(self._bonus)
                )
                index = int(boosted.argmax())
                if float(boosted[index]) > best_score:
                    best, best_score = int(keys[index]), float(boosted[index])
        self._pending = (plain, plain_logprob)
        return best

    def accept(self, token: int) -> int | None:
        """Record the chosen token; the position to go back to when it leaves an entry
        the bonus had started unfinished (None: keep going)."""
        plain, plain_logprob = self._pending
        back = self._left_unfinished(token)
        if back is not None:
            return back
        self._push(token, plain, plain_logprob, changed=token != plain)
        return None

    def finish(self) -> int | None:
        """At the end of text: the position to go back to if an entry is unfinished."""
        return self._left_unfinished(None)

    def _left_unfinished(self, token: int | None) -> int | None:
        if not self._steps:
            return None
        last = self._steps[-1]
        if last.changed_at is None or last.node.complete:
            return None
        if token is not None and token in last.node.children:
            return None
        return last.changed_at

    def take_back(self, position: int) -> tuple[int, float]:
        """Forget the tokens from `position` on and take the model's own choice there;
        returns that token and its log-probability."""
        step = self._steps[position]
        del self._steps[position:]
        self._unbiased_at = position
        self.taken_back += 1
        self._push(step.plain, step.plain, step.plain_logprob, changed=False)
        return step.plain, step.plain_logprob

    def _push(self, token: int, plain: int, plain_logprob: float, *, changed: bool) -> None:
        position = len(self._steps)
        node, changed_at = self._advance(token)
        if node is self._trie.root or node.complete:
            changed_at = None
        elif changed and changed_at is None:
            changed_at = position
        self._steps.append(_Step(node, changed_at, plain, plain_logprob))

    def _advance(self, token: int) -> tuple[_Node, int | None]:
        previous = self._under_way()
        if previous is not None and token in previous.children:
            return previous.children[token], self._steps[-1].changed_at
        root = self._trie.root
        child = root.children.get(token)
        return (child, None) if child is not None else (root, None)
