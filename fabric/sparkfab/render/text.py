"""Long texts of a fixed shape come from template files (`sparkfab/templates/*.j2`): the shape
lives in the template, every decision in the code that fills it. Templates see only the slots
they are given (an unknown slot is an error, never an empty string), and nothing is escaped:
the code quotes what a shell or a config file needs quoted before it fills a slot. HTML pages
(`fill_html`) are the exception: there every slot is escaped."""

from __future__ import annotations

from functools import cache
from typing import Any

import jinja2


@cache
def _environment(html: bool = False) -> jinja2.Environment:
    """The templates' environment: strict slots, blocks trimmed; HTML escapes every slot (and a
    page needs no trailing newline kept), every other text is filled as it is."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("sparkfab", "templates"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=not html,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=html,
    )


def fill_html(template: str, **slots: Any) -> str:
    """An HTML page from `templates/<template>`: every slot is escaped as HTML text."""
    return _environment(html=True).get_template(template).render(**slots)


def fill(template: str, **slots: Any) -> str:
    """The text of `templates/<template>` with its slots filled."""
    return _environment().get_template(template).render(**slots)
