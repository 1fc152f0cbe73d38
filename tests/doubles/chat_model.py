"""A chat model for the protocol double: one that passes every check of the quality battery
(`sparkfab.measure.bench.battery`), or one that breaks each of them."""

from __future__ import annotations

import re
from typing import Any


def model_responder(good: bool = True) -> Any:
    """How the double answers chat: a model that behaves, or one that breaks each check."""

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        msgs = body.get("messages") or []
        if not msgs:
            return {}
        last = str(msgs[-1].get("content", ""))
        everything = " ".join(str(m.get("content", "")) for m in msgs)
        if body.get("tools"):
            if not good:
                return {"text": "It is probably sunny."}
            name = body["tools"][0]["function"]["name"]
            return {
                "text": "",
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": name, "arguments": '{"city": "Istanbul"}'},
                    }
                ],
            }
        if last.startswith("Count from 1 to 100"):
            nums = [str(i) for i in range(1, 101) if good or i != 57]
            return {"text": " ".join(nums)}
        if last.startswith("Repeat exactly: "):
            text = last.removeprefix("Repeat exactly: ")
            return {"text": text if good else text[:10] + "\ufffd" + text[11:]}
        m = re.search(r"secret code is (\S+?)\.", everything)
        if "secret code" in last:
            return {"text": f"The secret code is {m.group(1)}." if (m and good) else "I could not find it."}
        return {"text": "A ring of Sparks passes partial sums." if good else "ok"}

    return respond
