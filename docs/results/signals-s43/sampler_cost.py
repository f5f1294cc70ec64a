"""The periodic sampler's own cost while the scheduler is recently active: its samples and their thread cpu in a 10 s
idle window after a graph, asafe installed once (LocalCluster, 2 worker processes; session 43)."""
import sys, time
import asafe
from distributed import Client, LocalCluster

if __name__ == "__main__":
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        asafe.install(client)
        system = cluster.scheduler.plugins["asafe"].runtime.system_signals
        calls = []
        sample = system.sample

        def timed():
            t = time.thread_time()
            try:
                return sample()
            finally:
                calls.append(time.thread_time() - t)
        system.sample = timed
        for r in range(3):
            assert client.submit(lambda x: x + 1, r, pure=False).result() == r + 1
            calls.clear()
            time.sleep(10)
            n = len(calls)
            print(f"round {r}: {n} samples in 10 s idle after a graph, {sum(calls)*1e3:.2f} ms of thread cpu "
                  f"({sum(calls)/10*1e3:.2f} ms/s; median sample {sorted(calls)[n//2]*1e6:.0f} us)", flush=True)
