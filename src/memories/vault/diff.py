"""The text projection of a revision and unified diffs between two of them.

A projection is what ``history``/``diff`` compare: the title, the structured fields and metadata
one per line, then a blank line and the body. It is safe by construction: a file contributes its
name, media type, size and digest, never its payload; a credential's body (its secret value) is
replaced by a fixed line. A deleted or absent asset projects to no lines.
"""

from __future__ import annotations

import difflib
import json
import re

from memories.vault.content import Content, Kind

__all__ = ["CREDENTIAL_HIDDEN", "text_projection", "unified_diff"]

#: The line that stands in for a credential's secret value.
CREDENTIAL_HIDDEN = "(credential value hidden)"

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _one_line(text: str) -> str:
    # Stored content from another device may hold line breaks in single-line fields; escaping
    # them keeps one field per line, so a value cannot impersonate another field in a diff.
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _json_value(value: object) -> str:
    rendered = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return _one_line(rendered)


def text_projection(kind: Kind, content: Content | None) -> list[str]:
    """The lines a diff compares for ``content`` of an asset of ``kind``.

    Order: ``title:``, ``tags:``, ``source:``, ``card type:``, ``private: yes``, one
    ``meta.<key>: <JSON>`` per metadata field (sorted), ``file: <name> (<media type>, <n> bytes,
    sha256:<hex>)``, then a blank line and the body lines (``(credential value hidden)`` for a
    credential). Unset fields are left out; an empty body adds no blank line. None (absent or
    deleted) projects to ``[]``.
    """
    if content is None:
        return []
    lines = [f"title: {_one_line(content.title)}"]
    if content.tags:
        lines.append("tags: " + ", ".join(_one_line(tag) for tag in content.tags))
    if content.source is not None:
        lines.append(f"source: {_one_line(content.source)}")
    if content.card_type is not None:
        lines.append(f"card type: {_one_line(content.card_type)}")
    if content.private:
        lines.append("private: yes")
    for key in sorted(content.metadata):
        lines.append(f"meta.{_one_line(key)}: {_json_value(content.metadata[key])}")
    if content.file is not None:
        payload = content.file
        lines.append(
            f"file: {_one_line(payload.name)} ({_one_line(payload.media_type)}, "
            f"{payload.size} bytes, {payload.digest})"
        )
    if kind == "credential":
        lines += ["", CREDENTIAL_HIDDEN]
    elif content.body:
        body = content.body.split("\n")
        if body[-1] == "":
            body.pop()
        lines.append("")
        lines += body
    return lines


def unified_diff(
    kind: Kind,
    old: Content | None,
    new: Content | None,
    *,
    old_label: str,
    new_label: str,
    context: int = 3,
) -> str:
    """A unified diff of the two projections, or ``""`` when they are equal.

    The headers are ``--- old_label`` and ``+++ new_label``; ``context`` lines surround each
    change. Every line ends with a newline.
    """
    before = text_projection(kind, old)
    after = text_projection(kind, new)
    if before == after:
        return ""
    lines = difflib.unified_diff(
        before,
        after,
        fromfile=_one_line(old_label),
        tofile=_one_line(new_label),
        n=max(0, context),
        lineterm="",
    )
    return "".join(line + "\n" for line in lines)
