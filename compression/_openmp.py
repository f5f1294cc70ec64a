"""The OpenMP wait policy of the tile engine's numba kernels: ``PASSIVE`` unless the user chose one.

Every module of :mod:`asafe.compression` that defines numba kernels imports this
one first, for its effect alone: ``OMP_WAIT_POLICY=PASSIVE`` is set in the
environment when the variable is absent, before numba starts its OpenMP layer (on
the first parallel call). Idle OpenMP threads then sleep instead of spinning
beside BLAS and other processes; child processes inherit the setting. Why, with
the measurements, is told in :mod:`asafe.compression.kernels` ("The BLAS spin
hazard").
"""
import os

if "OMP_WAIT_POLICY" not in os.environ:
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
