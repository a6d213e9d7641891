"""Plausibility checks on a chosen option: warnings with a stable code, never rejections.

A bot that deploys an answer acts on ``code``; people read ``message``. Each threshold is a
named constant with its source.
"""

from __future__ import annotations

from service.engine.recommend_types import RDMA_FABRICS, Constraints, Notice, Offer
from service.engine.types import Estimate, Workload

READING_SPEED_TPOT_MS = 100.0
"""[ms per output token] Above this, a streamed answer arrives slower than people read.
Databricks, "LLM Inference Performance Engineering: Best Practices" (2023): "a TPOT of 100
milliseconds/tok would be 10 tokens per second per user, or ~450 words per minute, which is
faster than a typical person can read" (adult silent reading ~240 wpm, Brysbaert 2019,
J. Memory and Language 109)."""
INTERACTIVE_LATENCY_MS = 100.0
"""[ms] Response time that feels instantaneous (Nielsen, Usability Engineering, 1993, ch. 5:
0.1 s); also ~3 frames of a 30 fps camera stream."""
EDGE_LATENCY_FACTOR = 2.0
"""Edge answers warn when a request takes more than this x :data:`INTERACTIVE_LATENCY_MS`
(only without a user latency limit: a given limit is the user's own definition)."""


def notices(workload: Workload, est: Estimate, offer: Offer | None,
            constraints: Constraints) -> list[Notice]:
    """The guardrail warnings for one option."""
    out: list[Notice] = []
    spec = workload.inference
    if (spec is not None and spec.output_tokens > 0 and spec.max_tpot_ms is None
            and est.tpot_ms is not None and est.tpot_ms > READING_SPEED_TPOT_MS):
        out.append(Notice(
            "tpot_above_reading_speed",
            f"{est.tpot_ms:,.0f} ms per output token ({1000 / est.tpot_ms:.1f} tokens/s) is "
            f"slower than people read (> {READING_SPEED_TPOT_MS:g} ms); no max_tpot_ms was "
            "given: set one to rank only answers that stream fast enough",
        ))
    p = est.parallelism
    if p.pipeline_parallel > max(1, p.gpus_per_node):
        out.append(Notice(
            "pipeline_deeper_than_node",
            f"{p.pipeline_parallel} pipeline stages over {p.nodes} nodes of {p.gpus_per_node} "
            "GPUs: every token crosses the network between nodes, and one slow or failed "
            "node stalls the whole pipeline",
        ))
    if (spec is not None and constraints.deployment == "edge" and spec.max_latency_ms is None
            and spec.max_ttft_ms is None and est.latency_ms is not None
            and est.latency_ms > EDGE_LATENCY_FACTOR * INTERACTIVE_LATENCY_MS):
        out.append(Notice(
            "edge_latency_high",
            f"{est.latency_ms:,.0f} ms per request (batch {est.batch_size}) is far above the "
            f"interactive range (~{INTERACTIVE_LATENCY_MS:g} ms); an edge stream usually "
            "needs max_latency_ms (and a small batch)",
        ))
    if offer is not None and p.nodes > 1 and offer.fabric not in RDMA_FABRICS:
        fabric = offer.fabric or "an unknown network"
        out.append(Notice(
            "no_rdma_fabric",
            f"spans {p.nodes} instances of {offer.instance_type} over {fabric} at "
            f"{offer.network_gbps or 0:g} Gb/s per instance, without an RDMA fabric "
            "(InfiniBand, EFA, RoCE): collectives between nodes are slow",
        ))
    return out
