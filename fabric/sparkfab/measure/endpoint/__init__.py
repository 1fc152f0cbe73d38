"""The OpenAI-compatible endpoint as a client reaches it: HTTP with bounds (`http`), the access a
user gives (`access`: TLS, a key), a streamed completion timed chunk by chunk (`stream`), and
prompts of an exact length in the server's own tokens (`prompts`)."""
