"""Picking the offer, and what a workload costs on it: to finish, per unit of work, per hour.

Rules (all pure arithmetic on the quote and the estimate):

* An offer is bought as whole instances. ``n`` GPUs from an offer of ``g`` GPUs per instance
  take ``ceil(n / g)`` instances, and the job is estimated on the ``ceil(n / g) * g`` GPUs
  actually rented. Several instances are combined only when each is a whole node
  (``g >= max_gpus_per_node``) and the offer says clusters of it are offered over a known
  fabric at a known rate (:meth:`Offer.clusters`): eight 1-GPU VMs, or VMs with no (or an
  unknown) network between them, never form one job. Owned hardware (purchase quotes) spans
  nodes of ``max_gpus_per_node`` cards only when its quote names the network the same way.
  A multi-node option is estimated at the offer's own rate per GPU
  (``network_gbps / 8 / GPUs per node``, :func:`network_gpu`), never a rate assumed from
  the GPU's form factor.
* Rented hourly cost = instances x ``price_usd_per_hour`` (the quote is for the whole instance).
* Owned hourly cost (deployment on_prem/edge, ``purchase`` quotes)::

      amortized = purchase_price_usd x units / (amortization_years x 8760 h)
      power     = power_w / 1000 x datacenter_pue x electricity_usd_per_kwh
      usd_per_hour = amortized + power

  where ``power_w`` is the estimate's sustained draw (count x TDP x utilization).
* Break-even (owned vs the cheapest rental of the same GPU, 24/7 use)::

      months = purchase_total / (rent_usd_per_hour - power_usd_per_hour) / hours_per_month

  None when renting costs no more than the electricity (buying never pays back).
* Training/compute: ``total_usd = usd_per_hour x time_to_complete_hours`` (never a 1-hour
  assumption). Inference: ``replicas = ceil(target_requests_per_s / requests_per_s)`` (1
  without a target), ``usd_per_hour`` covers every replica, and
  ``usd_per_million_output_tokens = usd_per_hour / (tokens_per_s x replicas x 3600) x 1e6``
  (LLMs with output tokens) or ``usd_per_1k_requests`` likewise per 1000 requests.
  With a ``target_requests_per_s`` the denominator is the work actually served (the target),
  not the replicas' capacity: an H100 serving 5,000 of the 90,000 ResNet-50 requests/s it could
  serve is billed in full, so its cost per request is that of the hour / 5,000 req/s. Without a
  target, the capacity (a fully loaded deployment) is used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from service.engine.cache import Memo, memo_of
from service.engine.constants import POWER_UTILIZATION
from service.engine.physics.estimate import copies_needed
from service.engine.physics.parallelism import network_gb_s
from service.engine.recommend_types import (
    RENTAL_PRICING,
    Constraints,
    CostBreakdown,
    CostSettings,
    Offer,
)
from service.engine.types import Estimate, GpuSpec, Workload

HOURS_PER_YEAR = 8760.0
"""[h] 365 x 24."""
SECONDS_PER_HOUR = 3600.0
TOKENS_PER_MILLION = 1e6
BITS_PER_BYTE = 8.0
REQUESTS_PER_UNIT = 1000.0
"""Non-LLM inference is priced per 1000 requests."""


def group_offers(offers: Iterable[Offer]) -> dict[str, tuple[Offer, ...]]:
    """Offers by gpu slug, each group sorted by quote_id (one pass; input order irrelevant)."""
    groups: dict[str, list[Offer]] = {}
    for offer in offers:
        groups.setdefault(offer.gpu_slug, []).append(offer)
    return {slug: tuple(sorted(g, key=lambda o: o.quote_id)) for slug, g in groups.items()}


class OfferIndex:
    """The offers grouped by GPU slug, with each group's usable subset, cheapest GPU-hour,
    cheapest offer per count and fastest network remembered per the constraint fields they
    read (providers, regions, deployment, pricing).

    A ranking asks both for every GPU type; on a 5,000-GPU catalog that is ~0.1 s per request
    spent on answers that only change with the offer list. The caller keeps one index per
    offer list (:func:`offer_index`); values are immutable tuples and floats, so concurrent
    readers may fill it (two threads computing one entry store equal values)."""

    MAX_ENTRIES = 65_536
    """Remembered answers per index; past it they are computed and not stored."""
    MAX_SCREENS = 16
    """Screen tables per index (:mod:`screen`: one per catalog, place and price filter, count
    cap and precision; each ~1 MB at 5,000 GPU types); past it the oldest is dropped."""

    def __init__(self, offers: Iterable[Offer]) -> None:
        self.groups = group_offers(offers)
        self._usable: dict[tuple[object, ...], tuple[Offer, ...]] = {}
        self._cheapest: dict[tuple[object, ...], float | None] = {}
        self._fastest: dict[tuple[object, ...], GpuSpec] = {}
        self._plans: dict[tuple[object, ...], dict[int, tuple[Offer, int]]] = {}
        self._networks: dict[tuple[object, ...], tuple[NDArray[np.float64],
                                                        NDArray[np.float64]]] = {}
        self.screens: dict[tuple[object, ...], tuple[object, Any]] = {}
        """The screen tables of this offer list (:func:`screen.table`)."""

    @staticmethod
    def _place(slug: str, c: Constraints) -> tuple[object, ...]:
        return (slug, c.providers, c.regions, owns(c), c.pricing)

    def usable(self, slug: str, constraints: Constraints) -> tuple[Offer, ...]:
        """:func:`usable_offers` of the GPU's group."""
        key = self._place(slug, constraints)
        got = self._usable.get(key)
        if got is None:
            got = usable_offers(self.groups.get(slug, ()), constraints)
            if len(self._usable) < self.MAX_ENTRIES:
                self._usable[key] = got
        return got

    def fastest_network_gpu(self, gpu: GpuSpec, constraints: Constraints) -> GpuSpec:
        """:func:`fastest_network_gpu` over :meth:`usable` of ``gpu``: the same object for
        every request with the same place fields (its hash, part of the bounds' memo keys, is
        then computed once, not once a request)."""
        key = (*self._place(gpu.slug, constraints), gpu)
        got = self._fastest.get(key)
        if got is None:
            got = fastest_network_gpu(gpu, self.usable(gpu.slug, constraints))
            if len(self._fastest) < self.MAX_ENTRIES:
                self._fastest[key] = got
        return got

    def cheapest_offers(self, gpu: GpuSpec, constraints: Constraints, counts: tuple[int, ...],
                        max_count: int) -> Mapping[int, tuple[Offer, int]]:
        """:func:`cheapest_offers` over :meth:`usable` of ``gpu`` (read only: shared by every
        request with the same place fields, counts and cap)."""
        key = (*self._place(gpu.slug, constraints), gpu, counts, max_count)
        got = self._plans.get(key)
        if got is None:
            got = cheapest_offers(gpu, self.usable(gpu.slug, constraints), counts, max_count)
            if len(self._plans) < self.MAX_ENTRIES:
                self._plans[key] = got
        return got

    def plan_networks(self, gpu: GpuSpec, constraints: Constraints, counts: tuple[int, ...],
                      max_count: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """:func:`plan_networks` of :meth:`cheapest_offers` (read only, shared alike): a
        compute job's figures time every count of a plan at once, and these arrays are the
        same for every request that plans the GPU so."""
        key = (*self._place(gpu.slug, constraints), gpu, counts, max_count)
        got = self._networks.get(key)
        if got is None:
            got = plan_networks(self.cheapest_offers(gpu, constraints, counts, max_count),
                                max(1, gpu.max_gpus_per_node))
            for column in got:
                column.flags.writeable = False
            if len(self._networks) < self.MAX_ENTRIES:
                self._networks[key] = got
        return got

    def cheapest_gpu_hour(
        self, gpu: GpuSpec, constraints: Constraints, smallest: int, max_count: int,
        settings: CostSettings,
    ) -> float | None:
        """:func:`cheapest_gpu_hour` over :meth:`usable` of ``gpu``."""
        key = (*self._place(gpu.slug, constraints), gpu, smallest, max_count, settings)
        if key in self._cheapest:
            return self._cheapest[key]
        got = cheapest_gpu_hour(gpu, self.usable(gpu.slug, constraints), smallest, max_count,
                                settings)
        if len(self._cheapest) < self.MAX_ENTRIES:
            self._cheapest[key] = got
        return got


def offer_index(offers: Iterable[Offer], memo: Memo) -> OfferIndex:
    """The :class:`OfferIndex` of ``offers``: kept in the memo's shared cache (table
    ``offer_index``, a couple of entries) for a list or tuple the caller passes again
    unchanged, as the service does with its per-snapshot offer list; built afresh otherwise."""
    if not isinstance(offers, (list, tuple)):
        return OfferIndex(offers)
    key = (id(offers), len(offers))
    held, index = memo.get("offer_index", key, lambda: (offers, OfferIndex(offers)))
    # the entry holds the list itself, so its id cannot be reused while the entry lives
    return index if held is offers else OfferIndex(offers)


def owns(constraints: Constraints) -> bool:
    """True when the deployment is bought (on_prem, edge) rather than rented."""
    return constraints.deployment in ("on_prem", "edge")


def _allowed_place(offer: Offer, constraints: Constraints) -> bool:
    if constraints.providers is not None and offer.provider not in constraints.providers:
        return False
    return (
        constraints.regions is None
        or offer.region in constraints.regions
        or (offer.pricing == "purchase")
    )


def usable_offers(offers: Sequence[Offer], constraints: Constraints) -> tuple[Offer, ...]:
    """The quotes this request may use: purchase quotes when owning, else allowed rentals."""
    out: list[Offer] = []
    for offer in offers:
        if offer.gpu_count < 1 or not _allowed_place(offer, constraints):
            continue
        if owns(constraints):
            if offer.pricing == "purchase" and (offer.purchase_price_usd or -1.0) >= 0:
                out.append(offer)
        elif (
            offer.pricing in RENTAL_PRICING
            and offer.pricing in constraints.pricing
            and (offer.price_usd_per_hour or -1.0) >= 0
        ):
            out.append(offer)
    return tuple(out)


def rental_usd_per_gpu_hour(offers: Sequence[Offer], constraints: Constraints) -> float | None:
    """Cheapest rental rate per GPU-hour among the allowed rental quotes (break-even baseline)."""
    rental = usable_offers(
        offers,
        Constraints(
            providers=constraints.providers,
            regions=constraints.regions,
            pricing=constraints.pricing,
        ),
    )
    rates = [o.price_usd_per_hour / o.gpu_count for o in rental if o.price_usd_per_hour is not None]
    return min(rates) if rates else None


def joins_nodes(offer: Offer, per_node: int) -> bool:
    """Whether one job may span several of ``offer``'s instances (a purchase: more than one
    node of ``per_node`` cards): only where the offer clusters, and for rentals only whole-node
    instances (partial-node instances are never combined; see the module docstring). The one
    statement of that rule: :func:`instances_for`, :func:`cheapest_offers` and
    :func:`count_reach` read it."""
    if not offer.clusters():
        return False
    return offer.pricing == "purchase" or offer.gpu_count >= per_node


def instances_for(gpu: GpuSpec, offer: Offer, count: int) -> tuple[int, int] | None:
    """(instances, GPUs rented) to get at least ``count`` GPUs from ``offer``, or None when
    it would take several partial-node instances (see the module docstring)."""
    per_node = max(1, gpu.max_gpus_per_node)
    if offer.pricing == "purchase":
        if count > per_node and not joins_nodes(offer, per_node):
            return None
        return count, count
    per_instance = offer.gpu_count
    instances = -(-count // per_instance)
    if instances > 1 and not joins_nodes(offer, per_node):
        return None
    return instances, instances * per_instance


def network_rate(gpu: GpuSpec, offer: Offer | None, count: int) -> float | None:
    """The per-GPU network rate [GB/s] ``count`` GPUs of ``offer`` run at when they span
    nodes (the offer's Gb/s / 8 over the GPUs of one node); None when they do not, or the
    offer states no rate."""
    return _network_rate(offer, count, max(1, gpu.max_gpus_per_node))


def _network_rate(offer: Offer | None, count: int, per_node: int) -> float | None:
    if offer is None or count <= per_node:
        return None
    return network_rate_per_node(offer, per_node)


def network_rate_per_node(offer: Offer, per_node: int) -> float | None:
    """:func:`network_rate` of a count of ``offer`` spanning nodes of ``per_node`` GPUs."""
    if not offer.network_gbps:
        return None
    gpus_in_node = offer.gpu_count if offer.pricing != "purchase" else per_node
    return offer.network_gbps / BITS_PER_BYTE / max(1, min(gpus_in_node, per_node))


def plan_networks(plan: Mapping[int, tuple[Offer | None, int]], per_node: int
                  ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The counts of ``plan`` (GPU count -> its offer and instances, ascending) and the
    network rate per GPU [GB/s] each runs at (:func:`network_rate_per_node` of its offer where
    it spans nodes of ``per_node`` GPUs; 0 where it does not, has no offer or the offer states
    no rate), as arrays."""
    counts = np.empty(len(plan))
    networks = np.zeros(len(plan))
    for i, (n, (offer, _)) in enumerate(plan.items()):
        counts[i] = n
        net = _network_rate(offer, n, per_node)
        if net is not None:
            networks[i] = net
    return counts, networks


def network_gpu(gpu: GpuSpec, offer: Offer | None, count: int,
                memo: Memo | None = None) -> GpuSpec:
    """``gpu`` as estimated on ``count`` GPUs of ``offer``: when they span nodes, carrying the
    offer's network rate per GPU (:func:`network_rate`); otherwise unchanged (the network is
    unused, and the shared estimate cache keeps one entry). With a ``memo`` the same rate
    gives the same object (its hash, a key of every estimate, is then computed once)."""
    rate = network_rate(gpu, offer, count)
    if rate is None:
        return gpu
    return memo_of(memo).get("network_gpu", (gpu, rate),
                             lambda: replace(gpu, network_gb_s_per_gpu=rate))


def fastest_network_gpu(gpu: GpuSpec, offers: Sequence[Offer]) -> GpuSpec:
    """``gpu`` carrying the fastest per-GPU network of its clustering offers when that beats
    the class default: lower bounds must hold for every offer's network."""
    span = 2 * max(1, gpu.max_gpus_per_node)
    rates = (network_rate(gpu, o, span) for o in offers if o.clusters())
    best = max(((gpu.network_gb_s_per_gpu if r is None else r) or 0.0 for r in rates),
               default=0.0)
    if best <= network_gb_s(gpu):
        return gpu
    return replace(gpu, network_gb_s_per_gpu=best)


def group_usd_per_hour(offer: Offer, instances: int) -> float:
    """Hourly price of ``instances`` rented instances (rentals only) [USD/h]."""
    assert offer.price_usd_per_hour is not None
    return instances * offer.price_usd_per_hour


def cheapest_offers(
    gpu: GpuSpec, offers: Sequence[Offer], counts: Iterable[int], max_count: int
) -> dict[int, tuple[Offer, int]]:
    """For each GPU count actually rented (ascending): the cheapest offer and its instances.

    Rentals compare instances x hourly price; purchases compare the card price. Ties go to the
    lower quote_id, so the choice is deterministic.
    """
    best: dict[int, tuple[float, int, Offer, int]] = {}
    per_node = max(1, gpu.max_gpus_per_node)
    wanted = sorted(counts)
    for offer in offers:
        # instances_for inlined: GPUs rented grow with the count, and a count needing several
        # partial-node instances means every larger one does too, so each stops a scan
        purchase = offer.pricing == "purchase"
        per_instance = offer.gpu_count
        joins = joins_nodes(offer, per_node)
        for count in wanted:
            if purchase:
                if count > per_node and not joins:
                    break
                instances = rented = count
            else:
                instances = -(-count // per_instance)
                if instances > 1 and not joins:
                    break
                rented = instances * per_instance
            if rented > max_count:
                break
            if purchase:
                assert offer.purchase_price_usd is not None
                price = offer.purchase_price_usd * instances
            else:
                price = group_usd_per_hour(offer, instances)
            current = best.get(rented)
            if current is None or price < current[0] or (
                price == current[0] and offer.quote_id < current[1]
            ):
                best[rented] = (price, offer.quote_id, offer, instances)
    return {n: (v[2], v[3]) for n, v in sorted(best.items())}


def count_reach(gpu: GpuSpec, offers: Sequence[Offer], max_count: int) -> int:
    """An upper bound of the GPUs any option of ``gpu`` can hold, at most ``max_count``: of
    what :func:`cheapest_offers` can plan over ``offers`` (``max_count`` where an offer
    :func:`joins_nodes`, else one instance; a purchase, one node) and of the single-node counts
    the ranking weighs without a plan (one node, or ``max_count`` where that is less). Every
    count a ranking weighs is at most this, so a bound that falls with the count may be taken
    here instead of at ``max_count`` (an FP64 job's time on 8 MI300X offered as single nodes is
    not bounded by its time on 1,024)."""
    per_node = max(1, gpu.max_gpus_per_node)
    reach = per_node
    for offer in offers:
        if joins_nodes(offer, per_node):
            return max(1, max_count)
        reach = max(reach, per_node if offer.pricing == "purchase" else offer.gpu_count)
    return max(1, min(reach, max_count))


def usd_per_gpu_hour(offer: Offer, gpu: GpuSpec, settings: CostSettings) -> float:
    """What one GPU of ``offer`` costs per hour: :func:`cost_breakdown`'s ``usd_per_hour`` is
    exactly this x the GPUs paid for (rentals: instance price / GPUs per instance; owned:
    amortized card + power at the estimate's draw, ``tdp x POWER_UTILIZATION`` per GPU)."""
    if offer.pricing != "purchase":
        assert offer.price_usd_per_hour is not None
        return offer.price_usd_per_hour / offer.gpu_count
    assert offer.purchase_price_usd is not None
    amortized = offer.purchase_price_usd / (settings.amortization_years * HOURS_PER_YEAR)
    power_w = gpu.tdp_w * POWER_UTILIZATION
    return amortized + power_w / 1000.0 * settings.datacenter_pue * settings.electricity_usd_per_kwh


def cheapest_gpu_hour(
    gpu: GpuSpec, offers: Sequence[Offer], smallest: int, max_count: int, settings: CostSettings
) -> float | None:
    """The lowest :func:`usd_per_gpu_hour` among offers that can serve some count from
    ``smallest`` to ``max_count``; None when :func:`cheapest_offers` would find no plan.

    An offer unusable at ``smallest`` (several partial-node instances, or more than
    ``max_count`` GPUs rented) is unusable at every larger count too, so checking the smallest
    count alone decides it, in one pass over the offers."""
    best: float | None = None
    for offer in offers:
        plan = instances_for(gpu, offer, smallest)
        if plan is None or plan[1] > max_count:
            continue
        rate = usd_per_gpu_hour(offer, gpu, settings)
        best = rate if best is None or rate < best else best
    return best


def replicas_needed(workload: Workload, est: Estimate) -> int:
    """Copies of the estimated GPU group needed for the target requests/s (1 without one)."""
    spec = workload.inference
    if workload.kind != "inference" or spec is None or not spec.target_requests_per_s:
        return 1
    return copies_needed(spec.target_requests_per_s, est.requests_per_s or 0.0)


def is_llm_serving(workload: Workload) -> bool:
    spec = workload.inference
    return spec is not None and spec.output_tokens > 0


def power_usd_per_hour_w(power_w: float | None, settings: CostSettings) -> float:
    """Electricity for a sustained draw of ``power_w`` [W] (None: 0) [USD/h]."""
    return (
        (power_w or 0.0) / 1000.0 * settings.datacenter_pue * (settings.electricity_usd_per_kwh)
    )


def hourly_usd(
    offer: Offer, instances: int, replicas: int, power_w: float | None, settings: CostSettings
) -> tuple[float, float | None, float | None, float | None]:
    """(USD/h, amortized USD/h, power USD/h, purchase total USD) of ``replicas`` x
    ``instances`` of ``offer`` drawing ``power_w`` [W] per replica: a rental's hourly price;
    an owned card's purchase amortized over the settings' years plus its electricity (the
    last three None for rentals)."""
    if offer.pricing != "purchase":
        return group_usd_per_hour(offer, instances) * replicas, None, None, None
    assert offer.purchase_price_usd is not None
    purchase_total = offer.purchase_price_usd * instances * replicas
    amortized = purchase_total / (settings.amortization_years * HOURS_PER_YEAR)
    power = power_usd_per_hour_w(power_w, settings) * replicas
    return amortized + power, amortized, power, purchase_total


def break_even_months(
    purchase_total_usd: float, rent_usd_per_hour: float, power_usd_h: float, hours_month: float
) -> float | None:
    """Months of 24/7 use after which owning is cheaper than renting; None if never."""
    saving = rent_usd_per_hour - power_usd_h
    if saving <= 0:
        return None
    return purchase_total_usd / saving / hours_month


def served_fraction(target_rps: float | None, capacity_rps: float) -> float:
    """Share of the replicas' capacity that does paid work: target / capacity with a target
    (the rest is idle headroom you still pay for), 1 without one."""
    if not target_rps or capacity_rps <= 0:
        return 1.0
    return min(1.0, target_rps / capacity_rps)


def unit_rates(
    workload: Workload, est: Estimate, replicas: int, usd_per_hour: float | None
) -> tuple[float | None, float | None, float | None]:
    """(usd_per_million_output_tokens, usd_per_1k_requests, kWh per the same unit)."""
    if workload.kind != "inference" or workload.inference is None:
        return None, None, None
    return unit_rates_of(workload, est.power_w, est.requests_per_s, est.tokens_per_s, replicas,
                         usd_per_hour)


def unit_rates_of(
    workload: Workload, power_w: float | None, requests_s: float | None,
    tokens_s: float | None, replicas: int, usd_per_hour: float | None,
) -> tuple[float | None, float | None, float | None]:
    """:func:`unit_rates` of a serving option from its estimate's figures (power [W],
    requests/s and output tokens/s of one group) rather than the estimate."""
    spec = workload.inference
    assert spec is not None
    kw = (power_w or 0.0) / 1000.0 * replicas
    capacity_rps = (requests_s or 0.0) * replicas
    served = served_fraction(spec.target_requests_per_s, capacity_rps)
    if is_llm_serving(workload):
        per_hour_units = (tokens_s or 0.0) * replicas * served * SECONDS_PER_HOUR
        scale = TOKENS_PER_MILLION
    else:
        per_hour_units = capacity_rps * served * SECONDS_PER_HOUR
        scale = REQUESTS_PER_UNIT
    if per_hour_units <= 0:
        return None, None, None
    energy = kw / per_hour_units * scale
    money = None if usd_per_hour is None else usd_per_hour / per_hour_units * scale
    if is_llm_serving(workload):
        return money, None, energy
    return None, money, energy


def unit_rate_lower_bound(
    workload: Workload,
    objective: str,
    gpu: GpuSpec,
    n: int,
    offer: Offer | None,
    instances: int,
    replicas: int = 1,
) -> float | None:
    """A cost (USD, or GPU-hours without an offer) or energy per unit of work that no option of
    ``n`` GPUs can beat, known before estimating it; None: no bound (not inference with a
    target, another objective, or owned GPUs, whose amortization + power is not bounded).

    :func:`unit_rates` divides by the work served, which is the target whatever the count
    (at most the target when capacity falls short), while the hourly price, GPUs and power
    grow with the replicas: the rate with ``replicas`` (a number of them the option cannot go
    below; 1 when none is known) bounds it from below."""
    spec = workload.inference
    if spec is None or not spec.target_requests_per_s or objective not in ("cost", "energy"):
        return None
    llm = is_llm_serving(workload)
    units = spec.target_requests_per_s * (spec.output_tokens if llm else 1) * SECONDS_PER_HOUR
    scale = TOKENS_PER_MILLION if llm else REQUESTS_PER_UNIT
    if objective == "energy":
        return replicas * n * gpu.tdp_w * POWER_UTILIZATION / 1000.0 / units * scale
    if offer is None:
        return replicas * n / units * scale
    if offer.pricing == "purchase":
        return None
    return replicas * group_usd_per_hour(offer, instances) / units * scale


def cost_breakdown(
    workload: Workload,
    est: Estimate,
    offer: Offer | None,
    instances: int,
    settings: CostSettings,
    rent_per_gpu_hour: float | None = None,
) -> CostBreakdown:
    """Cost of running ``workload`` as estimated in ``est`` on ``instances`` of ``offer``.

    ``rent_per_gpu_hour`` is the cheapest rental of the same GPU, for the break-even figure.
    """
    replicas = replicas_needed(workload, est)
    gpus = est.gpu_count * replicas
    training_like = workload.kind != "inference"
    energy_total = est.energy_kwh_total if training_like else None
    energy_hourly = (None if training_like or est.energy_kwh_per_hour is None
                     else est.energy_kwh_per_hour * replicas)
    if offer is None:
        return CostBreakdown(known=False, replicas=replicas, gpus=gpus,
                             energy_kwh_total=energy_total, energy_kwh_per_hour=energy_hourly)
    owned = offer.pricing == "purchase"
    months = None
    usd_h, amortized, power, purchase_total = hourly_usd(
        offer, instances, replicas, est.power_w, settings)
    if owned and rent_per_gpu_hour is not None:
        assert power is not None and purchase_total is not None
        months = break_even_months(
            purchase_total, rent_per_gpu_hour * gpus, power, settings.hours_per_month
        )
    hours = est.time_to_complete_hours
    total = usd_h * hours if training_like and hours is not None else None
    per_mtok, per_1k, _ = unit_rates(workload, est, replicas, usd_h)
    return CostBreakdown(
        known=True,
        usd_per_hour=usd_h,
        total_usd=total,
        usd_per_million_output_tokens=per_mtok,
        usd_per_1k_requests=per_1k,
        replicas=replicas,
        instances=instances * replicas,
        gpus=gpus,
        owned=owned,
        amortized_usd_per_hour=amortized,
        power_usd_per_hour=power,
        break_even_months=months,
        energy_kwh_total=energy_total,
        energy_kwh_per_hour=energy_hourly,
    )


def describe_offer(offer: Offer, instances: int, settings: CostSettings) -> str:
    """ "aws p5.48xlarge us-east-1 on_demand $98.32/h for 8 GPUs" (x instances when > 1)."""
    if offer.pricing == "purchase":
        assert offer.purchase_price_usd is not None
        return (
            f"bought: {offer.provider} {offer.instance_type} ${offer.purchase_price_usd:,.0f} "
            f"per card x {instances}, amortized over {settings.amortization_years:g} years"
        )
    assert offer.price_usd_per_hour is not None
    text = (
        f"{offer.provider} {offer.instance_type} {offer.region} {offer.pricing} "
        f"${offer.price_usd_per_hour:,.2f}/h for {offer.gpu_count} GPU"
        f"{'s' if offer.gpu_count > 1 else ''}"
    )
    return text if instances == 1 else f"{instances} x {text}"


def duration(hours: float) -> str:
    """A time to finish for people: seconds under a minute, minutes under an hour, hours
    above (with days from a day)."""
    seconds = hours * 3600.0
    # each unit while its rounded figure stays below the next unit (59.96 s reads "1 min")
    if seconds < 0.9995:
        return f"{seconds * 1e3:.3g} ms" if seconds >= 0.0009995 else "under 1 ms"
    if seconds < 59.95:
        return f"{seconds:.3g} s"
    if seconds < 3597.0:
        return f"{max(1.0, seconds / 60.0):.3g} min"
    if hours < 23.95:
        return f"{hours:,.1f} h"
    return f"{hours:,.1f} h ({hours / 24:,.1f} days)"


def describe_cost(workload: Workload, cost: CostBreakdown, est: Estimate) -> str:
    """The cost figure the candidate is judged on, in words."""
    if not cost.known or cost.usd_per_hour is None:
        return "no usable price quote; cost unknown"
    rep = f" for {cost.replicas} replicas" if cost.replicas > 1 else ""
    hourly = f"${cost.usd_per_hour:,.2f}/h{rep}"
    if cost.owned:
        hourly += (
            f" (amortized ${cost.amortized_usd_per_hour or 0:,.3f}/h + power "
            f"${cost.power_usd_per_hour or 0:,.3f}/h)"
        )
    if cost.total_usd is not None and est.time_to_complete_hours is not None:
        total = cost.total_usd
        money = (f"${total:,.0f}" if total >= 99.5 else f"${total:.3g}" if total >= 0.01
                 else "under $0.01")
        return f"{money} to finish: {duration(est.time_to_complete_hours)} at {hourly}"
    if cost.usd_per_million_output_tokens is not None:
        return f"${cost.usd_per_million_output_tokens:,.3f} per million output tokens at {hourly}"
    if cost.usd_per_1k_requests is not None:
        return f"${cost.usd_per_1k_requests:,.4f} per 1000 requests at {hourly}"
    return hourly


def by_slug(gpus: Iterable[GpuSpec]) -> Mapping[str, GpuSpec]:
    return {gpu.slug: gpu for gpu in gpus}
