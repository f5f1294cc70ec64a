"""Sphinx extension of the asafe documentation: what is generated at build time.

* ``builder-inited``: draws the figures of the Concepts page with the real
  controller (``docs/_scripts/hysteresis_figure.py`` into ``docs/_generated/``) and
  writes one API page per module of the installed :mod:`asafe` into
  ``docs/api/generated/`` (discovered with :func:`pkgutil.walk_packages`, so a new
  module gets its page without editing the docs).
* ``.. asafe-api-toctree::`` lists those pages: the public packages first
  (``asafe`` and ``asafe.compression``), then every other module.
* ``.. asafe-config-table:: ../asafe/asafe.yaml`` renders every key of the YAML
  defaults with its default value, its environment variable and its comment.
* ``.. asafe-results::`` renders whatever benchmark results are committed under
  ``docs/results/``: every PNG as a figure and the key numbers of every JSON file,
  or a sentence saying that none are committed.

Everything here must build without a warning (the CI builds with ``-W``) whatever
the state of the code it documents, and without network access.
"""
from __future__ import annotations

import importlib
import inspect
import json
import math
import os
import pkgutil
import re
import runpy
from typing import Any

import yaml
from asafe_yaml import environment_variable, format_default, yaml_comments, yaml_leaves
from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

#: Packages whose ``__all__`` is the public API; their names are documented there.
PUBLIC_PACKAGES = ("asafe", "asafe.compression")
API_DIR = os.path.join("api", "generated")
FIGURES_DIR = "_generated"
RESULTS_DIR = "results"
_SAFE_PATH = re.compile(r"^[A-Za-z0-9_.\-/]+$")


# ---------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------
def draw_figures(app) -> None:
    """Draw the Concepts figures with the installed asafe (deterministic, a few seconds)."""
    script = os.path.join(app.srcdir, "_scripts", "hysteresis_figure.py")
    outdir = os.path.join(app.srcdir, FIGURES_DIR)
    try:
        runpy.run_path(script)["main"](outdir)
    except Exception as exc:  # a broken figure is a broken page: fail the -W build
        logger.warning("asafe docs: drawing the figures with %s failed: %s: %s",
                       script, type(exc).__name__, exc)


# ---------------------------------------------------------------------------
# API pages
# ---------------------------------------------------------------------------
def discover_modules() -> list[str]:
    """Public modules of the installed asafe: no ``_private`` part, no ``__main__``."""
    failed: list[str] = []
    found: list[str] = []
    # asafe.compression is walked on its own too: in an editable install it lives
    # outside asafe/ (setup.py package_dir), where walking asafe.__path__ misses it.
    for package in PUBLIC_PACKAGES:
        try:
            pkg = importlib.import_module(package)
        except ImportError as exc:
            logger.warning("asafe docs: cannot import %s: %s", package, exc)
            continue
        found.append(package)
        for info in pkgutil.walk_packages(pkg.__path__, package + ".", onerror=failed.append):
            if any(part.startswith("_") for part in info.name.split(".")):
                continue
            found.append(info.name)
    for name in failed:
        logger.warning("asafe docs: importing package %s failed while listing modules", name)
    return sorted(set(found), key=_module_order)


def _module_order(name: str) -> tuple:
    return (name not in PUBLIC_PACKAGES, PUBLIC_PACKAGES.index(name) if name in PUBLIC_PACKAGES else 0, name)


def public_names(module) -> list[str]:
    """``__all__``, or else the public names the module defines itself."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return [str(n) for n in names]
    return sorted(
        n for n, v in vars(module).items()
        if not n.startswith("_") and not inspect.ismodule(v)
        and getattr(v, "__module__", module.__name__) == module.__name__
        and (inspect.isclass(v) or callable(v))
    )


def _exported_by_public(module_name: str, name: str, obj: Any) -> str | None:
    """The public package that exports ``obj`` under ``name`` (if not ``module_name`` itself)."""
    for package in PUBLIC_PACKAGES:
        if package == module_name:
            continue
        try:
            pkg = importlib.import_module(package)
        except Exception:
            continue
        if name in getattr(pkg, "__all__", ()) and getattr(pkg, name, None) is obj:
            return package
    return None


def _attribute_doc(name: str, obj: Any, modules: list[str]) -> list[str]:
    """The ``#:`` comment of a re-exported constant, looked up where it is defined."""
    from sphinx.pycode import ModuleAnalyzer

    for module_name in modules:
        module = importlib.import_module(module_name)
        if getattr(module, name, None) is not obj:
            continue
        try:
            docs = ModuleAnalyzer.for_module(module_name).find_attr_docs()
        except Exception:
            continue
        lines = docs.get(("", name))
        if lines:
            return [line for line in lines if line.strip()]
    return []


def module_page(module_name: str, modules: list[str]) -> str:
    """The reStructuredText of one module's API page."""
    module = importlib.import_module(module_name)
    title = f"``{module_name}``"
    out = [title, "=" * len(title), "", f".. automodule:: {module_name}", "   :no-members:", ""]
    documented, elsewhere, submodules = [], [], []
    for name in public_names(module):
        if not hasattr(module, name):
            logger.warning("asafe docs: %s.__all__ names %r, which the module does not define",
                           module_name, name)
            continue
        obj = getattr(module, name)
        if inspect.ismodule(obj):
            submodules.append(obj.__name__)
            continue
        owner = _exported_by_public(module_name, name, obj)
        if owner is not None and module_name not in PUBLIC_PACKAGES:
            elsewhere.append((name, owner, obj))
        else:
            documented.append((name, obj))

    if module_name in PUBLIC_PACKAGES and (documented or submodules):
        # autosummary for what has a docstring of its own; constants (whose __doc__
        # would be their type's) are listed with their ``#:`` comment instead
        routines = [name for name, obj in documented if not _is_data(obj)]
        constants = [(name, obj) for name, obj in documented if _is_data(obj) and name != "__version__"]
        out += ["Summary", "-------", ""]
        if routines or submodules:
            out += [".. autosummary::", "   :nosignatures:", ""]
            # names relative to the current module (set by automodule above)
            out += [f"   {name}" for name in routines]
            out += [f"   {sub[len(module_name) + 1:]}" for sub in submodules]
            out += [""]
        if constants:
            out += ["Constants:", ""]
            for name, obj in constants:
                doc = " ".join(_attribute_doc(name, obj, modules)[:1])
                out += [f"* :py:data:`{name}` = ``{obj!r}``" + (f": {doc}" if doc else "")]
            out += [""]
    if documented:
        if module_name in PUBLIC_PACKAGES:
            out += ["Reference", "---------", ""]
        for name, obj in documented:
            full = f"{module_name}.{name}"
            if inspect.isclass(obj) and issubclass(obj, BaseException):
                out += [f".. autoexception:: {full}", "   :show-inheritance:", ""]
            elif inspect.isclass(obj):
                out += [f".. autoclass:: {full}", "   :members:", "   :show-inheritance:", ""]
            elif callable(obj):
                out += [f".. autofunction:: {full}", ""]
            else:
                # py:data, not autodata: autodata shows the docstring of the value's
                # type (str.__doc__ for a str) when the name has no ``#:`` comment in
                # this module, which is the case of every re-exported constant
                out += [f".. py:data:: {name}", f"   :module: {module_name}",
                        f"   :value: {_value(obj)}", ""]
                doc = _attribute_doc(name, obj, [module_name] + modules)
                out += [f"   {line}" for line in doc] + [""]
    if submodules and module_name not in PUBLIC_PACKAGES:
        out += ["Submodules: " + ", ".join(f":mod:`{sub}`" for sub in submodules) + ".", ""]
    if elsewhere:
        out += [".. rubric:: Documented with the public API", ""]
        for name, owner, obj in elsewhere:
            role = _role(obj)
            out += [f"* ``{name}``: :{role}:`{owner}.{name}`"]
        out += [""]
    return "\n".join(out)


def _is_data(obj: Any) -> bool:
    return not (inspect.isclass(obj) or callable(obj) or inspect.ismodule(obj))


def _value(obj: Any) -> str:
    text = repr(obj).replace("\n", " ")
    return text if len(text) <= 60 else text[:57] + "..."


def _role(obj: Any) -> str:
    if inspect.isclass(obj):
        return "py:exc" if issubclass(obj, BaseException) else "py:class"
    if callable(obj):
        return "py:func"
    return "py:data"


def write_api_pages(app) -> None:
    """(Re)write ``docs/api/generated/<module>.rst``; remove pages of vanished modules."""
    outdir = os.path.join(app.srcdir, API_DIR)
    os.makedirs(outdir, exist_ok=True)
    try:
        modules = discover_modules()
    except Exception as exc:
        logger.warning("asafe docs: cannot list the modules of asafe: %s: %s", type(exc).__name__, exc)
        modules = []
    app.env.asafe_modules = modules  # read by asafe-api-toctree
    wanted = set()
    for module_name in modules:
        try:
            text = module_page(module_name, modules)
        except Exception as exc:
            logger.warning("asafe docs: cannot document %s: %s: %s", module_name, type(exc).__name__, exc)
            continue
        path = os.path.join(outdir, module_name + ".rst")
        wanted.add(path)
        old = None
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                old = f.read()
        if old != text:  # unchanged pages keep their mtime: incremental builds stay quick
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    for entry in os.listdir(outdir):
        path = os.path.join(outdir, entry)
        if entry.endswith(".rst") and path not in wanted:
            os.remove(path)


# ---------------------------------------------------------------------------
# references to re-exported names
# ---------------------------------------------------------------------------
def public_objects() -> dict[tuple[str, int], str]:
    """``(name, id(object)) -> "asafe.name"`` for everything the public API exports.

    The name is part of the key so that a small int or an interned string that
    happens to be the same object under another name is not mistaken for it.
    """
    found: dict[tuple[str, int], str] = {}
    for package in PUBLIC_PACKAGES:
        try:
            pkg = importlib.import_module(package)
        except Exception:
            continue
        for name in getattr(pkg, "__all__", ()):
            obj = getattr(pkg, name, None)
            if obj is not None and not inspect.ismodule(obj):
                found.setdefault((name, id(obj)), f"{package}.{name}")
    return found


def _public_key(name: str, obj: Any) -> tuple[str, int]:
    # functions and classes are found under any name (an alias), data by its own
    return (getattr(obj, "__name__", name) if inspect.isclass(obj) or callable(obj) else name, id(obj))


def public_name_of(dotted: str, public: dict[tuple[str, int], str]) -> str | None:
    """The public name of what ``dotted`` designates, if it is (a member of) an exported object.

    ``asafe.core.types.typed`` gives ``asafe.typed``;
    ``asafe.compression.matrix.TiledMatrix.from_dense`` gives
    ``asafe.compression.TiledMatrix.from_dense``.
    """
    parts = dotted.split(".")
    if parts[0] != "asafe":
        return None
    obj, rest = None, []
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        rest = parts[i:]
        break
    if obj is None:
        return None
    for j, attr in enumerate(rest):
        obj = getattr(obj, attr, None)
        if obj is None:
            return None
        key = (attr, id(obj))
        if key in public:
            return ".".join([public[key], *rest[j + 1:]])
    return None


def _defining_module(module: str | None, cls: str | None) -> str | None:
    """Where the class of a reference's context is defined (``asafe.compression.tiles``)."""
    if not module or not cls:
        return None
    try:
        obj = importlib.import_module(module)
        for attr in cls.split("."):
            obj = getattr(obj, attr)
    except (ImportError, AttributeError):
        return None
    return getattr(obj, "__module__", None)


def resolve_reexports(app, env, node, contnode):
    """Resolve references that name an object where it is defined, not where it is documented.

    Every public object is documented once, under its public name (``asafe.typed``),
    and the docstrings of the defining modules refer to it relatively
    (``:func:`typed``` in :mod:`asafe.core.types`); names used in the docstring of a
    re-exported class are looked up in the module that defines the class. Without
    this they would be left unlinked.
    """
    if node.get("refdomain") != "py":
        return None
    public = getattr(app, "asafe_public", None)
    if public is None:
        public = app.asafe_public = public_objects()
    target = node["reftarget"]
    module, cls = node.get("py:module"), node.get("py:class")
    candidates = [target]
    for context in (module, _defining_module(module, cls)):
        if context:
            if cls:
                candidates.append(f"{context}.{cls}.{target}")
            candidates.append(f"{context}.{target}")
    domain = env.get_domain("py")
    seen = {target}
    for candidate in candidates:
        for name in (public_name_of(candidate, public), candidate):
            if not name or name in seen:
                continue
            seen.add(name)
            result = domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], name, node, contnode)
            if result is not None:
                return result
    return None


class ApiToctree(SphinxDirective):
    """Toctrees of the generated API pages: public packages, then modules."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        modules = [m for m in getattr(self.env, "asafe_modules", [])
                   if os.path.exists(os.path.join(self.env.srcdir, API_DIR, m + ".rst"))]
        here = os.path.dirname(self.env.docname)
        prefix = os.path.relpath(API_DIR, here or ".").replace(os.sep, "/")
        public = [m for m in modules if m in PUBLIC_PACKAGES]
        flat = [m for m in modules if m not in PUBLIC_PACKAGES]
        text: list[str] = []
        for caption, group in (("Public API", public), ("Modules", flat)):
            if group:
                text += [".. toctree::", "   :maxdepth: 1", f"   :caption: {caption}", ""]
                text += [f"   {prefix}/{m}" for m in group] + [""]
        container = nodes.container()
        self.state.nested_parse(StringList(text, source="asafe-api-toctree"), self.content_offset, container)
        return container.children


# ---------------------------------------------------------------------------
# configuration table
# ---------------------------------------------------------------------------
def _cell(*children: nodes.Node) -> nodes.entry:
    """A table cell: a paragraph of inline nodes, or the given paragraphs."""
    entry = nodes.entry()
    if children and all(isinstance(c, nodes.paragraph) for c in children):
        entry.extend(children)
    else:
        entry += nodes.paragraph("", "", *children)
    return entry


def make_table(headers: list[str], rows: list[list[Any]], widths: list[int] | None = None) -> nodes.table:
    """A docutils table built from nodes (no reStructuredText to escape)."""
    table = nodes.table(classes=["asafe-table"])
    group = nodes.tgroup(cols=len(headers))
    table += group
    for width in widths or [1] * len(headers):
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    group += head
    row = nodes.row()
    for header in headers:
        row += _cell(nodes.Text(header))
    head += row
    body = nodes.tbody()
    group += body
    for values in rows:
        row = nodes.row()
        for value in values:
            if isinstance(value, (list, tuple)):
                row += _cell(*value)
            else:
                row += _cell(value if isinstance(value, nodes.Node) else nodes.Text(str(value)))
        body += row
    return table


class ConfigTable(SphinxDirective):
    """Every key of a YAML defaults file: default, environment variable, comment."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        rel, path = self.env.relfn2path(self.arguments[0], self.env.docname)
        self.env.note_dependency(rel)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            data = yaml.safe_load(text)
        except (OSError, yaml.YAMLError) as exc:
            logger.warning("asafe docs: cannot read %s: %s", path, exc, location=self.get_location())
            return []
        comments = yaml_comments(text)
        rows = []
        for key, value in yaml_leaves(data):
            rows.append([
                [nodes.paragraph("", "", nodes.literal(text=key)),
                 nodes.paragraph("", "", nodes.literal(text=environment_variable(key)))],
                nodes.Text(format_default(value)) if isinstance(value, list)
                else nodes.literal(text=format_default(value)),
                nodes.Text(comments.get(key, "")),
            ])
        return [make_table(["key and environment variable", "default", "meaning"], rows, [40, 12, 48])]


# ---------------------------------------------------------------------------
# committed benchmark results
# ---------------------------------------------------------------------------
def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _fmt(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else str(value)
    text = str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        out = []
        for key, item in value.items():
            out += _flatten(item, f"{prefix}.{key}" if prefix else str(key))
        return out
    if isinstance(value, list) and not all(_is_scalar(v) for v in value):
        out = []
        for i, item in enumerate(value):
            out += _flatten(item, f"{prefix}[{i}]")
        return out
    if isinstance(value, list):
        return [(prefix, ", ".join(_fmt(v) for v in value[:12]) + (", ..." if len(value) > 12 else ""))]
    return [(prefix, value)]


def _records(value: Any) -> tuple[list[str], list[list[Any]]] | None:
    """Columns and rows if ``value`` is a table: a list of flat dicts or a dict of flat dicts."""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        items = [(None, v) for v in value]
    elif isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
        items = list(value.items())
    else:
        return None
    columns: list[str] = []
    flat_items = []
    for key, record in items:
        flat = dict(_flatten(record))
        flat_items.append((key, flat))
        for column in flat:
            if column not in columns:
                columns.append(column)
    if not columns or len(columns) > 10:
        return None
    head = ([""] if items[0][0] is not None else []) + columns
    rows = [([str(key)] if key is not None else []) + [flat.get(c, "") for c in columns]
            for key, flat in flat_items]
    return head, rows


MAX_ROWS = 40


def summarize_json(data: Any) -> list[nodes.Node]:
    """Key numbers of a result file: its environment, its scalars, its tables."""
    out: list[nodes.Node] = []
    if not isinstance(data, dict):
        data = {"values": data}
    environment = data.get("environment")
    if isinstance(environment, dict):
        rows = [[nodes.literal(text=k), _fmt(v)] for k, v in _flatten(environment)][:MAX_ROWS]
        out += [nodes.rubric(text="Environment"), make_table(["", "value"], rows, [30, 70])]
    scalars = [(k, v) for k, v in data.items() if k != "environment" and _is_scalar(v)]
    if scalars:
        rows = [[nodes.literal(text=k), _fmt(v)] for k, v in scalars][:MAX_ROWS]
        out += [nodes.rubric(text="Settings and totals"), make_table(["", "value"], rows, [30, 70])]
    for key, value in data.items():
        if key == "environment" or _is_scalar(value):
            continue
        out.append(nodes.rubric(text=str(key)))
        if isinstance(value, list) and all(_is_scalar(v) for v in value):
            shown_values = ", ".join(_fmt(v) for v in value[:MAX_ROWS])
            more = f" ... ({len(value) - MAX_ROWS} more in the file)" if len(value) > MAX_ROWS else ""
            out.append(nodes.paragraph(text=(shown_values or "(empty)") + more))
            continue
        table = _records(value)
        if table is not None:
            head, rows = table
            shown = [[_fmt(v) for v in row] for row in rows[:MAX_ROWS]]
            out.append(make_table(head, shown))
            dropped = len(rows) - len(shown)
        else:
            leaves = _flatten(value)
            shown = [[nodes.literal(text=k), _fmt(v)] for k, v in leaves[:MAX_ROWS]]
            out.append(make_table(["", "value"], shown, [50, 50]))
            dropped = len(leaves) - len(shown)
        if dropped > 0:
            out.append(nodes.paragraph(text=f"({dropped} more rows in the file.)"))
    return out


class Results(SphinxDirective):
    """Figures and key numbers of whatever is committed under ``docs/results/``."""

    has_content = False
    option_spec = {"path": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        rel_root = self.options.get("path", RESULTS_DIR)
        root = os.path.join(self.env.srcdir, rel_root)
        files: list[str] = []
        if os.path.isdir(root):
            for folder, subdirs, names in os.walk(root):
                subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
                self.env.note_dependency(os.path.relpath(folder, self.env.srcdir))
                for name in sorted(names):
                    if name.lower().endswith((".png", ".json")):
                        files.append(os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/"))
        else:
            self.env.note_dependency(".")  # the docs folder: changes when results/ appears
        if not files:
            para = nodes.paragraph(text=(
                "No benchmark results are committed in this checkout: docs/results/ is empty "
                "or absent. Run a suite as shown above and commit its JSON and PNG files under "
                "docs/results/; this section then shows every figure and the key numbers of "
                "every JSON file."
            ))
            return [para]

        out: list[nodes.Node] = []
        groups: dict[str, list[str]] = {}
        for rel in files:
            groups.setdefault(os.path.dirname(rel), []).append(rel)
        for folder in sorted(groups):
            # a figure first, then the numbers of the JSON file of the same name
            ordered = sorted(groups[folder], key=lambda r: (os.path.splitext(r)[0], not r.lower().endswith(".png")))
            rendered: list[nodes.Node] = []
            for rel in ordered:
                rendered += self._render(rel_root, rel)
            if len(groups) == 1 and not folder:
                out += rendered
            else:
                out.append(self._section(f"{rel_root}/{folder}/" if folder else f"{rel_root}/", rendered))
        return out

    def _section(self, title: str, children: list[nodes.Node]) -> nodes.section:
        """A real section, so that every result folder appears in the page's table of contents."""
        section = nodes.section()
        section += nodes.title(text=title)
        section["names"].append(nodes.fully_normalize_name(title))
        self.state.document.note_implicit_target(section, section)
        section.extend(children)
        return section

    def _render(self, rel_root: str, rel: str) -> list[nodes.Node]:
        path = os.path.join(self.env.srcdir, rel_root, rel)
        self.env.note_dependency(os.path.join(rel_root, rel))
        uri = f"/{rel_root}/{rel}"
        if rel.lower().endswith(".png"):
            figure = nodes.figure(classes=["asafe-result-figure"])
            figure += nodes.image(uri=uri, alt=rel, candidates={"*": os.path.join(rel_root, rel)})
            figure += nodes.caption(text=f"{rel_root}/{rel}")
            return [figure]
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError) as exc:
            para = nodes.paragraph(text=f"{rel_root}/{rel} could not be read: {exc}")
            return [para]
        container = nodes.container(classes=["asafe-result-json"])
        if _SAFE_PATH.match(rel):  # a name that needs no escaping in the download role
            text = [f":download:`{rel_root}/{rel} <{uri}>`", ""]
            self.state.nested_parse(StringList(text, source=path), self.content_offset, container)
        else:
            container += nodes.paragraph("", "", nodes.literal(text=f"{rel_root}/{rel}"))
        container += summarize_json(data)
        return [container]


# ---------------------------------------------------------------------------
def setup(app) -> dict[str, Any]:
    app.connect("builder-inited", draw_figures)
    app.connect("builder-inited", write_api_pages)
    app.connect("missing-reference", resolve_reexports)
    app.add_directive("asafe-api-toctree", ApiToctree)
    app.add_directive("asafe-config-table", ConfigTable)
    app.add_directive("asafe-results", Results)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}


__all__ = ["setup", "summarize_json", "discover_modules", "module_page"]
