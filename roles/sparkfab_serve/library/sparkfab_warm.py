#!/usr/bin/python
"""Ansible module: warm a serving engine that has just become healthy with one completion, so
that every rank has run a forward pass before `serve start` returns."""

DOCUMENTATION = r"""
module: sparkfab_warm
author: sparkfab developers (!UNKNOWN)
short_description: Send a healthy OpenAI-compatible server one completion of one token and time it
description:
  - Asks C(/v1/models) for the first model the server serves, then sends C(/v1/completions) one
    request of one token at temperature 0 and waits for its answer.
  - An engine's first forward pass pays for what it sets up lazily (kernels, buffers, the first
    collectives on every rank); the warm-up makes C(serve start) wait for it instead of the first
    user's request.
  - Where the server requires an API key, the key is read by name from the host's secrets file
    (the value never passes through the controller or the run's events).
  - Changes nothing on the host; in check mode it sends nothing.
options:
  url:
    description: The server's base URL (rank 0's C(http://ADDRESS:PORT)).
    type: str
    required: true
  timeout:
    description: Seconds the completion may take.
    type: int
    default: 600
  key_env:
    description: The variable of the secrets file that holds the server's API key (sent as a bearer token where set).
    type: str
  secrets_file:
    description: The host's secrets file (C(NAME=VALUE) lines).
    type: path
    default: /etc/sparkfab/secrets.env
"""

EXAMPLES = r"""
- name: Warm vLLM on rank 0 once its health answers
  sparkfab.fabric.sparkfab_warm:
    url: http://192.168.100.1:8000
    timeout: 900
    key_env: VLLM_API_KEY
"""

RETURN = r"""
model:
  description: The model the completion was sent to.
  returned: success
  type: str
seconds:
  description: How long the warm-up took, the model list included.
  returned: success
  type: float
msg:
  description: What the verbs print under the host's name.
  returned: always
  type: str
"""

import json
import time
import urllib.error

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url


def secret(path, name):
    """NAME's value in an env file of literal NAME=VALUE lines (as the launch script reads it)."""
    if not name:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                key, eq, value = line.rstrip("\n").partition("=")
                if eq and key == name:
                    return value
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return None
    return None


def ask(url, timeout, headers, body=None):
    data = None if body is None else json.dumps(body).encode()
    if data:
        headers = {**headers, "Content-Type": "application/json"}
    with open_url(url, data=data, headers=headers, timeout=timeout, method="POST" if data else "GET") as r:
        return json.load(r)


def main():
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "required": True},
            "timeout": {"type": "int", "default": 600},
            "key_env": {"type": "str", "no_log": False},  # the variable's name; its value is read here
            "secrets_file": {"type": "path", "default": "/etc/sparkfab/secrets.env"},
        },
        supports_check_mode=True,
    )
    p = module.params
    base = p["url"].rstrip("/")
    if module.check_mode:
        module.exit_json(changed=False, msg=f"would warm {base} with one completion")
    key = secret(p["secrets_file"], p["key_env"])
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    began = time.monotonic()
    try:
        model = ask(f"{base}/v1/models", 30, headers)["data"][0]["id"]
        answer = ask(
            f"{base}/v1/completions",
            p["timeout"],
            headers,
            {"model": model, "prompt": "warm", "max_tokens": 1, "temperature": 0},
        )
        if not answer["choices"]:
            raise ValueError("the answer holds no choice")
    except urllib.error.HTTPError as exc:
        module.fail_json(msg=f"the engine did not answer its first completion: HTTP {exc.code} from {exc.url}")
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        module.fail_json(msg=f"the engine did not answer its first completion: {exc}")
    took = time.monotonic() - began
    said = f"warmed: {model} answered its first completion in {took:.1f} s"
    module.exit_json(changed=False, model=model, seconds=round(took, 3), msg=said)


if __name__ == "__main__":
    main()
