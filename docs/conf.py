"""Sphinx configuration of the asafe documentation.

Build (warnings are errors, as in CI)::

    pip install ".[docs]"
    sphinx-build -W --keep-going -b html docs /tmp/html

autodoc documents the *installed* asafe (CI installs it non-editable); nothing here
puts the source folders on ``sys.path``. Figures and API pages are generated at
build time by ``_ext/asafe_docs.py``; no step fetches anything from the network.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "_ext"))

import asafe  # noqa: E402  (the installed package, imported for its version)

project = "asafe"
author = "the asafe developers"
copyright = "the asafe developers, BSD-3-Clause"
release = asafe.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.viewcode",
    "numpydoc",
    "asafe_docs",
]

root_doc = "index"
source_suffix = {".rst": "restructuredtext"}
exclude_patterns = [
    "_build",
    "**/.ipynb_checkpoints",
    # result folders may carry their own notes; they are rendered by asafe-results
    "results/**",
]
templates_path: list[str] = []

# Python objects ------------------------------------------------------------------
default_role = "py:obj"
add_module_names = False
python_display_short_literal_types = True
toc_object_entries_show_parents = "hide"

autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"  # numpydoc sections carry the types; signatures stay short
autodoc_preserve_defaults = True
autosummary_generate = False  # the API pages are written by asafe_docs

numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = False
numpydoc_xref_param_type = False

# No intersphinx: CI builds offline. References to numpy, dask or distributed
# objects render as code without a link.

# HTML --------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"asafe {release}"
html_short_title = "asafe"
html_show_sourcelink = False
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "header_links_before_dropdown": 7,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    "pygments_light_style": "default",
    "pygments_dark_style": "monokai",
}
html_sidebars = {
    "index": [],
    "quickstart": [],
    "concepts": [],
    "deployment": [],
    "performance": [],
    "benchmarking": [],
    "performance-history": [],
}
html_static_path: list[str] = []
