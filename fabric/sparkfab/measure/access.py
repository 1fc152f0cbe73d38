"""How a client reaches the serving endpoint: TLS (certificates checked unless the user opts
out) and the API key of a server started with `--api-key` / VLLM_API_KEY. The key comes from
an environment variable the user names, so it is never on a command line or in a file."""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass

from sparkfab.errors import UsageError


@dataclass(frozen=True)
class Access:
    api_key: str | None = None
    verify: bool = True  # check the server's certificate and host name
    ca_file: str | None = None  # trust this CA bundle instead of the system's

    @classmethod
    def from_args(cls, key_env: str | None, insecure: bool = False, ca_file: str | None = None) -> Access:
        key = None
        if key_env:
            key = os.environ.get(key_env)
            if not key:
                raise UsageError(f"--api-key-env {key_env}: the variable is not set (or empty)")
            if not (key.isascii() and key.isprintable()) or " " in key:
                # an HTTP header carries it: visible ASCII only (the value is never printed)
                raise UsageError(f"--api-key-env {key_env}: the key holds characters an HTTP header cannot carry")
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
