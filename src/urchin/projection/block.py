"""The block's text: a summary of the events, neutralised so no event can forge a marker.

Only an event's first line is used, control characters become spaces, and ``<``
becomes ``&lt;``, so no event can open an HTML comment, forge a marker (even for
tools that search for markers inside a line) or inject HTML.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import tzinfo
from pathlib import Path

from urchin.event import Event
from urchin.projection.markers import CURRENT_MARKERS, MarkerStyle

__all__ = ["MAX_BULLETS", "TEXT_LIMIT", "block_text", "render_block"]

#: At most this many bullet lines; the rest is summarised by a "… and N more" line.
MAX_BULLETS = 200
#: Length of a bullet's text (title or first line of content), ellipsis included.
TEXT_LIMIT = 120
_SOURCE_LIMIT = 40
_WORKSPACE_LIMIT = 160
_MAX_SOURCES_LISTED = 20
_EMPTY = "_(no activity in window)_"


def _controls() -> dict[int, str]:
    codes = [*range(0x00, 0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, 0xFEFF]
    # Bidirectional overrides can make a line read differently from what it says.
    codes += [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F]
    return dict.fromkeys(codes, " ")


_CONTROLS = _controls()


def _clean(text: str, limit: int) -> str:
    """One safe line of at most ``limit`` characters: no controls, no HTML, no markers."""
    # Lone surrogates (from \\ud800 escapes in the journal) cannot be written as UTF-8.
    text = text.encode("utf-8", "replace").decode("utf-8")
    text = " ".join(text.translate(_CONTROLS).split())
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    # After cutting, so the entity is never split; "<" is what every marker and tag starts with.
    return text.replace("<", "&lt;")


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line
    return ""


def _label(event: Event) -> str:
    raw = event.title if event.title and event.title.strip() else _first_line(event.content)
    return _clean(raw, TEXT_LIMIT) or "(no text)"


def _workspace_label(workspace: str | None, home: Path | None) -> str | None:
    if not workspace or not workspace.strip():
        return None
    path = workspace.strip()
    if len(path) > 1:
        path = path.rstrip("/") or "/"
    if home is not None:
        home_text = str(home).rstrip("/")
        if home_text and path == home_text:
            path = "~"
        elif home_text and path.startswith(home_text + "/"):
            path = "~" + path[len(home_text) :]
    return _clean(path, _WORKSPACE_LIMIT) or None


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def render_block(
    events: Sequence[Event],
    *,
    home: Path | None = None,
    tz: tzinfo | None = None,
    max_bullets: int = MAX_BULLETS,
) -> list[str]:
    """The lines between the markers (without the markers) summarising ``events``.

    A heading with the total, the count per source (most first, then by name),
    then one section per workspace (most events first, "(no workspace)" last)
    with ``- HH:MM **source** — text`` bullets in time order. Only the newest
    ``max_bullets`` events get a bullet; a final line counts the rest. ``home``
    is shown as ``~``; times are in ``tz`` (``None``: the system's zone).
    """
    if not events:
        return [_EMPTY]
    ordered = sorted(events, key=lambda event: event.timestamp)
    lines = [f"### urchin: {_plural(len(ordered), 'event')}"]

    per_source = Counter(event.source for event in ordered)
    ranked = sorted(per_source.items(), key=lambda item: (-item[1], item[0]))
    parts = [
        f"**{_clean(source, _SOURCE_LIMIT) or '(blank)'}** {count}"
        for source, count in ranked[:_MAX_SOURCES_LISTED]
    ]
    if len(ranked) > _MAX_SOURCES_LISTED:
        parts.append(f"+{len(ranked) - _MAX_SOURCES_LISTED} more sources")
    lines.append(" · ".join(parts))

    shown = set(range(max(0, len(ordered) - max_bullets), len(ordered)))
    sections: dict[str | None, list[int]] = {}
    for index, event in enumerate(ordered):
        sections.setdefault(_workspace_label(event.workspace, home), []).append(index)

    def order(item: tuple[str | None, list[int]]) -> tuple[bool, int, str]:
        label, members = item
        return (label is None, -len(members), label or "")

    for label, members in sorted(sections.items(), key=order):
        visible = [index for index in members if index in shown]
        if not visible:
            continue
        lines.append("")
        lines.append(f"#### {label or '(no workspace)'} · {len(members)}")
        for index in visible:
            event = ordered[index]
            when = event.timestamp.astimezone(tz).strftime("%H:%M")
            source = _clean(event.source, _SOURCE_LIMIT) or "(blank)"
            lines.append(f"- {when} **{source}** — {_label(event)}")
    hidden = len(ordered) - len(shown)
    if hidden:
        lines.append("")
        lines.append(f"_… and {hidden} more_")
    return lines


def block_text(body: Sequence[str], style: MarkerStyle = CURRENT_MARKERS) -> str:
    """The block as it appears in a note: markers around ``body``, LF line endings."""
    return "\n".join([style.start, *body, style.end]) + "\n"
