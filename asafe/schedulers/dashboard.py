"""asafe's page on a scheduler's Dask dashboard: ``/individual-asafe``.

What the page shows, refreshed every second from the scheduler's running
installation (:func:`asafe.schedulers.observe.installed`):

* the mode over time: the compute/communication ratio, each metric a domain
  reads and each other signal, one plot each, with every domain's thresholds
  drawn on the metric it reads (``compression alpha 0.5``); the share of each
  task type;
* each optimization's state over time (on/off, or its value);
* why each is in its state: its explanation (:meth:`asafe.AdaptiveRuntime.explain`),
  one line per part of its domain;
* the transitions, newest first, and the bytes each compression saved on the
  transfers between workers (:func:`asafe.schedulers.observe.savings`);
* the errors: plugin hooks and domains that raised, parts of these views that
  failed.

How it gets there. Dask builds its dashboard's Bokeh server when the scheduler
is created, from the ``applications`` table of
``distributed/dashboard/scheduler.py``, before any preload's ``dask_setup`` or
plugin runs; there is no call to add a page to a running one. :func:`add_page`
adds it as the Bokeh server would have at its start: it builds the page's
application with Dask's own ``BokehApplication`` (same prefix, websocket
origins and settings), and moves that application's context and routes into
the running server (``_applications``, its tornado rules), so the page is
listed in ``/individual-plots.json`` (dask-labextension) and in the
dashboard's "More..." menu. The same path serves ``asafe.install`` and
``--preload asafe.preload``. Those are Bokeh internals: where they are
missing (another Bokeh), :func:`add_page` logs one line saying that the page
is not there and why; the metrics and ``asafe info`` do not depend on it.

Nothing here raises inside the scheduler: building and refreshing the page run
under :data:`asafe.schedulers.observe.FAILURES` (a failing part is logged once,
counted, and shown on the page).
"""
from __future__ import annotations

import html
import logging
import math
import time
from typing import Any

from ..core.explain import domain_metrics, onoff, text_lines
from .observe import FAILURES, installed, savings, thresholds

__all__ = ["ROUTE", "add_page", "page"]

logger = logging.getLogger("asafe")

#: The page's path on the dashboard (``individual-`` pages are listed for dask-labextension).
ROUTE = "/individual-asafe"
#: Mode samples kept in the page's plots.
ROLLOVER = 5000
_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
_LOG_METRICS = {"ratio", "bandwidth"}  # plotted on a log axis (clipped to [1e-3, 1e3] for the ratio)


def _bokeh_server(scheduler: Any) -> Any:
    """The scheduler's running Bokeh server (its dashboard), or None without one."""
    http = getattr(scheduler, "http_application", None)
    for app in getattr(http, "applications", ()) or ():
        if hasattr(app, "app_paths") and hasattr(app, "_applications"):
            return app
    return None


def add_page(scheduler: Any) -> bool:
    """Add ``/individual-asafe`` to the scheduler's dashboard; True if it is there now.

    No dashboard (bokeh not installed, or ``dashboard=False``): nothing to do,
    False. A page already there (a second installation): True. Where the
    running Bokeh server cannot take a page, one warning says so.
    """
    server = _bokeh_server(scheduler)
    if server is None:
        logger.debug("asafe: no dashboard on this scheduler (bokeh missing or the dashboard off): no asafe page")
        return False
    if ROUTE in server.app_paths:
        return True
    try:
        _insert(server, scheduler)
    except Exception as exc:
        import bokeh

        logger.warning("asafe: the dashboard page %s could not be added to this scheduler's running dashboard "
                       "(bokeh %s: %s: %s); Dask offers no call for it, and this Bokeh's internals differ. "
                       "/metrics, `asafe info` and handle.explain() still work.", ROUTE, bokeh.__version__,
                       type(exc).__name__, exc)
        return False
    with FAILURES.guard("dashboard-menu"):
        _add_to_menu(scheduler)
    logger.info("asafe: dashboard page at %s%s", server.prefix.rstrip("/"), ROUTE)
    return True


def _insert(server: Any, scheduler: Any) -> None:
    from distributed.dashboard.core import BokehApplication
    from distributed.dashboard.scheduler import template_variables

    prefix = server.prefix.strip("/")
    built = BokehApplication({ROUTE: page}, scheduler, prefix=prefix, template_variables=template_variables(scheduler))
    context = built._applications[ROUTE]
    start = (server.prefix.rstrip("/") + ROUTE) if server.prefix.strip("/") else ROUTE
    rules = [rule for rule in built.wildcard_router.rules
             if getattr(getattr(rule.matcher, "regex", None), "pattern", "").startswith(start)]
    if not any(getattr(rule.matcher.regex, "pattern", "").endswith("/ws$") for rule in rules):
        raise RuntimeError(f"no websocket route among the page's routes {[r.matcher.regex.pattern for r in rules]}")
    context._loop = server._loop
    server._applications[ROUTE] = context
    server.wildcard_router.add_rules(rules)
    server._loop.add_callback(context.run_load_hook)


def _add_to_menu(scheduler: Any) -> None:
    from distributed.dashboard.scheduler import template_variables

    plots = template_variables(scheduler)["plots"]  # memoized per scheduler: the menu of every page
    if not any(plot.get("url") == ROUTE.strip("/") for plot in plots):
        plots.append({"url": ROUTE.strip("/"), "name": "Asafe"})
        plots.sort(key=lambda plot: plot["name"])


def page(scheduler: Any, extra: dict, doc: Any) -> None:
    """The Bokeh document of the page (an entry of Dask's ``applications`` table: ``(scheduler, extra, doc)``)."""
    from distributed.dashboard.components.scheduler import BOKEH_THEME

    doc.title = "Dask: asafe"
    view = _Page(scheduler, doc)
    doc.add_periodic_callback(view.update, 1000)
    doc.theme = BOKEH_THEME


def _clip(metric: str, value: float) -> float:
    if metric == "ratio":
        if math.isnan(value):
            return value
        return min(max(value, 1e-3), 1e3)
    if metric in _LOG_METRICS:
        return value if value > 0 else math.nan
    return value if math.isfinite(value) else math.nan


class _Page:
    """One browser session's page: its plots and tables, rebuilt when what it shows changes shape."""

    def __init__(self, scheduler: Any, doc: Any) -> None:
        self.scheduler = scheduler
        self.doc = doc
        self.shape: Any = None
        self.sent = -math.inf
        self.sources: dict[str, Any] = {}
        self.update()

    # shape: what the plots are made of ---------------------------------------------------
    def _shape(self, plugin: Any) -> Any:
        if plugin is None:
            return None
        rt = plugin.runtime
        mode = rt.mode
        metrics = ["ratio"]
        for opt in rt.optimizations.values():
            metrics += [m for m in domain_metrics(opt.domain) if m not in metrics]
        metrics += [s for s in sorted(mode.signals) if s not in metrics]
        return plugin.token, tuple(rt.optimizations), tuple(metrics), tuple(sorted(mode.shares))

    def update(self) -> None:
        with FAILURES.guard("dashboard"):
            plugin = installed(self.scheduler)
            shape = self._shape(plugin)
            if shape != self.shape or not self.doc.roots:
                self.shape = shape
                self._build(plugin)
            if plugin is not None:
                self._refresh(plugin)
        if not self.doc.roots:  # the build failed: say so on the page
            from bokeh.models import Div

            self.doc.add_root(Div(text="<h3>asafe</h3><p>This page failed to build; the scheduler's log has the "
                                       "error (counted in dask_asafe_view_errors_total).</p>"))

    # building -------------------------------------------------------------------------------
    def _build(self, plugin: Any) -> None:
        from bokeh.layouts import column
        from bokeh.models import ColumnDataSource, DataTable, Div, TableColumn

        self.doc.clear()
        self.sent = -math.inf
        self.sources = {}
        if plugin is None:
            self.doc.add_root(Div(text="<h3>asafe</h3><p>asafe is not installed on this scheduler: "
                                       "<code>asafe.install(client)</code> or <code>--preload asafe.preload</code>."
                                       "</p>"))
            return
        token, names, metrics, types = self.shape
        rt = plugin.runtime
        self.header = Div(text="", sizing_mode="stretch_width")
        self.why = Div(text="", sizing_mode="stretch_width")
        plots = []
        x_range = None
        lines: dict = {}
        with FAILURES.guard("dashboard-thresholds"):
            lines = _threshold_lines(rt)
        for metric in metrics:
            fig = self._figure(metric, x_range, metric in _LOG_METRICS)
            x_range = fig.x_range
            source = self.sources[metric] = ColumnDataSource({"time": [], "value": []})
            fig.line("time", "value", source=source, line_width=2, color="black")
            self._draw_thresholds(fig, lines.get(metric, []), list(names))
            if lines.get(metric):  # invisible points at the thresholds: the y range keeps them in view
                bounds = self.sources[f"bounds:{metric}"] = ColumnDataSource({"time": [], "value": []})
                bounds.tags = [_clip(metric, value) for value, _ in lines[metric]]
                fig.scatter("time", "value", source=bounds, alpha=0)
            plots.append(fig)
        shares = self._figure("share of work per task type", x_range, False)
        self.sources["shares"] = ColumnDataSource({"time": [], **{t: [] for t in types}})
        for i, kind in enumerate(types):
            shares.line("time", kind, source=self.sources["shares"], color=_PALETTE[i % len(_PALETTE)],
                        legend_label=kind, line_width=2)
        if types:
            shares.legend.location = "top_left"
            shares.legend.click_policy = "hide"
        shares.y_range.start, shares.y_range.end = 0, 1.05
        plots.append(shares)
        states = self._figure("state (on = 1)", x_range, False)
        for i, name in enumerate(names):
            source = self.sources[f"state:{name}"] = ColumnDataSource({"time": [], "on": [], "label": []})
            color = _PALETTE[i % len(_PALETTE)]
            states.step("time", "on", source=source, mode="after", color=color, legend_label=name, line_width=2)
            states.scatter("time", "on", source=source, color=color, size=6)
            states.text("time", "on", text="label", source=source, text_font_size="9pt", y_offset=-4)
        states.y_range.start, states.y_range.end = -0.1, 1.4
        if names:
            states.legend.location = "top_left"
        plots.append(states)
        self.sources["transitions"] = ColumnDataSource({"when": [], "optimization": [], "from": [], "to": [],
                                                         "ratio": []})
        transitions = DataTable(source=self.sources["transitions"], height=180, sizing_mode="stretch_width",
                                index_position=None, columns=[
                                    TableColumn(field="when", title="time"),
                                    TableColumn(field="optimization", title="optimization"),
                                    TableColumn(field="from", title="from"), TableColumn(field="to", title="to"),
                                    TableColumn(field="ratio", title="ratio")])
        self.sources["saved"] = ColumnDataSource({"compression": [], "saved": [], "detail": []})
        saved = DataTable(source=self.sources["saved"], height=110, sizing_mode="stretch_width", index_position=None,
                          columns=[TableColumn(field="compression", title="compression"),
                                   TableColumn(field="saved", title="bytes saved on transfers"),
                                   TableColumn(field="detail", title="")])
        self.errors = Div(text="", sizing_mode="stretch_width")
        self.doc.add_root(column(
            self.header, self.why, *plots,
            Div(text="<b>Transitions</b>, newest first"), transitions,
            Div(text="<b>Bytes saved</b> by each compression on the transfers between workers"), saved,
            self.errors, sizing_mode="stretch_width"))

    def _figure(self, title: str, x_range: Any, log: bool) -> Any:
        from bokeh.plotting import figure

        options = {"x_range": x_range} if x_range is not None else {}
        fig = figure(title=title, height=150, sizing_mode="stretch_width", x_axis_type="datetime",
                     y_axis_type="log" if log else "linear", tools="xpan,xwheel_zoom,reset", toolbar_location="right",
                     **options)
        fig.yaxis.minor_tick_line_color = None
        fig.y_range.range_padding = 0.3  # room for the thresholds' labels
        return fig

    def _draw_thresholds(self, fig: Any, lines: list, names: list) -> None:
        from bokeh.models import Label, Span

        for value, labels in lines:
            first = labels[0][0]
            color = _PALETTE[names.index(first) % len(_PALETTE)] if first in names else "gray"
            fig.add_layout(Span(location=value, dimension="width", line_color=color, line_dash="dashed",
                                line_width=1.5))
            text = ", ".join(f"{name} {which}" for name, which in labels) + f" {value:.3g}"
            fig.add_layout(Label(x=6, x_units="screen", y=value, text=text, text_font_size="9pt",
                                 text_color=color, y_offset=2))

    # refreshing ----------------------------------------------------------------------------
    def _refresh(self, plugin: Any) -> None:
        rt = plugin.runtime
        token, names, metrics, types = self.shape
        with FAILURES.guard("dashboard-plots"):
            new = [(when, mode) for when, mode in rt.timeline if when > self.sent]
            if new:
                self.sent = new[-1][0]
                times = [when * 1000.0 for when, _ in new]
                for metric in metrics:
                    values = [_clip(metric, float(mode.metric(metric))) for _, mode in new]
                    self.sources[metric].stream({"time": times, "value": values}, rollover=ROLLOVER)
                for metric in metrics:
                    bounds = self.sources.get(f"bounds:{metric}")
                    if bounds is not None:
                        bounds.data = {"time": [times[-1]] * len(bounds.tags), "value": list(bounds.tags)}
                self.sources["shares"].stream({"time": times, **{t: [mode[t] for _, mode in new] for t in types}},
                                              rollover=ROLLOVER)
        with FAILURES.guard("dashboard-states"):
            self._states(rt, names)
        with FAILURES.guard("dashboard-why"):
            self.header.text = self._header(plugin)
            blocks = [html.escape("\n".join(text_lines(rt.explain(name)))) for name in names]
            self.why.text = "<b>Why each optimization is in its state</b><pre>" + "\n\n".join(blocks) + "</pre>"
        with FAILURES.guard("dashboard-tables"):
            recent = rt.history[-100:][::-1]
            self.sources["transitions"].data = {
                "when": [time.strftime("%H:%M:%S", time.localtime(t.time)) + f".{int(t.time * 1000) % 1000:03d}"
                         for t in recent],
                "optimization": [t.optimization for t in recent],
                "from": [onoff(t.old) for t in recent], "to": [onoff(t.new) for t in recent],
                "ratio": [f"{t.mode.ratio:.3g}" for t in recent]}
            saved = savings(self.scheduler, plugin)
            frames = saved["frames"]
            self.sources["saved"].data = {
                "compression": ["compression (tiles)", "wire-compression", "all"],
                "saved": [_bytes(saved["by"]["compression"]), _bytes(saved["by"]["wire-compression"]),
                          _bytes(saved["saved_bytes"])],
                "detail": ["the rest of the transfers' uncompressed-equivalent bytes",
                           f"{frames['decompressed_frames']} frames received compressed, {frames['skipped_frames']} "
                           f"sent as they were; {saved['workers_reporting']} workers reporting",
                           f"{saved['transfers']} transfers: {_bytes(saved['logical_bytes'])} uncompressed-"
                           f"equivalent, {_bytes(saved['wire_bytes'])} sent"]}
        self.errors.text = self._errors(plugin)

    def _states(self, rt: Any, names: tuple) -> None:
        now = time.time() * 1000.0
        history = rt.history
        first = rt.timeline[:1]
        start = first[0][0] * 1000.0 if first else now
        for name in names:
            points = [(t.time * 1000.0, t.new) for t in history if t.optimization == name]
            initial = rt.optimizations[name].initial if not points else next(
                t.old for t in history if t.optimization == name)
            points = [(min(start, points[0][0]) if points else start, initial), *points, (now, rt.state(name))]
            self.sources[f"state:{name}"].data = {
                "time": [p[0] for p in points],
                "on": [0.0 if (p[1] is False or p[1] == 0) else 1.0 for p in points],
                "label": ["" if isinstance(p[1], bool) or i == len(points) - 1 else onoff(p[1])
                          for i, p in enumerate(points)]}

    def _header(self, plugin: Any) -> str:
        rt = plugin.runtime
        states = ", ".join(f"<b>{html.escape(n)}</b> {html.escape(onoff(s))}" for n, s in rt.states.items())
        mode = rt.mode
        return (f"<h3>asafe</h3><p>{states or 'no optimizations'} &middot; ratio {mode.ratio:.3g} &middot; "
                f"{sum(rt.transition_counts.values())} transitions &middot; {rt.tracker.finished} measurements "
                f"&middot; window {rt.tracker.window}, blend {rt.tracker.blend:g}, dwell {rt.dwell:g} s / "
                f"{rt.dwell_tasks} tasks &middot; installation {html.escape(plugin.token[:8])}</p>")

    def _errors(self, plugin: Any) -> str:
        parts = []
        hooks = dict(getattr(plugin, "error_counts", {}))
        if hooks:
            parts.append("plugin hooks that raised: " + ", ".join(f"{k} {v}" for k, v in sorted(hooks.items())))
        domains = plugin.runtime.errors
        if domains:
            parts.append(f"domains that raised: {len(domains)} (last: {html.escape(domains[-1].error)})")
        rejected = dict(plugin.runtime.tracker.rejected)
        if rejected:
            parts.append("events ignored: " + ", ".join(f"{html.escape(k)} {v}" for k, v in sorted(rejected.items())))
        if FAILURES.counts:
            parts.append("parts of this page or of /metrics that failed: "
                         + ", ".join(f"{k} {v}" for k, v in sorted(FAILURES.counts.items())))
        return "<p><b>Errors</b>: " + ("; ".join(parts) if parts else "none") + "</p>"


def _threshold_lines(rt: Any) -> dict[str, list]:
    """``{metric: [(value, [(optimization, threshold name), ...]), ...]}``, one line per value."""
    out: dict[str, dict[float, list]] = {}
    for metric, name, which, value in thresholds(rt):
        out.setdefault(metric, {}).setdefault(value, []).append((name, which))
    return {metric: sorted(values.items()) for metric, values in out.items()}


def _bytes(n: float) -> str:
    """A byte count as text.

    >>> _bytes(0), _bytes(1536), _bytes(3.5e9)
    ('0 B', '1.5 KiB', '3.26 GiB')
    """
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.3g} TiB"
