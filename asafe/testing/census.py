"""A preload that counts the distributed servers running asafe, for the peer-suite check.

:mod:`asafe.testing.peer` in cluster mode names this module after ``asafe.preload``
in ``distributed.scheduler.preload`` and ``distributed.worker.preload`` when it
records outcomes. distributed runs preloads in order, so when :func:`dask_setup`
runs, ``asafe.preload`` has already installed (or failed to install) its plugin:
it appends one JSON line per server, ``{"kind": "scheduler", "asafe": true,
"pid": ...}``, to the file named by ``$ASAFE_PEER_CENSUS``, which processes the
tests start inherit. The runner sums the lines, so that a table can tell "the
outcomes were the same and asafe ran on every server" from "asafe never ran".
Without ``$ASAFE_PEER_CENSUS`` it does nothing. It imports only the standard
library; ``asafe.testing`` imports the ``asafe`` package, which the server has
already imported for ``asafe.preload``.
"""
from __future__ import annotations

import json
import os
from typing import Any

__all__ = ["ENV", "dask_setup", "count"]

#: The environment variable naming the census file.
ENV = "ASAFE_PEER_CENSUS"


async def dask_setup(server: Any) -> None:
    """Append a line for ``server`` (a Scheduler or Worker; a Nanny is not counted)."""
    path = os.environ.get(ENV)
    kind = type(server).__name__.lower()
    if not path or kind == "nanny":
        return
    plugins = getattr(server, "plugins", {}) or {}
    line = json.dumps({"kind": "scheduler" if "scheduler" in kind else "worker", "asafe": "asafe" in plugins,
                       "pid": os.getpid()})
    with open(path, "a", encoding="utf-8") as stream:  # one short write: lines of processes do not mix
        stream.write(line + "\n")


def count(path: str) -> dict[str, dict[str, int]]:
    """The census file's lines summed: ``{"scheduler": {"asafe": n, "without": m}, "worker": {...}}``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "census"
    >>> _ = f.write_text('{"kind": "scheduler", "asafe": true}\\n{"kind": "worker", "asafe": false}\\n')
    >>> count(str(f))
    {'scheduler': {'asafe': 1, 'without': 0}, 'worker': {'asafe': 0, 'without': 1}}
    """
    totals = {"scheduler": {"asafe": 0, "without": 0}, "worker": {"asafe": 0, "without": 0}}
    if not os.path.exists(path):
        return totals
    with open(path, encoding="utf-8") as stream:
        for line in stream:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            kind = totals.get(record.get("kind"))
            if kind is not None:
                kind["asafe" if record.get("asafe") else "without"] += 1
    return totals
