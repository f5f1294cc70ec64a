"""Test tooling shipped with asafe: the *peer-suite check* (Dask's own tests with asafe active).

* :mod:`asafe.testing.peer` -- a pytest plugin (``pytest -p asafe.testing.peer
  --asafe=local``) that runs every test of a suite with asafe active;
* :mod:`asafe.testing.peer_run` -- the runner (``python -m asafe.testing.peer_run``)
  that runs test targets with asafe off and on and tables the outcomes.

Nothing here is imported by ``import asafe``.
"""
