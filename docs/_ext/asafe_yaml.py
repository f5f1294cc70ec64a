"""The comments of a YAML defaults file, key by key (no Sphinx needed).

Used by the ``asafe-config-table`` directive of the documentation and by
``tests/test_docs.py``, which checks that every key of ``asafe/asafe.yaml`` has a
comment.
"""
from __future__ import annotations

import re
from typing import Any

__all__ = ["yaml_comments", "yaml_leaves", "environment_variable", "format_default"]


def yaml_comments(text: str) -> dict[str, str]:
    """``{"asafe.tracker.window": "comment", ...}`` from the comments above each key."""
    found: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    comments: list[str] = []
    list_indent: int | None = None  # inside a list value owned by the key at this indent
    for line in text.splitlines():
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if list_indent is not None:
            if stripped and (indent > list_indent or (indent == list_indent and stripped.startswith("-"))):
                continue
            if stripped:
                list_indent = None
        if not stripped:
            comments = []
            continue
        if stripped.startswith("#"):
            comments.append(stripped.lstrip("#").strip())
            continue
        if stripped.startswith("-"):
            list_indent = stack[-1][0] if stack else 0
            comments = []
            continue
        match = re.match(r"^([^:#\s][^:#]*):(\s|$)", stripped)
        if not match:
            comments = []
            continue
        key = match.group(1).strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, key))
        found[".".join(k for _, k in stack)] = " ".join(comments)
        comments = []
    return found


def yaml_leaves(data: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """``(dotted key, value)`` for every value that is not a mapping."""
    if isinstance(data, dict) and data:
        out = []
        for key, value in data.items():
            out += yaml_leaves(value, f"{prefix}.{key}" if prefix else str(key))
        return out
    return [(prefix, data)]


def environment_variable(key: str) -> str:
    """The ``dask.config`` environment variable of a dotted key."""
    return "DASK_" + key.upper().replace(".", "__").replace("-", "_")


def format_default(value: Any) -> str:
    """A default value as the table shows it (lists are shown below the table)."""
    if isinstance(value, list):
        return f"a list of {len(value)} entr{'y' if len(value) == 1 else 'ies'} (below)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)
