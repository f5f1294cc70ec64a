"""asafe on a Dask cluster: scheduler and worker plugins (see the distributed issue)."""
from __future__ import annotations

from typing import Any

__all__ = ["install"]


def install(client: Any, runtime: Any) -> Any:
    """Install a runtime on the cluster behind ``client``.

    Raises
    ------
    NotImplementedError
        Until the cluster plugins land.
    """
    raise NotImplementedError("asafe.install(client, runtime) is not available yet")
