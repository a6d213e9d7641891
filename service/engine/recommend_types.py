"""Frozen dataclasses for recommendations: offers, constraints, cost, candidates, rejections.

Units are in the field names. Money is USD; ``_per_hour`` is per wall-clock hour of the whole
rented (or owned) set of GPUs, including every replica.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any, Literal

from service.engine.types import Estimate, Fix, _cached_hash

Pricing = Literal["on_demand", "spot", "reserved_1y", "reserved_3y", "purchase"]
Deployment = Literal["cloud", "on_prem", "edge"]
Objective = Literal["cost", "time", "balanced", "energy"]
RejectionCode = Literal[
    "memory",
    "constraint",
    "budget",
    "deadline",
    "latency",
    "precision",
    "no_quote",
    "power",
    "interconnect",
    "network",
    "outranked",
]
Fabric = Literal["infiniband", "efa", "roce", "ethernet", "none"]
"""The network between instances: an RDMA fabric (InfiniBand, AWS EFA, RoCE), plain ethernet,
or none (instances of this type are not networked together)."""
RDMA_FABRICS: tuple[Fabric, ...] = ("infiniband", "efa", "roce")
WarningCode = Literal[
    "estimate",
    "stale_quote",
    "spot_capacity",
    "no_price",
    "partial_quote_coverage",
    "no_rdma_fabric",
    "tpot_above_reading_speed",
    "pipeline_deeper_than_node",
    "edge_latency_high",
]
"""Machine-readable candidate warnings (``estimate``: a note from the estimate itself)."""

RENTAL_PRICING: tuple[Pricing, ...] = ("on_demand", "spot", "reserved_1y", "reserved_3y")
DEFAULT_PRICING: tuple[Pricing, ...] = ("on_demand", "reserved_1y", "reserved_3y")
"""Spot is opt-in: it can be reclaimed mid-job, so it is never picked unless asked for."""

DEFAULT_ELECTRICITY_USD_PER_KWH = 0.15
"""[USD/kWh] Rounded US commercial average (EIA Electric Power Monthly, table 5.6.A, 2024:
~0.13 USD/kWh commercial, ~0.08 industrial; 0.15 leaves room for taxes and demand charges)."""
DEFAULT_AMORTIZATION_YEARS = 3.0
"""[years] Straight-line depreciation period for servers used by hyperscalers' filings
(Microsoft/Alphabet 10-K 2022: servers 4-6 years; 3 years is the conservative GPU refresh)."""
DEFAULT_DATACENTER_PUE = 1.0
"""[-] Power usage effectiveness. 1.0 = GPU power only; a typical data center is ~1.56
(Uptime Institute Global Data Center Survey 2023), hyperscale ~1.1 (Google 2023 report)."""
DEFAULT_HOURS_PER_MONTH = 730.0
"""[h] 8760 h per year / 12."""


@dataclass(frozen=True)
class Offer:
    """One price quote for an instance (or, for ``purchase``, one card)."""

    __hash__ = _cached_hash

    quote_id: int
    gpu_slug: str
    provider: str
    region: str
    instance_type: str
    gpu_count: int
    """GPUs in ONE instance (purchase quotes: 1 card)."""
    pricing: Pricing
    price_usd_per_hour: float | None = None
    """Whole instance [USD/h]; None for purchase quotes."""
    purchase_price_usd: float | None = None
    """One unit [USD]; purchase quotes only."""
    age_days: float = 0.0
    """Days since the source observed the price (the caller computes it from observed_at)."""
    stale: bool = False
    """The price is older than the caller's staleness limit: used, with a warning."""
    observed_at: date | None = None
    """The day the source observed the price; None = not given."""
    network_gbps: float | None = None
    """Network bandwidth of ONE instance [Gb/s] (purchase quotes: of one node built from the
    cards); None = unknown."""
    fabric: Fabric | None = None
    """None = unknown."""
    multi_node: bool = False
    """Clusters of several instances of this type are offered (placement groups, cluster
    fabrics); False or unknown: no plan spans instances of this offer."""
    network_source: str | None = None

    def clusters(self) -> bool:
        """Several instances of this offer may form one job: multi-node clusters are offered
        over a known fabric at a known rate."""
        return (self.multi_node and self.fabric not in (None, "none")
                and (self.network_gbps or 0.0) > 0)


@dataclass(frozen=True)
class Constraints:
    """Limits on the answer. Every field is optional; an empty instance allows everything."""

    __hash__ = _cached_hash

    max_gpus: int | None = None
    gpu_slugs: tuple[str, ...] | None = None
    exclude_gpu_slugs: tuple[str, ...] = ()
    vendors: tuple[str, ...] | None = None
    form_factors: tuple[str, ...] | None = None
    deployment: Deployment | None = None
    """cloud/None: rental quotes only; on_prem/edge: purchase quotes, amortized."""
    max_power_w: float | None = None
    """Per GPU [W], compared with the board TDP."""
    providers: tuple[str, ...] | None = None
    regions: tuple[str, ...] | None = None
    pricing: tuple[Pricing, ...] = DEFAULT_PRICING
    budget_usd: float | None = None
    """Training/compute: total to finish [USD]."""
    max_usd_per_hour: float | None = None
    deadline_hours: float | None = None
    require_fast_interconnect: bool = False
    """Only GPUs with NVLink or Infinity Fabric."""
    time_tolerance: float = 0.05
    """Objective ``time``: answers within this fraction of the fastest count as fast as it,
    and the cheapest of them ranks first (:data:`service.engine.choice.ranking.TIME_TOLERANCE`,
    the default)."""


@dataclass(frozen=True)
class CostSettings:
    electricity_usd_per_kwh: float = DEFAULT_ELECTRICITY_USD_PER_KWH
    amortization_years: float = DEFAULT_AMORTIZATION_YEARS
    datacenter_pue: float = DEFAULT_DATACENTER_PUE
    hours_per_month: float = DEFAULT_HOURS_PER_MONTH

    def __post_init__(self) -> None:
        if self.electricity_usd_per_kwh < 0:
            raise ValueError("electricity_usd_per_kwh must be >= 0")
        if self.amortization_years <= 0:
            raise ValueError("amortization_years must be > 0")
        if self.datacenter_pue < 1.0:
            raise ValueError("datacenter_pue must be >= 1")
        if self.hours_per_month <= 0:
            raise ValueError("hours_per_month must be > 0")


@dataclass(frozen=True)
class CostBreakdown:
    """What the chosen offer costs for this workload. None = does not apply or unknown."""

    __hash__ = _cached_hash

    known: bool
    """False = no usable quote: every money figure is None."""
    usd_per_hour: float | None = None
    total_usd: float | None = None
    """Training/compute: usd_per_hour x time to finish."""
    usd_per_million_output_tokens: float | None = None
    usd_per_1k_requests: float | None = None
    replicas: int = 1
    """Inference: copies of the GPU group needed for the target requests/s."""
    instances: int = 0
    """Instances of the offer (or purchased units), all replicas included."""
    gpus: int = 0
    """GPUs paid for, all replicas included."""
    owned: bool = False
    amortized_usd_per_hour: float | None = None
    power_usd_per_hour: float | None = None
    break_even_months: float | None = None
    """Owned: months of 24/7 use after which buying beats the cheapest rental of the GPU."""
    energy_kwh_total: float | None = None
    """Training/compute: energy to finish (the estimate's) [kWh]; None for inference."""
    energy_kwh_per_hour: float | None = None
    """Inference: energy per hour of serving, all replicas [kWh/h]; None for training/compute."""


@dataclass(frozen=True)
class Notice:
    """A candidate warning: a stable ``code`` for machines, a ``message`` for people."""

    code: WarningCode
    message: str


@dataclass(frozen=True)
class Provision:
    """Deployable specs for a candidate (see :mod:`service.engine.choice.provision`)."""

    skypilot_yaml: str | None
    """A SkyPilot task YAML (with a SkyServe ``service:`` block for serving); None when the
    answer cannot be launched on a SkyPilot cloud (``skypilot_note`` says why)."""
    kubernetes: tuple[dict[str, Any], ...] = ()
    """Complete Kubernetes manifests (apiVersion, kind, metadata, spec)."""
    skypilot_note: str | None = None
    kubernetes_note: str | None = None


NOT_PROVISIONED = Provision(
    None, (), skypilot_note="not built: the ranked summary lists no provisioning",
    kubernetes_note="not built: the ranked summary lists no provisioning")
"""A summary's candidates' :class:`Provision` (see :attr:`Recommendation.explained`)."""


@dataclass(frozen=True)
class Candidate:
    rank: int
    gpu_slug: str
    gpu_name: str
    gpu_count: int
    """GPUs the answer runs and pays for, every replica included (= ``cost.gpus``)."""
    replicas: int
    """Model copies the answer runs: inference, the serving replicas (the load's share each
    carries is the estimate's ``offered_requests_per_s`` / ``estimate.replicas``); training,
    the data-parallel replicas; compute jobs, 1."""
    gpus_per_replica: int
    """GPUs one copy runs on: inference/training TP x PP; compute jobs, all of them.
    ``replicas x gpus_per_replica == gpu_count``."""
    offer: Offer | None
    estimate: Estimate
    cost: CostBreakdown
    score: float
    """The value ranked on, lower is better (see service.engine.choice.ranking)."""
    pareto_optimal: bool
    reasons: tuple[str, ...]
    warnings: tuple[Notice, ...]
    provision: Provision


@dataclass(frozen=True)
class Rejection:
    gpu_slug: str
    gpu_name: str
    reason: str
    fix: Fix
    code: RejectionCode
    other_fixes: tuple[Fix, ...] = ()
    """Further changes that would also work (e.g. int8 weights besides more GPUs)."""


@dataclass(frozen=True)
class Recommendation:
    objective: Objective
    recommendations: tuple[Candidate, ...]
    rejected: tuple[Rejection, ...]
    warnings: tuple[str, ...] = ()
    explained: bool = True
    """False: built for a ranked summary (``recommend(explained=False)``): each candidate's
    ``reasons`` are empty, its ``provision`` is :data:`NOT_PROVISIONED`, a training
    estimate's ``parallel_efficiency`` is None, and an ``outranked`` or ``memory``
    rejection's ``reason`` is empty (a memory one's fix too); every other figure is the
    explained answer's."""
