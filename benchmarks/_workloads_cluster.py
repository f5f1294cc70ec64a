"""The public-workloads suite on a cluster: each variant installed and removed, the placement restored.

Also one timed sample (:func:`_run_once`). See :mod:`benchmarks.workloads`.
"""
from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from typing import Any


from ._workloads_data import array_digest, frame_digest
from ._workloads_defs import Spec, Workload


_FALLBACK_CODECS = ("lz4", "zstd")


__all__ = [
    "codec_states",
    "variant_names",
    "CONTROL",
]

# --------------------------------------------------------------------------- variants
def codec_states() -> tuple[str, ...]:
    """The codecs that ``wire-compression`` may be forced to (``wire.CODEC_STATES``, else lz4 and zstd)."""
    from asafe.schedulers import wire

    return tuple(getattr(wire, "CODEC_STATES", _FALLBACK_CODECS))


#: Plain Dask timed again as a variant of its own: an A/A control of the suite's statistics
#: (how many rows put their interval wholly on one side of 1 with no code changed). Not in
#: the default variants; ``--variants dask,dask-control,asafe`` asks for it.
CONTROL = "dask-control"


def variant_names(codecs: Sequence[str] | None = None) -> list[str]:
    """``dask``, ``asafe`` and ``static-<codec>`` for every codec.

    >>> variant_names(["lz4", "zstd"])
    ['dask', 'asafe', 'static-lz4', 'static-zstd']
    """
    return ["dask", "asafe"] + [f"static-{c}" for c in (codec_states() if codecs is None else codecs)]


def _finite(value: Any) -> float | None:
    """``value`` as a float for JSON, None where it is not finite."""
    value = float(value)
    return value if math.isfinite(value) else None


def _install(client: Any, variant: str) -> Any:
    import asafe

    if variant in ("dask", CONTROL):
        return None
    if variant == "asafe":
        return asafe.install(client)  # its defaults: a fresh AdaptiveRuntime() every time
    codec = variant.removeprefix("static-")
    runtime = asafe.AdaptiveRuntime([asafe.Optimization("wire-compression", asafe.Fixed(codec), initial=codec)])
    return asafe.install(client, runtime)


def _worker_wire_state() -> dict[str, Any]:
    from asafe.schedulers import board, wire

    return {"enabled": wire.enabled(), "on": wire.stats().get("on", False),
            "state": board.snapshot().get(wire.NAME)}


def _expected_state(variant: str) -> Any:
    """The wire state a variant must find on every worker before its sample (None: not installed)."""
    if variant in ("dask", CONTROL):
        return None
    if variant == "asafe":
        return "any"
    return variant.removeprefix("static-")


def _uninstall(client: Any, handle: Any) -> None:
    from asafe.schedulers import wire

    if handle is not None:
        handle.uninstall()
    client.run(wire.disable)
    wire.disable()


def _check_state(client: Any, variant: str) -> str | None:
    """Raise where plain Dask would see asafe; return why a static variant's state is missing."""
    from asafe.schedulers import wire

    states = client.run(_worker_wire_state)
    expected = _expected_state(variant)
    if expected is None:
        leftover = {w: s for w, s in states.items() if s["enabled"] or s["on"] or s["state"] is not None}
        if leftover or wire.enabled():
            raise RuntimeError(f"the dask variant would see asafe left by the previous variant: workers {leftover}, "
                               f"client serializers wrapped {wire.enabled()}")
        return None
    if expected == "any":
        return None
    wrong = {w: s["state"] for w, s in states.items() if s["state"] != expected}
    return f"wire-compression state {expected!r} did not reach workers {wrong}" if wrong else None


def _wire_counters(client: Any) -> tuple[dict[str, float], dict[str, dict]]:
    from asafe.schedulers import wire

    per_worker = client.run(wire.stats)
    total: dict[str, float] = {}
    for counters in per_worker.values():
        for key, value in counters.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value
    return total, per_worker


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process so far (every thread: tasks, comms, codecs)."""
    times = os.times()
    return times.user + times.system


def _link_bytes() -> int | None:
    try:
        import psutil

        counters = psutil.net_io_counters(pernic=True).get("lo")
    except Exception:  # a record must not fail the run it records
        return None
    return None if counters is None else int(counters.bytes_sent)


# --------------------------------------------------------------------------- cluster housekeeping
def _keys_of(outputs: list) -> list:
    from dask.core import flatten
    from distributed import Future

    keys: list = []
    for out in outputs:
        if isinstance(out, Future):
            keys.append(out.key)
        else:
            keys.extend(flatten(out.__dask_keys__()))
    return keys


def _known(dask_scheduler: Any, keys: list) -> int:
    tasks = dask_scheduler.tasks
    return sum(1 for k in keys if k in tasks)


def _wait_forgotten(client: Any, keys: list, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while client.run_on_scheduler(_known, keys=keys):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the scheduler still holds outputs of the previous sample after {timeout:.0f} s")
        time.sleep(0.02)


def _holders(dask_scheduler: Any, keys: list) -> dict:
    return {k: sorted(ws.address for ws in dask_scheduler.tasks[k].who_has) for k in keys
            if k in dask_scheduler.tasks}


def _restore_step(dask_scheduler: Any, placement: dict) -> int:
    """One step back to ``placement`` (key -> its original worker); returns the keys not there yet.

    A key with several replicas loses those not on its original worker; a key
    whose only replica is elsewhere (the Active Memory Manager dropped the
    original during the sample) is fetched back by its original worker first.
    The scheduler's own housekeeping calls, as the Active Memory Manager uses them.
    """
    stimulus = f"asafe-workloads-placement-{time.time()}"
    pending = 0
    for key, original in placement.items():
        ts = dask_scheduler.tasks.get(key)
        if ts is None or original not in dask_scheduler.workers:
            continue
        holders = {ws.address for ws in ts.who_has or ()}
        if holders == {original} or not holders:
            continue
        pending += 1
        if original in holders:
            for addr in sorted(holders - {original}):
                dask_scheduler.request_remove_replicas(addr, [key], stimulus_id=stimulus)
        else:
            dask_scheduler.request_acquire_replicas(original, [key], stimulus_id=stimulus)
    return pending


def _restore_placement(client: Any, placement: dict, timeout: float = 60.0) -> int:
    """Put the inputs back where they were made, one replica each; returns how many keys had moved or spread."""
    if not placement:
        return 0
    first = client.run_on_scheduler(_restore_step, placement=placement)
    deadline = time.monotonic() + timeout
    pending = first
    while pending:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{pending} inputs were not back on their workers within {timeout:.0f} s")
        time.sleep(0.05)
        pending = client.run_on_scheduler(_restore_step, placement=placement)
    return first


# --------------------------------------------------------------------------- one sample
def _digest(client: Any, workload: Workload, outputs: list) -> list[dict]:
    import dask
    from distributed import Future

    if workload.family == "futures":
        futures = [client.submit(array_digest, f, pure=False) for f in outputs if isinstance(f, Future)]
        return client.gather(futures)
    function = array_digest if workload.family == "array" else (
        lambda part: frame_digest(part, workload.sort_by))
    pieces = [d for out in outputs
              for d in (out.to_delayed().ravel() if workload.family == "array" else out.to_delayed())]
    parts = [dask.delayed(function, pure=False)(d) for d in pieces]
    return list(client.compute(parts, sync=True))


def _run_once(client: Any, workload: Workload, spec: Spec, inputs: dict, placement: dict,
              variant: str, handle: Any) -> dict[str, Any]:
    """Time one run of ``variant`` (already installed as ``handle``); uninstall, digest, clean up."""
    from distributed import wait

    record: dict[str, Any] = {"variant": variant}
    outputs: list = []
    built: list = []
    try:
        missing = _check_state(client, variant)
        if missing:
            record["error"] = missing
            return record
        client.run(_reset_wire)
        cpu_before = client.run(_cpu_seconds)
        lo_before = _link_bytes()
        here_before = _cpu_seconds()
        wall = time.time()
        start = time.perf_counter()
        built = workload.run(client, inputs, spec)
        outputs = built if workload.family == "futures" else client.persist(built)
        wait(outputs)
        record["seconds"] = time.perf_counter() - start
        here_after = _cpu_seconds()
        lo_after = _link_bytes()
        cpu_after = client.run(_cpu_seconds)
        record["link_bytes"] = None if lo_before is None or lo_after is None else lo_after - lo_before
        record["cpu_s"] = {"workers": sum(cpu_after[w] - cpu_before[w] for w in cpu_after if w in cpu_before),
                           "scheduler_and_client": here_after - here_before}
        record["wire"], record["wire_per_worker"] = _wire_counters(client)
        if handle is not None:
            record["state_at_end"] = handle.states.get("wire-compression")
            changes = [t for t in handle.history if t.optimization == "wire-compression" and t.time >= wall - 1.0]
            record["transitions"] = [[round(t.time - wall, 3), t.old, t.new] for t in changes]
            # what each change read: the ratio and the signals (a change late in a run says which was late)
            record["transition_modes"] = [{"ratio": _finite(t.mode.ratio),
                                           "signals": {k: _finite(v) for k, v in t.mode.signals.items()}}
                                          for t in changes]
    except Exception as exc:  # a variant that raises is reported, the others go on
        record["error"] = f"raised: {type(exc).__name__}: {exc}"
    finally:
        _uninstall(client, handle)
    try:
        if "error" not in record:
            record["digest"] = _digest(client, workload, outputs)
    except Exception as exc:
        record["error"] = f"its result could not be read: {type(exc).__name__}: {exc}"
    keys = _keys_of(outputs)
    del outputs, built
    _wait_forgotten(client, keys)
    record["spread_inputs"] = _restore_placement(client, placement)
    return record


def _reset_wire() -> None:
    from asafe.schedulers import wire

    wire.reset_stats()
