"""One push-to-talk dictation and what it owns: `session` (`Dictation`, the state machine),
`io` (microphone, output, remote engine, cues), `delivery_state` (what was typed, the scratch-that
window), `live_typing`, `keeper` (history writes and retries), `journal` (audio on disk until
the text is stored and delivered), `utterance` (what one dictation produced)."""
