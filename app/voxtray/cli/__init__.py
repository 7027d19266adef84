"""The `voxtray` command line: `main` builds the parser from one module per command, each
with a `register(commands)`; `control` is the fast path for commands to the running app and
imports nothing else of this package."""
