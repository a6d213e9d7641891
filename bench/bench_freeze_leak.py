"""In one number: request garbage frozen by catalog rebuilds.

Run: ``python -m bench.bench_freeze_leak [ROOT]`` (ROOT: another source tree, e.g. an export
of 2517ed9, which froze the heap on every snapshot write). In a subprocess on ROOT's code:
200 catalog writes, each while five "requests" hold a garbage cycle of 20 KB, each write
followed by the catalog snapshot rebuild; then a full collection. Prints the objects frozen by
the rebuilds and the cycle objects that were never collected (and their MB).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r'''
import gc, json, tempfile, tracemalloc
from sqlalchemy import text
from sqlmodel import Session
from service.core.db import make_engine
from service.core.migrate import upgrade
from service.app.seeding import seed
from service.workloads.caches import AppCaches
from service.catalog.service import catalog_snapshot
caches = AppCaches()
url = f"sqlite:///{tempfile.mkdtemp()}/leak.db"
upgrade(url); engine = make_engine(url); seed(engine)
class Node:
    def __init__(self): self.other = None; self.payload = bytearray(10_000)
def in_flight():
    a, b = Node(), Node(); a.other, b.other = b, a  # a garbage cycle once the request ends
    return a
gc.collect()
base_frozen = gc.get_freeze_count()
tracemalloc.start()
t0 = tracemalloc.get_traced_memory()[0]
for i in range(200):
    held = [in_flight() for _ in range(5)]      # five requests in flight
    with engine.begin() as c:
        c.execute(text("UPDATE gpus SET notes = :n, version = version + 1 "
                       "WHERE slug = (SELECT min(slug) FROM gpus)"), {"n": f"edit {i}"})
    with Session(engine) as s:
        catalog_snapshot(s, cache=caches.catalog)  # a write changes the fingerprint: rebuild
    del held                                     # the requests end
gc.collect()
t1 = tracemalloc.get_traced_memory()[0]
frozen = gc.get_freeze_count() - base_frozen
gc.unfreeze()
alive = sum(1 for o in gc.get_objects() if type(o).__name__ == "Node")
print(json.dumps({"rebuilds": 200, "frozen_objects_added": frozen,
                  "traced_mb_kept_after_collect": round((t1 - t0) / 2**20, 1),
                  "cycle_objects_never_collected": alive,
                  "cycle_mb_never_collected": round(alive * 10_000 / 2**20, 1)}))
'''


def run(root: Path = ROOT) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-c", _CHILD], cwd=root, env=env,
                          capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    result["source"] = "this tree" if root.resolve() == ROOT else root.name
    return result


if __name__ == "__main__":
    print(json.dumps(run(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT)))
