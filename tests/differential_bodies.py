"""The request bodies of the differential test (tests/differential.py): seeded, random and
valid `POST /v1/recommendations` bodies covering every kind of workload, objective and
constraint the API takes, plus one body per engine consistency check (a 422)."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from functools import cache
from typing import Any

from service.app.seeding import seed_gpus, seed_quotes
from service.workloads.models import RecommendationQuery

SEED = 14
LLMS = ("gpt-2", "gpt-j-6b", "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3.1-8b",
        "llama-3.1-70b", "llama-3.1-405b", "mistral-7b", "mixtral-8x7b", "gpt-3-175b")
ENCODERS = ("bert-base", "bert-large")
VISION = ("resnet-50", "ssd300", "yolov8-l")
FINE_TUNABLE = ("llama-2-7b", "llama-3.1-8b", "mistral-7b", "llama-2-13b", "gpt-j-6b",
                "llama-3.1-70b", "mixtral-8x7b", "bert-base", "gpt-2")
PRICING = ("on_demand", "spot", "reserved_1y", "reserved_3y", "purchase")
FORM_FACTORS = ("sxm", "oam", "pcie", "workstation", "consumer", "edge")
Body = dict[str, Any]


def _sig(x: float, digits: int = 3) -> float:
    return float(f"{x:.{digits}g}")


def _log(r: random.Random, lo: float, hi: float, digits: int = 3) -> float:
    """Log-uniform in [lo, hi], rounded to ``digits`` significant digits."""
    return _sig(lo * (hi / lo) ** r.random(), digits)


def _log_int(r: random.Random, lo: int, hi: int) -> int:
    value: float = lo * (hi / lo) ** r.random()
    return max(lo, min(hi, round(value)))


def _some(r: random.Random, p: float) -> bool:
    return r.random() < p


@cache
def _catalog_names() -> tuple[list[str], list[str], list[str]]:
    """GPU slugs, providers and regions of the seed catalog (service/data), in a fixed order."""
    quotes = seed_quotes()
    return ([g.slug for g in seed_gpus()], sorted({q.provider for q in quotes}),
            sorted({q.region for q in quotes}))


def _constraints(r: random.Random, kind: str) -> dict[str, Any]:
    slugs, providers, regions = _catalog_names()
    c: dict[str, Any] = {}
    if _some(r, 0.3):
        c["max_gpus"] = r.choice([1, 2, 4, 8, 16, 64, 1024, r.randint(1, 20)])
    if _some(r, 0.1):
        c["vendors"] = r.choice([["NVIDIA"], ["AMD"], ["AMD", "NVIDIA"], ["nvidia"]])
    if _some(r, 0.15):
        c["providers"] = r.sample(providers, r.randint(1, 3))
        if _some(r, 0.2):
            c["providers"] = [p.upper() for p in c["providers"]]
    if _some(r, 0.2):
        c["pricing"] = r.sample(PRICING, r.randint(1, 3))
    if _some(r, 0.1):
        c["gpu_slugs"] = r.sample(slugs, r.randint(1, 5))
    if _some(r, 0.08):
        c["exclude_gpu_slugs"] = r.sample(slugs, r.randint(1, 4))
    if _some(r, 0.12):
        c["deployment"] = r.choice(["cloud", "cloud", "on_prem", "edge"])
    if _some(r, 0.05):
        c["form_factors"] = r.sample(FORM_FACTORS, r.randint(1, 3))
    if _some(r, 0.05):
        c["regions"] = r.sample(regions, r.randint(1, 3))
    if _some(r, 0.06):
        c["max_power_w"] = r.choice([75.0, 150.0, 300.0, 450.0, 700.0])
    if _some(r, 0.08):
        c["require_fast_interconnect"] = True
    if _some(r, 0.1):
        c["max_usd_per_hour"] = _log(r, 0.5, 2000)
    if kind != "inference" or _some(r, 0.2):
        if _some(r, 0.15):
            c["budget_usd"] = _log(r, 10, 1e7)
        if _some(r, 0.15):
            c["deadline_hours"] = _log(r, 0.5, 5000)
    return c


def _llm_inference(r: random.Random) -> Body:
    inf: dict[str, Any] = {"prompt_tokens": _log_int(r, 1, 8192)}
    out = r.random()
    if out >= 0.3:
        inf["output_tokens"] = _log_int(r, 1, 4096)
    elif out >= 0.15:
        inf["output_tokens"] = 0
    for field, lo, hi in (("max_ttft_ms", 20, 20_000), ("max_tpot_ms", 2, 300),
                          ("max_latency_ms", 50, 300_000)):
        if _some(r, 0.45):
            inf[field] = _log(r, lo, hi)
    if _some(r, 0.75):
        inf["target_requests_per_s"] = _log(r, 0.1, 5000)
    if _some(r, 0.15):
        inf["batch_size"] = _log_int(r, 1, 512)
    if _some(r, 0.08):
        inf["effective_prompt_tokens"] = r.randint(1, inf["prompt_tokens"])
    body: Body = {"kind": "inference", "model": {"preset": r.choice(LLMS)},
                  "precision": r.choice(["bf16", "bf16", "fp16", "fp8", "int8"]),
                  "inference": inf}
    if _some(r, 0.25):
        body["weight_precision"] = r.choice(["int8", "int4"])
    if _some(r, 0.15):
        body["kv_cache_precision"] = r.choice(["fp16", "bf16", "fp8", "int8"])
    return body


def _encoder_inference(r: random.Random) -> Body:
    inf: dict[str, Any] = {"prompt_tokens": _log_int(r, 1, 512)}
    if _some(r, 0.3):
        inf["output_tokens"] = 0
    if _some(r, 0.25):
        inf["effective_prompt_tokens"] = r.randint(1, inf["prompt_tokens"])
    if _some(r, 0.5):
        inf["batch_size"] = _log_int(r, 1, 256)
    if _some(r, 0.6):
        inf["max_latency_ms"] = _log(r, 2, 2000)
    if _some(r, 0.7):
        inf["target_requests_per_s"] = _log(r, 0.1, 5000)
    return {"kind": "inference", "model": {"preset": r.choice(ENCODERS)},
            "precision": r.choice(["fp16", "bf16", "int8", "fp8", "fp32"]), "inference": inf}


def _vision_inference(r: random.Random) -> Body:
    inf: dict[str, Any] = {}
    if _some(r, 0.6):
        inf["batch_size"] = _log_int(r, 1, 256)
    if _some(r, 0.6):
        inf["max_latency_ms"] = _log(r, 1, 1000)
    if _some(r, 0.7):
        inf["target_requests_per_s"] = _log(r, 0.1, 5000)
    model: dict[str, Any] = {"preset": r.choice(VISION)}
    if _some(r, 0.15):
        model = {"name": "custom-cnn", "params": _log(r, 1e6, 3e8),
                 "gflops_per_sample": _log(r, 0.5, 500),
                 "activation_mb_per_sample": _log(r, 5, 500)}
    return {"kind": "inference", "model": model,
            "precision": r.choice(["int8", "fp16", "bf16", "fp32", "fp8", "tf32"]),
            "inference": inf}


def _pretraining(r: random.Random) -> Body:
    if _some(r, 0.25):
        train: dict[str, Any] = {"batch_size": 2 ** r.randint(5, 11)}
        if _some(r, 0.5):
            train["samples"] = _log(r, 1e5, 1e9)
        else:
            train |= {"epochs": r.choice([1, 10, 90]), "dataset_samples": 1.28e6}
        model: dict[str, Any] = {"preset": r.choice(VISION)}
        precision = r.choice(["bf16", "fp16", "fp32", "tf32"])
    else:
        train = {"batch_size": 2 ** r.randint(3, 11), "seq_len": 2 ** r.randint(9, 13),
                 "tokens": _log(r, 1e8, 2e12)}
        model = {"preset": r.choice(LLMS + ENCODERS)}
        if _some(r, 0.1):
            model = {"name": "custom-llm", "params": 1.3e9, "layers": 24, "hidden_size": 2048,
                     "attention_heads": 16, "kv_heads": r.choice([16, 8, 4]),
                     "vocab_size": 50304}
        precision = r.choice(["bf16", "bf16", "fp16", "fp8", "fp32", "tf32"])
    return _training_options(r, {"kind": "training", "model": model, "precision": precision,
                                 "training": train})


def _fine_tuning(r: random.Random) -> Body:
    train: dict[str, Any] = {"batch_size": 2 ** r.randint(3, 7),
                             "seq_len": r.choice([512, 1024, 2048, 4096])}
    if _some(r, 0.5):
        train |= {"epochs": r.choice([1, 2, 3, 5]), "dataset_samples": _log(r, 1e3, 1e6)}
    else:
        train["tokens"] = _log(r, 1e6, 1e9)
    body = {"kind": "training", "model": {"preset": r.choice(FINE_TUNABLE)},
            "precision": r.choice(["bf16", "bf16", "fp16"]), "training": train}
    return _training_options(r, body)


def _training_options(r: random.Random, body: Body) -> Body:
    train = body["training"]
    if _some(r, 0.3):
        train["optimizer"] = r.choice(["adamw", "sgd", "adafactor"])
    if _some(r, 0.4):
        train["activation_checkpointing"] = r.choice([True, False])
    if _some(r, 0.4):
        train["sharding"] = r.choice(["auto", "none", "zero1", "zero2", "zero3", "fsdp"])
    if _some(r, 0.1):
        train["flash_attention"] = False
    return body


def _compute(r: random.Random) -> Body:
    comp: dict[str, Any] = {"total_tflop": _log(r, 1, 1e7)}
    if _some(r, 0.7):
        comp["total_gb_moved"] = _log(r, 1, 1e6)
    if _some(r, 0.8):
        comp["memory_gb"] = _log(r, 0.1, 2000)
    precision = r.choice(["fp64", "fp64", "fp32"])
    if precision == "fp64" and _some(r, 0.6):
        comp["fp64_units"] = r.choice(["vector", "matrix"])
    return {"kind": "compute", "precision": precision, "compute": comp}


def _edge(r: random.Random) -> Body:
    """Small models on edge hardware: an edge deployment, edge form factor or a power cap."""
    pick = r.random()
    if pick < 0.5:
        body = _vision_inference(r)
    elif pick < 0.7:
        body = _encoder_inference(r)
    else:
        body = _llm_inference(r)
        body["model"] = {"preset": r.choice(["gpt-2", "llama-3.1-8b", "mistral-7b"])}
        body["weight_precision"] = r.choice(["int8", "int4"])
    body["constraints"] = r.choice([
        {"deployment": "edge"},
        {"form_factors": ["edge"]},
        {"deployment": "edge", "max_power_w": r.choice([15.0, 40.0, 60.0])},
        {"max_power_w": r.choice([25.0, 75.0]), "pricing": ["purchase"]},
        {"deployment": "on_prem", "form_factors": ["edge", "consumer", "workstation"]},
    ])
    return body


REFUSED: tuple[Body, ...] = (
    {"kind": "inference", "model": {"preset": "bert-base"},
     "inference": {"prompt_tokens": 128, "output_tokens": 16}},
    {"kind": "inference", "model": {"preset": "llama-3.1-8b"},
     "inference": {"prompt_tokens": 100, "effective_prompt_tokens": 200}},
    {"kind": "inference", "model": {"preset": "resnet-50"}, "precision": "int8",
     "inference": {"batch_size": 8, "effective_prompt_tokens": 10}},
    {"kind": "training", "model": {"preset": "llama-2-7b"},
     "training": {"batch_size": 64, "tokens": 1e9}},
    {"kind": "training", "model": {"preset": "resnet-50"},
     "training": {"batch_size": 256, "epochs": 90}},
    {"kind": "training", "model": {"preset": "resnet-50"},
     "training": {"batch_size": 256, "tokens": 1e9}},
    {"kind": "training", "model": {"preset": "llama-3.1-8b"}, "weight_precision": "int4",
     "training": {"batch_size": 64, "seq_len": 2048, "tokens": 1e9}},
    {"kind": "training", "model": {"preset": "llama-3.1-8b"},
     "training": {"batch_size": 64, "seq_len": 2048}},
    {"kind": "inference", "model": {"preset": "llama-3-8b"}, "inference": {"prompt_tokens": 1}},
    {"kind": "inference", "model": {"params": 1e9, "layers": 24, "hidden_size": 2000,
                                    "attention_heads": 16, "kv_heads": 3, "vocab_size": 32000},
     "inference": {"prompt_tokens": 64, "output_tokens": 64}},
    {"kind": "compute", "precision": "fp64"},
    {"kind": "inference", "inference": {"prompt_tokens": 10}},
)
"""Bodies the schema accepts and the engine's own checks refuse (422), one per check; each is
one case (after the random ones), with random constraints, objective and limit added."""

FAMILIES: tuple[tuple[str, int, Callable[[random.Random], Body]], ...] = (
    ("llm-inference", 100, _llm_inference),
    ("pretraining", 40, _pretraining),
    ("fine-tuning", 25, _fine_tuning),
    ("encoder-inference", 30, _encoder_inference),
    ("vision-inference", 33, _vision_inference),
    ("compute", 35, _compute),
    ("edge", 25, _edge),
)
"""(family, cases, generator): 288 random cases, then the 12 of :data:`REFUSED`."""


def make_bodies(seed: int = SEED) -> list[Body]:
    """The request bodies, each checked against :class:`RecommendationQuery`."""
    r = random.Random(seed)
    drawn = [draw(r) for _family, count, draw in FAMILIES for _ in range(count)]
    bodies = []
    for body in drawn + [copy.deepcopy(b) for b in REFUSED]:
        if "constraints" not in body and _some(r, 0.6):
            body["constraints"] = _constraints(r, body["kind"])
        body["objective"] = r.choice(["cost", "time", "energy", "balanced"])
        body["limit"] = r.randint(1, 20)
        RecommendationQuery.model_validate(body)  # a failure is a generator bug, not an answer
        bodies.append(body)
    return bodies
