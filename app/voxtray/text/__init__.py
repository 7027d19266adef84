"""Text after recognition: spoken punctuation and commands, replacements, vocabulary."""
