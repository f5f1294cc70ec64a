"""Declared reuse on a LocalCluster: a local phase whose outputs are read often runs compressed from its first task.

Local tasks compute and move nothing, so the compute/communication ratio says
*off* whatever they make. A phase whose tasks declare, with
:func:`asafe.reuse`, that each output is read 16 times has a reason to compress
that the ratio cannot see; the scheduler plugin carries the declarations as the
mode's ``reuse`` signal from the moment the graph arrives, so the compression
domain ``AnyOf(ratio, AtLeast("reuse", 8))`` is on when the phase's first task
starts -- and off again when the next phase declares a single read.
"""
from __future__ import annotations

import math

import dask
import numpy as np

import asafe

TASKS = 16


@asafe.typed("compute")
def panel(i):
    started = asafe.is_on("compression")
    a = np.random.default_rng(i).random((160, 160))
    for _ in range(6):  # real work, a few ms
        a = np.linalg.qr(a)[0]
    return started, float(a[0, 0])


def local_phase(client, tag, reads=None):
    keys = [f"panel-{tag}-{i}" for i in range(TASKS)]
    if reads is None:
        done = client.map(panel, range(TASKS), key=keys, pure=False)
    else:
        with asafe.reuse(reads):
            done = client.map(panel, range(TASKS), key=keys, pure=False)
    return [state for state, _ in client.gather(done)]


def _domain():
    return asafe.AnyOf([asafe.Hysteresis(1.0, 4.0), asafe.AtLeast("reuse", on=8)])


def test_declared_reuse_switches_a_local_phase_before_it_runs(client, make_runtime, installed):
    rt = make_runtime(domain=_domain(), window=TASKS, dwell=0.0, dwell_tasks=0, blend=0.1)
    with installed(client, rt) as handle:
        undeclared = local_phase(client, "u")
        reused = local_phase(client, "r16", reads=16)
        mode_after = handle.mode
        once = local_phase(client, "r1", reads=1)
        reused_again = local_phase(client, "r16b", reads=16)
        info = handle.info("plugin", "history")
    assert undeclared == [False] * TASKS  # compute only, nothing declared: the ratio decides, off
    assert reused == [True] * TASKS  # every task, the first included, ran compressed
    assert once == [False] * TASKS  # a single read declared: off before the phase's first task
    assert reused_again == [True] * TASKS
    # between phases the signal remembers the last declarations (a window of finished tasks)
    signals = mode_after.signals
    assert signals["reuse"] == 16.0
    reuse = info["plugin"]["reuse"]
    assert reuse["scheduled"] == 0 and reuse["value"] == 16.0 and reuse["ignored_annotations"] == 0
    # one transition per change of declared reuse: on, off, on
    assert [new for _, name, _, new, *_ in info["history"] if name == "compression"] == [True, False, True]


def test_a_bad_reuse_annotation_is_ignored_and_counted(client, make_runtime, installed):
    rt = make_runtime(domain=_domain(), window=TASKS, dwell=0.0, dwell_tasks=0, blend=0.1)
    with installed(client, rt) as handle:
        with dask.annotate(asafe_reuse="many"):  # not through asafe.reuse, which would refuse it
            done = client.map(panel, range(TASKS), key=[f"panel-bad-{i}" for i in range(TASKS)], pure=False)
        states = [state for state, _ in client.gather(done)]
        reuse = handle.info("plugin")["plugin"]["reuse"]
        errors = handle.info("plugin")["plugin"]["errors"]
    assert states == [False] * TASKS  # scheduled as undeclared: nothing lost, nothing switched
    assert reuse["ignored_annotations"] == TASKS
    assert math.isnan(reuse["value"])
    assert not errors  # not a plugin failure
