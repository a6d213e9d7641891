"""Median recommendation time per workload x objective, cold (engine caches cleared) / warm.

Usage: python -m bench.measure_recommend DATABASE_URL [RUNS]  (build a scale DB with
bench.bench_scale.build). Prints one line per workload: objective cold/warm in ms.
"""
import statistics
import sys
import time

from sqlmodel import Session

from bench.profile_recommend import WORKLOADS, clear_caches, query
from service.common import utcnow
from service.config import Settings
from service.db import make_engine
from service.workloads.service import recommend_for

url=sys.argv[1]; runs=int(sys.argv[2]) if len(sys.argv)>2 else 7
e=make_engine(url); s=Settings(database_url=url)
with Session(e) as ses:
    recommend_for(ses,submission=query(list(WORKLOADS)[0],'cost'),objective='cost',limit=10,settings=s,now=utcnow())
    for name in WORKLOADS:
        row=[]
        for obj in ('cost','time','energy','balanced'):
            q=query(name,obj); cold=[]; warm=[]
            for i in range(runs):
                clear_caches(); t=time.perf_counter(); recommend_for(ses,submission=q,objective=obj,limit=10,settings=s,now=utcnow()); cold.append(time.perf_counter()-t)
                t=time.perf_counter(); recommend_for(ses,submission=q,objective=obj,limit=10,settings=s,now=utcnow()); warm.append(time.perf_counter()-t)
            row.append(f"{obj} {statistics.median(cold)*1000:.1f}/{statistics.median(warm)*1000:.1f}")
        print(name, ' | '.join(row), flush=True)
