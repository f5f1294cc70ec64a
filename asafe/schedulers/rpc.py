"""The RPC handlers asafe registers on a scheduler and on its workers, which keep no installation alive.

distributed calls an RPC handler (``Server.handlers[op]``) after asking
``distributed.core._expects_comm(handler)`` whether it takes the comm, and that
answer is cached with ``functools.cache``: keyed by the handler, never evicted.
A bound method of an installed plugin registered there (``plugin.hello``)
stays in that cache after the plugin is removed, and with it the plugin, its
runtime, tracker, forecast, history and timeline, for the life of the process.
Installed and uninstalled 40 times around a graph each, all 40 installations
were still in memory (``docs/results/leak-s41/``).

So each scheduler (and each worker) gets one :class:`Forwarder` for the life
of the process: its handlers are the same objects for every installation, and
forward to the installation attached now. A forwarder holds that installation
only between :meth:`Forwarder.attach` and :meth:`Forwarder.detach`, and the
servers themselves only weakly.
"""
from __future__ import annotations

import weakref
from typing import Any

__all__ = ["Forwarder", "forwarder", "register", "unregister"]

_FORWARDERS: weakref.WeakKeyDictionary[Any, "Forwarder"] = weakref.WeakKeyDictionary()


class Forwarder:
    """``server.handlers[op] = forwarder.handler(name)``: calls ``name`` on the installation attached now.

    Examples
    --------
    >>> class Plugin:
    ...     def hello(self, worker=None):
    ...         return f"hello {worker}"
    >>> f, plugin = Forwarder(), Plugin()
    >>> f.attach(plugin)
    >>> handler = f.handler("hello")
    >>> handler(worker="w1"), handler is f.handler("hello")
    ('hello w1', True)
    >>> f.detach(plugin)
    >>> f.plugin is None
    True
    """

    def __init__(self) -> None:
        self.plugin: Any = None
        self._handlers: dict[str, Any] = {}

    def attach(self, plugin: Any) -> None:
        """Forward to ``plugin`` from now on (a later installation replaces an earlier one)."""
        self.plugin = plugin

    def detach(self, plugin: Any) -> None:
        """Stop forwarding to ``plugin``, unless another installation has replaced it already."""
        if self.plugin is plugin:
            self.plugin = None

    def handler(self, name: str) -> Any:
        """The handler that calls ``name`` on the attached installation: one object per name, for good."""
        handler = self._handlers.get(name)
        if handler is None:
            handler = self._handlers[name] = _handler(self, name)
        return handler


def _handler(owner: Forwarder, name: str) -> Any:
    # Its first parameter is not named ``comm``: distributed calls it with the message's keywords only.
    def forward(**kwargs: Any) -> Any:
        plugin = owner.plugin
        if plugin is None:
            raise RuntimeError(f"asafe is not installed here (its {name!r} handler has no installation)")
        return getattr(plugin, name)(**kwargs)

    forward.__name__ = forward.__qualname__ = f"asafe_{name}"
    return forward


def forwarder(server: Any) -> Forwarder:
    """The :class:`Forwarder` of ``server`` (a scheduler or a worker), made on first use."""
    found = _FORWARDERS.get(server)
    if found is None:
        found = _FORWARDERS[server] = Forwarder()
    return found


def register(server: Any, plugin: Any, handlers: dict[str, str]) -> None:
    """Attach ``plugin`` to ``server``'s forwarder and set ``server.handlers[op]`` for each ``op: method name``."""
    found = forwarder(server)
    found.attach(plugin)
    server.handlers.update({op: found.handler(name) for op, name in handlers.items()})


def unregister(server: Any, plugin: Any, handlers: dict[str, str]) -> None:
    """Detach ``plugin`` and remove the handlers :func:`register` set, unless a newer installation replaced it
    (the handlers are then that installation's)."""
    found = forwarder(server)
    if found.plugin is not plugin:
        return
    found.detach(plugin)
    for op, name in handlers.items():
        if server.handlers.get(op) is found.handler(name):
            del server.handlers[op]
