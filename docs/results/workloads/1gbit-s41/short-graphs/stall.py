"""Watchdog: the stacks of an event loop's thread whenever it stalls more than ``thresh`` seconds (shortcost.py)."""
import sys, threading, time, traceback
class Watchdog:
    def __init__(self, loop, thresh=0.015):
        self.loop = loop; self.thresh = thresh; self.last = time.perf_counter(); self.stop = False
        self.tid = None; self.stalls = []; self.armed = False
        loop.call_soon_threadsafe(self._whoami)
        threading.Thread(target=self._run, daemon=True).start()
    def _whoami(self):
        self.tid = threading.get_ident()
    def _beat(self):
        self.last = time.perf_counter()
    def _run(self):
        caught = False
        while not self.stop:
            time.sleep(0.002)
            self.loop.call_soon_threadsafe(self._beat)
            lag = time.perf_counter() - self.last
            if lag > self.thresh and not caught and self.armed and self.tid:
                f = sys._current_frames().get(self.tid)
                stack = traceback.format_stack(f)[-14:] if f else []
                self.stalls.append((round(lag * 1000, 1), "".join(stack)))
                caught = True
            elif lag < 0.005:
                caught = False
