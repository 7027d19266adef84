"""`voxtray serve`: one machine's recogniser for many clients, over the OpenAI-compatible
HTTP API and Wyoming. Needs the `serve` extra (starlette, uvicorn, python-multipart,
wyoming)."""
