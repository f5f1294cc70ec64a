"""The screenshot of asafe's dashboard page in docs/images/dashboard.png (run by hand, not by the build).

Starts a LocalCluster of 2 worker processes with its dashboard, installs the
default runtime, runs three phases (sparse panels made on one worker and
multiplied on the other, typed communication; local compute; shipping again)
and takes a screenshot of ``/individual-asafe`` with headless Chromium
(Debian's ``chromium`` package, driven by ``pip install playwright``; no
browser is downloaded)::

    python docs/_scripts/dashboard_screenshot.py docs/images/dashboard.png
"""
from __future__ import annotations

import sys
import time

import numpy as np
import scipy.sparse as sp

import asafe
from asafe.compression import TiledMatrix


@asafe.typed(asafe.COMMUNICATION)
def make_panel(seed: int) -> TiledMatrix:
    time.sleep(0.03)  # stands for reading the panel from a peer
    S = sp.random_array((1024, 1024), density=0.002, random_state=seed, format="csr")
    return TiledMatrix.from_scipy(S, tile=128)


@asafe.typed(asafe.COMPUTE)
def multiply(panel: TiledMatrix) -> float:
    return float((panel @ np.ones(panel.shape[1])).sum())


@asafe.typed(asafe.COMPUTE)
def work(i: int) -> int:
    deadline = time.perf_counter() + 0.03
    while time.perf_counter() < deadline:
        pass
    return i


def screenshot(url: str, out: str) -> None:
    """A full-page screenshot of ``url`` once its Bokeh document has rendered (playwright, Debian's chromium)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(url)
        page.wait_for_selector("text=Why each optimization", timeout=30_000)
        page.wait_for_timeout(2500)  # two refreshes: the plots have their data
        page.screenshot(path=out, full_page=True)
        browser.close()


def main(out: str) -> None:
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        handle = asafe.install(client)
        first, second = sorted(client.scheduler_info()["workers"])
        for phase in ("ship", "compute", "ship"):
            if phase == "ship":
                panels = client.map(make_panel, range(40), workers=[first], pure=False)
                client.gather(client.map(multiply, panels, workers=[second], pure=False))
                del panels
            else:
                client.gather(client.map(work, range(240), pure=False))
            time.sleep(1.0)
        time.sleep(2.0)  # a heartbeat and a page refresh
        print(handle.explain("compression"))
        url = cluster.dashboard_link.rsplit("/", 1)[0] + "/individual-asafe"
        screenshot(url, out)
    print(out)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "dashboard.png")
