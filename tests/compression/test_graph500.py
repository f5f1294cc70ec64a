"""Tests of asafe.compression.graph500 (Graph500 Kronecker graphs and mixed matrices)."""
import doctest
import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

from asafe.compression import graph500 as g500
from asafe.compression.graph500 import (
    GraphTooLargeError,
    dense_tiles,
    iter_mixed_tiles,
    kronecker,
    kronecker_edges,
    mixed_matrix,
)


# --------------------------------------------------------------------------- helpers


def reference_kernel_1(ij, n):
    """Independent transcription of the Graph500 octave kernel_1.m (fixed size n)."""
    ij = ij[:, ij[0] != ij[1]]
    g = sp.coo_matrix((np.ones(ij.shape[1]), (ij[0], ij[1])), shape=(n, n)).tocsr()
    g = (g + g.T).tocsr()
    g.data[:] = 1.0  # spones
    return g


def assemble(tiles, n, tile):
    """Build the N x N CSR matrix from iter_mixed_tiles output."""
    rows, cols, vals = [], [], []
    for (rb, cb), t in tiles:
        c = sp.coo_matrix(t)
        rows.append(c.row + rb * tile)
        cols.append(c.col + cb * tile)
        vals.append(c.data)
    if not rows:
        return sp.csr_matrix((n, n))
    return sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n)
    )


def same_matrix(a, b):
    """Exact equality of two sparse matrices (pattern and values)."""
    a = sp.csr_matrix(a)
    b = sp.csr_matrix(b)
    a.sort_indices()
    b.sort_indices()
    return (
        a.shape == b.shape
        and np.array_equal(a.indptr, b.indptr)
        and np.array_equal(a.indices, b.indices)
        and np.array_equal(a.data, b.data)
    )


def half_up(x):
    return math.floor(x + 0.5)


# --------------------------------------------------------------------------- doctests


def test_doctests():
    result = doctest.testmod(g500, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 10
    assert result.failed == 0


def test_all_names_exist():
    for name in g500.__all__:
        assert hasattr(g500, name)


# --------------------------------------------------------------------------- edges


def test_edges_shape_dtype_range():
    ij = kronecker_edges(6, edgefactor=8, seed=3)
    assert ij.shape == (2, 8 * 64)
    assert ij.dtype == np.int64
    assert ij.min() >= 0 and ij.max() < 64


def test_edges_keep_self_loops_and_duplicates():
    ij = kronecker_edges(4, edgefactor=16, seed=0)  # 256 edges on 16 vertices
    assert np.any(ij[0] == ij[1])
    keys = ij[0] * 16 + ij[1]
    assert np.unique(keys).size < keys.size


def test_edges_deterministic():
    a = kronecker_edges(8, seed=5)
    assert np.array_equal(a, kronecker_edges(8, seed=5))
    assert not np.array_equal(a, kronecker_edges(8, seed=6))


def test_initiator_quadrant_probabilities():
    # At scale 1 an edge lands in quadrant A (0,0), B (0,1), C (1,0) or D (1,1) with
    # probabilities 0.57, 0.19, 0.19, 0.05; the label permutation may swap 0 and 1, which
    # exchanges A <-> D and B <-> C.
    ij = kronecker_edges(1, edgefactor=100_000, seed=11)  # 200k edges
    m = ij.shape[1]
    counts = {(a, b): np.sum((ij[0] == a) & (ij[1] == b)) / m for a in (0, 1) for b in (0, 1)}
    big, small = sorted([counts[0, 0], counts[1, 1]], reverse=True)
    assert big == pytest.approx(0.57, abs=0.01)
    assert small == pytest.approx(0.05, abs=0.01)
    assert counts[0, 1] == pytest.approx(0.19, abs=0.01)
    assert counts[1, 0] == pytest.approx(0.19, abs=0.01)


# --------------------------------------------------------------------------- kronecker


@pytest.mark.parametrize("scale", [1, 2, 4, 9])
def test_shape_dtype_format(scale):
    g = kronecker(scale)
    n = 2**scale
    assert isinstance(g, sp.csr_matrix)
    assert g.shape == (n, n)
    assert g.dtype == np.float64
    assert g.has_canonical_format
    assert np.all(g.data == 1.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_symmetric_no_self_loops(seed):
    g = kronecker(9, seed=seed)
    assert (g != g.T).nnz == 0
    assert not g.diagonal().any()


@pytest.mark.parametrize("scale,edgefactor,seed", [(4, 16, 0), (8, 4, 3), (10, 16, 7)])
def test_matches_reference_kernel_1(scale, edgefactor, seed):
    ij = kronecker_edges(scale, edgefactor=edgefactor, seed=seed)
    expected = reference_kernel_1(ij, 2**scale)
    assert same_matrix(kronecker(scale, edgefactor=edgefactor, seed=seed), expected)


def test_deterministic_and_seed_dependent():
    a = kronecker(10, seed=0)
    assert same_matrix(a, kronecker(10, seed=0))
    assert same_matrix(a, kronecker(10, seed=np.int64(0)))
    assert not same_matrix(a, kronecker(10, seed=1))


@pytest.mark.parametrize("scale", [10, 12])
def test_edge_count_consistent_with_m(scale):
    g = kronecker(scale)
    m = 16 * 2**scale
    undirected = g.nnz // 2
    assert g.nnz % 2 == 0
    # Self-loops and duplicates are removed, so fewer than M edges survive, but most do.
    assert 0.5 * m < undirected < m


def test_edgefactor_scales_edges():
    small = kronecker(10, edgefactor=2).nnz
    large = kronecker(10, edgefactor=16).nnz
    assert 4 * small < large


def test_degree_skew():
    g = kronecker(12, seed=0)
    deg = np.diff(g.indptr)
    assert deg.max() > 20 * deg.mean()
    top = np.sort(deg)[::-1][: len(deg) // 100]
    assert top.sum() > 0.1 * deg.sum()  # an Erdos-Renyi graph gives about 0.02
    assert np.mean(deg == 0) > 0.05  # Kronecker graphs leave many vertices isolated


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_labels_are_permuted(seed):
    # Without the relabelling, vertex 0 (all-A bits) would be the hub and degree would fall
    # with the number of one bits of the label.
    g = kronecker(10, seed=seed)
    deg = np.diff(g.indptr)
    assert deg.argmax() != 0
    rho = spearmanr(np.arange(deg.size), deg).statistic
    assert abs(rho) < 0.15
    ones = np.array([bin(v).count("1") for v in range(deg.size)])
    assert abs(spearmanr(ones, deg).statistic) < 0.15


# --------------------------------------------------------------------------- dense tiles


@pytest.mark.parametrize(
    "scale,tile,fraction",
    [(4, 4, 0.25), (6, 8, 0.1), (7, 10, 0.3), (8, 16, 0.5), (5, 7, 0.77), (3, 1, 0.5),
     (4, 100, 1.0), (4, 100, 0.4), (4, 100, 0.6)],
)
def test_dense_tile_count_exact(scale, tile, fraction):
    nb = -(-(2**scale) // tile)
    t = dense_tiles(scale, tile, fraction, seed=4)
    assert len(t) == half_up(fraction * nb * nb)


def test_dense_tile_rounding_half_up():
    # 2 x 2 grid: 0.125 * 4 = 0.5 -> 1 tile, 0.375 * 4 = 1.5 -> 2 tiles, 0.1 * 4 = 0.4 -> 0.
    assert len(dense_tiles(2, 2, 0.125)) == 1
    assert len(dense_tiles(2, 2, 0.375)) == 2
    assert len(dense_tiles(2, 2, 0.1)) == 0


def test_dense_tiles_extremes():
    empty = dense_tiles(6, 8, 0.0)
    assert empty.shape == (0, 2) and empty.dtype == np.int64
    full = dense_tiles(6, 8, 1.0)
    expected = np.array([(i, j) for i in range(8) for j in range(8)])
    assert np.array_equal(full, expected)


@settings(max_examples=60, deadline=None)
@given(
    scale=st.integers(1, 9),
    tile=st.integers(1, 64),
    fraction=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**32),
)
def test_dense_tiles_properties(scale, tile, fraction, seed):
    nb = -(-(2**scale) // tile)
    t = dense_tiles(scale, tile, fraction, seed=seed)
    assert t.dtype == np.int64 and t.ndim == 2 and t.shape[1] == 2
    assert len(t) == half_up(fraction * nb * nb)
    assert t.min(initial=0) >= 0 and t.max(initial=0) < nb
    pairs = [tuple(p) for p in t.tolist()]
    assert pairs == sorted(set(pairs))  # unique, row-major
    assert set(pairs) == {(j, i) for i, j in pairs}  # symmetric
    assert np.array_equal(t, dense_tiles(scale, tile, fraction, seed=seed))


def test_dense_tiles_seed_dependent():
    a = dense_tiles(10, 32, 0.2, seed=0)
    assert np.array_equal(a, dense_tiles(10, 32, 0.2, seed=0))
    assert not np.array_equal(a, dense_tiles(10, 32, 0.2, seed=1))


def test_dense_tiles_spread_over_grid():
    # Both diagonal and off-diagonal tiles are drawn, in about the proportion of the grid.
    t = dense_tiles(10, 16, 0.5, seed=0)  # 64 x 64 grid, 2048 tiles
    diag = np.sum(t[:, 0] == t[:, 1])
    assert 16 <= diag <= 48  # expectation 32
    assert len(np.unique(t[:, 0])) == 64


# --------------------------------------------------------------------------- mixed matrix


def tile_slice(m, rb, cb, tile):
    return m[rb * tile:(rb + 1) * tile, cb * tile:(cb + 1) * tile]


@pytest.mark.parametrize("scale,tile,fraction", [(8, 16, 0.25), (7, 10, 0.3), (6, 5, 0.5)])
def test_mixed_matrix_structure(scale, tile, fraction):
    n = 2**scale
    m = mixed_matrix(scale, tile, fraction, seed=2)
    g = kronecker(scale, seed=2)
    assert isinstance(m, sp.csr_matrix)
    assert m.shape == (n, n) and m.dtype == np.float64 and m.has_canonical_format
    assert (m != m.T).nnz == 0
    assert np.all(m.data > 0) and np.all(m.data <= 1)
    blocks = dense_tiles(scale, tile, fraction, seed=2)
    mask = np.zeros((n, n), dtype=bool)
    for rb, cb in blocks:
        mask[rb * tile:(rb + 1) * tile, cb * tile:(cb + 1) * tile] = True
    dm, dg = m.toarray(), g.toarray()
    assert np.all(dm[mask] != 0)  # dense tiles are fully dense (graph entries overwritten)
    assert np.array_equal(dm[~mask], dg[~mask])  # the graph is untouched elsewhere
    assert not np.all(dm[mask] == 1.0)  # dense values are not the graph's 1.0


def test_mixed_matrix_fully_dense_tile_count():
    scale, tile, fraction = 9, 32, 0.2
    nb = 2**scale // tile
    m = mixed_matrix(scale, tile, fraction, seed=0)
    full = [
        (rb, cb)
        for rb in range(nb)
        for cb in range(nb)
        if tile_slice(m, rb, cb, tile).nnz == tile * tile
    ]
    assert len(full) == half_up(fraction * nb * nb)
    assert np.array_equal(np.array(full), dense_tiles(scale, tile, fraction, seed=0))


def test_mixed_matrix_zero_fraction_is_graph():
    assert same_matrix(mixed_matrix(8, 16, 0.0, seed=1), kronecker(8, seed=1))


def test_mixed_matrix_full_fraction_is_dense():
    m = mixed_matrix(5, 8, 1.0)
    assert m.nnz == 32 * 32
    assert np.allclose(m.toarray(), m.toarray().T)


def test_mixed_matrix_deterministic():
    a = mixed_matrix(8, 16, 0.3, seed=9)
    assert same_matrix(a, mixed_matrix(8, 16, 0.3, seed=9))
    assert not same_matrix(a, mixed_matrix(8, 16, 0.3, seed=10))


def test_mixed_matrix_edgefactor_keeps_dense_tiles():
    a = mixed_matrix(8, 16, 0.3, edgefactor=4, seed=1)
    b = mixed_matrix(8, 16, 0.3, edgefactor=16, seed=1)
    for rb, cb in dense_tiles(8, 16, 0.3, seed=1):
        assert np.array_equal(
            tile_slice(a, rb, cb, 16).toarray(), tile_slice(b, rb, cb, 16).toarray()
        )


def test_edge_tiles():
    # 2**7 = 128 = 12 * 10 + 8: a 13 x 13 grid whose last row and column are 8 wide.
    scale, tile = 7, 10
    tiles = dict(iter_mixed_tiles(scale, tile, 1.0, seed=0))
    assert len(tiles) == 13 * 13
    assert tiles[12, 12].shape == (8, 8)
    assert tiles[0, 12].shape == (10, 8)
    assert tiles[12, 3].shape == (8, 10)
    assert all(isinstance(t, np.ndarray) and np.all(t > 0) for t in tiles.values())
    sparse_tiles = dict(iter_mixed_tiles(scale, tile, 0.0, seed=0))
    for (rb, cb), t in sparse_tiles.items():
        h = 8 if rb == 12 else 10
        w = 8 if cb == 12 else 10
        assert isinstance(t, sp.csr_matrix) and t.shape == (h, w) and t.nnz > 0


def test_tile_larger_than_matrix():
    m = mixed_matrix(4, 100, 1.0)
    assert m.nnz == 256
    (pos, t), = list(iter_mixed_tiles(4, 100, 1.0))
    assert pos == (0, 0) and t.shape == (16, 16)
    assert np.array_equal(t, m.toarray())


# --------------------------------------------------------------------------- streaming


@pytest.mark.parametrize(
    "scale,tile,fraction,edgefactor,seed",
    [(8, 16, 0.25, 16, 0), (7, 10, 0.3, 8, 1), (6, 64, 0.5, 16, 2), (5, 3, 0.6, 4, 3),
     (4, 100, 0.0, 16, 4), (6, 8, 0.0, 16, 5), (5, 4, 1.0, 16, 6), (9, 32, 0.1, 16, 7)],
)
def test_streaming_equals_mixed_matrix(scale, tile, fraction, edgefactor, seed):
    n = 2**scale
    tiles = list(iter_mixed_tiles(scale, tile, fraction, edgefactor=edgefactor, seed=seed))
    positions = [pos for pos, _ in tiles]
    assert positions == sorted(set(positions))  # row-major, each tile once
    dense = [pos for pos, t in tiles if isinstance(t, np.ndarray)]
    assert dense == [tuple(p) for p in dense_tiles(scale, tile, fraction, seed=seed).tolist()]
    for _, t in tiles:
        if isinstance(t, np.ndarray):
            assert t.dtype == np.float64 and t.ndim == 2 and np.all(t > 0)
        else:
            assert isinstance(t, sp.csr_matrix) and t.nnz > 0 and t.has_sorted_indices
    expected = mixed_matrix(scale, tile, fraction, edgefactor=edgefactor, seed=seed)
    assert same_matrix(assemble(tiles, n, tile), expected)


@settings(max_examples=15, deadline=None)
@given(
    scale=st.integers(1, 6),
    tile=st.integers(1, 20),
    fraction=st.floats(0.0, 1.0),
    seed=st.integers(0, 1000),
)
def test_streaming_equals_mixed_matrix_property(scale, tile, fraction, seed):
    tiles = list(iter_mixed_tiles(scale, tile, fraction, edgefactor=4, seed=seed))
    expected = mixed_matrix(scale, tile, fraction, edgefactor=4, seed=seed)
    assert same_matrix(assemble(tiles, 2**scale, tile), expected)


def test_streaming_skips_empty_tiles():
    scale, tile = 8, 8  # 32 x 32 grid; a sparse Kronecker graph leaves many tiles empty
    tiles = list(iter_mixed_tiles(scale, tile, 0.0))
    assert 0 < len(tiles) < 32 * 32
    g = kronecker(scale)
    nonempty = {
        (rb, cb) for rb in range(32) for cb in range(32) if tile_slice(g, rb, cb, tile).nnz
    }
    assert {pos for pos, _ in tiles} == nonempty


# --------------------------------------------------------------------------- seeds


def test_generator_seeds():
    a = kronecker(8, seed=np.random.default_rng(3))
    b = kronecker(8, seed=np.random.default_rng(3))
    assert same_matrix(a, b)
    ss = np.random.SeedSequence(3)
    assert same_matrix(kronecker(8, seed=ss), kronecker(8, seed=np.random.SeedSequence(3)))
    assert kronecker(8, seed=np.random.PCG64(3)).shape == (256, 256)
    rng = np.random.default_rng(3)
    # A generator is a source of seeds: its state advances, so a second call differs.
    assert not same_matrix(kronecker(8, seed=rng), kronecker(8, seed=rng))


# --------------------------------------------------------------------------- bad inputs

ALL = [kronecker, kronecker_edges]
MIXED = [mixed_matrix, iter_mixed_tiles]


def call(fn, **kw):
    """Call fn with valid defaults overridden by kw."""
    args = {"scale": 4, "edgefactor": 16, "seed": 0}
    if fn in MIXED or fn is dense_tiles:
        args.update(tile=4, dense_fraction=0.5)
    if fn is dense_tiles:
        args.pop("edgefactor")
    args.update(kw)
    return fn(**args)


SEED = r"seed must be an int >= 0 or a numpy.random Generator, BitGenerator or SeedSequence"
BAD = [
    ("scale", 0, ValueError, r"scale must be an int in \[1, 40\], got 0"),
    ("scale", 41, ValueError, r"scale must be an int in \[1, 40\], got 41"),
    ("scale", -3, ValueError, r"scale must be an int in \[1, 40\], got -3"),
    ("scale", 2.5, TypeError, r"scale must be an int in \[1, 40\], got 2.5 of type float"),
    ("scale", "4", TypeError, r"scale must be an int in \[1, 40\], got '4' of type str"),
    ("scale", True, TypeError, r"scale must be an int in \[1, 40\], got the bool True"),
    ("scale", None, TypeError, r"scale must be an int in \[1, 40\], got None"),
    ("seed", -1, ValueError, SEED + r", got -1"),
    ("seed", 1.5, TypeError, SEED + r", got 1.5 of type float"),
    ("seed", "0", TypeError, SEED + r", got '0' of type str"),
    ("seed", True, TypeError, SEED + r", got the bool True"),
    ("seed", None, TypeError, SEED + r", got None \(results are deterministic per seed"),
]
BAD_EDGEFACTOR = [
    ("edgefactor", 0, ValueError, r"edgefactor must be an int >= 1, got 0"),
    ("edgefactor", 1.5, TypeError, r"edgefactor must be an int >= 1, got 1.5 of type float"),
    ("edgefactor", False, TypeError, r"edgefactor must be an int >= 1, got the bool False"),
]
FRACTION = r"dense_fraction must be a float in \[0, 1\]"
BAD_TILE = [
    ("tile", 0, ValueError, r"tile must be an int >= 1, got 0"),
    ("tile", -8, ValueError, r"tile must be an int >= 1, got -8"),
    ("tile", 4.0, TypeError, r"tile must be an int >= 1, got 4.0 of type float"),
    ("dense_fraction", -0.1, ValueError, FRACTION + r", got -0.1"),
    ("dense_fraction", 1.5, ValueError, FRACTION + r", got 1.5"),
    ("dense_fraction", float("nan"), ValueError, FRACTION + r", got nan"),
    ("dense_fraction", "0.5", TypeError, FRACTION + r", got '0.5' of type str"),
    ("dense_fraction", True, TypeError, FRACTION + r", got True of type bool"),
    ("dense_fraction", None, TypeError, FRACTION + r", got None"),
]


def _cases():
    for fn in ALL + MIXED + [dense_tiles]:
        for case in BAD:
            yield fn, case
        if fn is not dense_tiles:
            for case in BAD_EDGEFACTOR:
                yield fn, case
        if fn in MIXED or fn is dense_tiles:
            for case in BAD_TILE:
                yield fn, case


@pytest.mark.parametrize(
    "fn,case", list(_cases()), ids=lambda v: getattr(v, "__name__", None) or f"{v[0]}={v[1]!r}"
)
def test_bad_inputs(fn, case):
    name, value, exc, message = case
    with pytest.raises(exc, match=message):
        call(fn, **{name: value})


def test_accepts_numpy_scalars():
    g = kronecker(np.int32(4), edgefactor=np.int64(4), seed=np.uint8(1))
    assert same_matrix(g, kronecker(4, edgefactor=4, seed=1))
    m = mixed_matrix(np.int64(4), np.int16(4), np.float32(0.5), seed=0)
    assert same_matrix(m, mixed_matrix(4, 4, 0.5, seed=0))
    assert len(dense_tiles(4, 4, 1)) == 16  # an int fraction is a number in [0, 1]


def test_memory_infeasible_scale():
    with pytest.raises(GraphTooLargeError, match=r"kronecker\(scale=40.*GiB") as info:
        kronecker(40)
    assert isinstance(info.value, ValueError) and isinstance(info.value, MemoryError)
    with pytest.raises(GraphTooLargeError, match=r"kronecker_edges\(scale=40"):
        kronecker_edges(40)


def test_memory_infeasible_dense_overlay():
    # 2**20 x 2**20 fully dense is 8 TiB: refused before anything is generated; streaming
    # the same tiles holds one tile at a time and is accepted.
    with pytest.raises(GraphTooLargeError, match=r"mixed_matrix\(scale=20, tile=1024"):
        mixed_matrix(20, 1024, 1.0)


def test_memory_check_uses_available_memory(monkeypatch):
    monkeypatch.setattr(g500, "_available_bytes", lambda: 1000)
    for fn in (kronecker, kronecker_edges, mixed_matrix, iter_mixed_tiles):
        with pytest.raises(GraphTooLargeError, match=r"needs about .* GiB .* half of"):
            call(fn)


def test_streaming_validates_before_iterating():
    # Errors come from the call, not from the first next().
    with pytest.raises(ValueError, match="tile must be"):
        iter_mixed_tiles(4, 0, 0.5)


def test_grid_too_large():
    with pytest.raises(ValueError, match=r"tiles per side at scale=40"):
        dense_tiles(40, 1, 0.5)
