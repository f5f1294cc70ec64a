"""The distributed tiled matvec (asafe.compression.distributed) on a LocalCluster."""
from __future__ import annotations

import numpy as np
import pytest

import asafe
from asafe.compression import distributed as dmv
from asafe.compression import graph500
from asafe.core.types import type_of_callable

pytestmark = pytest.mark.timeout(180)

SCALE, TILE, DENSE = 9, 64, 0.1


class Pinned(asafe.EfficiencyDomain):
    """Keeps the optimization in its initial state."""

    def decide(self, mode, state):
        return state


@pytest.fixture(scope="module")
def problem():
    S = graph500.mixed_matrix(SCALE, TILE, DENSE, seed=0)
    x = np.random.default_rng(0).random(S.shape[1])
    return dmv.Graph500Source(SCALE, TILE, DENSE, seed=0), x, S @ x


def test_tasks_are_typed():
    assert type_of_callable(dmv.produce_panel) == asafe.COMPUTE
    assert type_of_callable(dmv.multiply_panel) == asafe.COMPUTE
    assert type_of_callable(dmv.assemble) == asafe.COMMUNICATION


@pytest.mark.parametrize("compression", [False, True])
def test_matvec_pinned_across_workers(client, problem, installed, compression):
    source, x, reference = problem
    producer, consumer = sorted(client.nthreads())
    rt = asafe.AdaptiveRuntime([asafe.Optimization("compression", Pinned(), initial=compression)], signals=False)
    with installed(client, rt) as handle:
        y = dmv.matvec(client, source, x, panels=4, producers=[producer], consumers=[consumer])
        np.testing.assert_allclose(y, reference, rtol=1e-12, atol=1e-10)
        transfers = handle.info("plugin")["plugin"]["transfers"]
        # every panel crossed from the producer to the consumer: 512 x 512 float64 = 2 MiB dense
        assert transfers["logical_bytes"] >= 512 * 512 * 8
        if compression:
            assert transfers["wire_bytes"] < transfers["logical_bytes"] / 2
        else:
            assert transfers["wire_bytes"] >= 512 * 512 * 8  # every tile travelled dense
        assert handle.finished >= 4 + 4 + 1  # producers, multiplies, assemble


def test_matvec_unpinned_adaptive(client, problem, installed):
    source, x, reference = problem
    with installed(client, asafe.AdaptiveRuntime(signals=False)):
        y = dmv.matvec(client, source, x)
        np.testing.assert_allclose(y, reference, rtol=1e-12, atol=1e-10)


def test_matvec_graph_rejects_bad_x(problem):
    source, _, _ = problem
    with pytest.raises(ValueError, match="x must be 1-D of length 512"):
        dmv.matvec_graph(source, np.ones(3))
