"""How a client reaches the serving endpoint: TLS (certificates checked unless the user opts
out) and the API key of a server started with `--api-key` / VLLM_API_KEY. The key comes from
an environment variable the user names (OPENAI_API_KEY unless told), so it is never on a
command line or in a file."""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass

from sparkfab.errors import UsageError

#: where the key comes from when --api-key-env names no variable
DEFAULT_KEY_ENV = "OPENAI_API_KEY"

#: what fixes a refusal, by HTTP status
STATUS_HINTS = {
    401: f"the server wants an API key: name the variable that holds it with --api-key-env (or set {DEFAULT_KEY_ENV})",
    403: f"the server refused the API key: check the variable --api-key-env names (or {DEFAULT_KEY_ENV})",
}


def status_hint(code: int) -> str:
    """' (what fixes it)' for a refusal whose fix is a flag, else ''."""
    return f" ({STATUS_HINTS[code]})" if code in STATUS_HINTS else ""


@dataclass(frozen=True)
class Access:
    api_key: str | None = None
    verify: bool = True  # check the server's certificate and host name
    ca_file: str | None = None  # trust this CA bundle instead of the system's

    @classmethod
    def from_args(cls, key_env: str | None, insecure: bool = False, ca_file: str | None = None) -> Access:
        """The key from the variable `key_env` names, else from OPENAI_API_KEY where it is set (as
        `vllm bench serve` and OpenAI's clients take it)."""
        key = None
        named = f"--api-key-env {key_env}" if key_env else DEFAULT_KEY_ENV
        if key_env:
            key = os.environ.get(key_env)
            if not key:
                raise UsageError(f"--api-key-env {key_env}: the variable is not set (or empty)")
        else:
            key = os.environ.get(DEFAULT_KEY_ENV) or None
        if key is not None and (not (key.isascii() and key.isprintable()) or " " in key):
            # an HTTP header carries it: visible ASCII only (the value is never printed)
            raise UsageError(f"{named}: the key holds characters an HTTP header cannot carry")
        if ca_file and not os.path.isfile(ca_file):
            raise UsageError(f"--ca-file {ca_file}: no such file")
        if ca_file:
            try:
                ssl.create_default_context(cafile=ca_file)
            except (ssl.SSLError, ValueError) as exc:
                raise UsageError(f"--ca-file {ca_file}: not a PEM certificate bundle ({exc})") from None
        return cls(key, not insecure, ca_file)

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.ca_file)
        if not self.verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        return ctx

    def for_url(self, url: str) -> ssl.SSLContext | None:
        return self.ssl_context() if url.lower().startswith("https://") else None
