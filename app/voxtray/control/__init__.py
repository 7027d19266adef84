"""The control socket behind `voxtray toggle/start/stop/status/show/quit`: `server` (in the
app, single instance) and `client` (stdlib only, for a fast `voxtray stop`)."""
