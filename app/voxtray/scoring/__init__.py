"""Scoring recognised text: the English normaliser (`normalizer`, with its `numbers` and
`spellings`) and the word error rate (`wer`). Text in, numbers out."""
