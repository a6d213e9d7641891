"""Named example workloads, one per kind of question people ask.

Shown in Swagger UI as named examples on the estimate, recommendation and workload routes, and
used to prefill the comparison page. Pure data: each example is a full, valid request body.
"""

from __future__ import annotations

from typing import Any, TypedDict


class NamedExample(TypedDict):
    summary: str
    description: str
    workload: dict[str, Any]
    """The workload itself (what `POST /v1/estimates` takes under `workload`)."""
    objective: str
    constraints: dict[str, Any]
    gpu_slug: str
    """A GPU to show in the estimate example."""
    gpu_count: int


EXAMPLES: dict[str, NamedExample] = {
    "llm-serving": {
        "summary": "LLM serving: Llama-3.1-8B chat",
        "description": "1,024 prompt / 256 output tokens, TTFT <= 500 ms, TPOT <= 50 ms, "
                       "20 requests/s; cheapest per million output tokens.",
        "workload": {
            "kind": "inference",
            "model": {"preset": "llama-3.1-8b"},
            "precision": "bf16",
            "inference": {"prompt_tokens": 1024, "output_tokens": 256, "max_ttft_ms": 500,
                          "max_tpot_ms": 50, "target_requests_per_s": 20},
        },
        "objective": "cost",
        "constraints": {"max_gpus": 8},
        "gpu_slug": "nvidia-h100-sxm5-80gb",
        "gpu_count": 1,
    },
    "llm-training": {
        "summary": "LLM training: Llama-2-70B pre-training",
        "description": "200 B tokens, global batch 1,024 x 4,096 tokens, AdamW, activation "
                       "checkpointing, sharding chosen automatically; balanced cost and time.",
        "workload": {
            "kind": "training",
            "model": {"preset": "llama-2-70b"},
            "precision": "bf16",
            "training": {"batch_size": 1024, "seq_len": 4096, "tokens": 2e11,
                         "optimizer": "adamw", "activation_checkpointing": True,
                         "sharding": "auto"},
        },
        "objective": "balanced",
        "constraints": {"max_gpus": 1024},
        "gpu_slug": "nvidia-h100-sxm5-80gb",
        "gpu_count": 64,
    },
    "cnn-edge": {
        "summary": "CNN inference at the edge: ResNet-50 INT8",
        "description": "Batch 8 images, <= 20 ms per request, 200 requests/s, at most 75 W "
                       "per GPU (an edge power envelope).",
        "workload": {
            "kind": "inference",
            "model": {"preset": "resnet-50"},
            "precision": "int8",
            "inference": {"batch_size": 8, "max_latency_ms": 20,
                          "target_requests_per_s": 200},
        },
        "objective": "cost",
        "constraints": {"max_power_w": 75},
        "gpu_slug": "nvidia-l4",
        "gpu_count": 1,
    },
    "fp64-simulation": {
        "summary": "FP64 simulation: a CFD solver",
        "description": "500,000 TFLOP of plain FP64 vector work moving 20,000 GB, a 60 GB "
                       "working set; fastest to finish.",
        "workload": {
            "kind": "compute",
            "precision": "fp64",
            "compute": {"total_tflop": 500000, "total_gb_moved": 20000, "memory_gb": 60,
                        "fp64_units": "vector"},
        },
        "objective": "time",
        "constraints": {},
        "gpu_slug": "nvidia-h100-sxm5-80gb",
        "gpu_count": 1,
    },
    "too-big": {
        "summary": "A too-big model: Llama-3.1-405B on one node",
        "description": "810 GB of BF16 weights: no single GPU holds it; at most 8 GPUs. Most "
                       "GPUs are rejected, each with the nearest fix.",
        "workload": {
            "kind": "inference",
            "model": {"preset": "llama-3.1-405b"},
            "precision": "bf16",
            "inference": {"prompt_tokens": 2048, "output_tokens": 512, "max_tpot_ms": 100},
        },
        "objective": "cost",
        "constraints": {"max_gpus": 8},
        "gpu_slug": "nvidia-h100-sxm5-80gb",
        "gpu_count": 1,
    },
}


def submission_body(name: str, *, limit: int | None = None) -> dict[str, Any]:
    """The body of `POST /v1/workloads` (or, with ``limit``, `POST /v1/recommendations`)."""
    ex = EXAMPLES[name]
    body: dict[str, Any] = {"name": name, "objective": ex["objective"], **ex["workload"],
                            "constraints": ex["constraints"]}
    if limit is not None:
        body["limit"] = limit
    return body


def estimate_body(name: str) -> dict[str, Any]:
    """The body of `POST /v1/estimates`."""
    ex = EXAMPLES[name]
    return {"workload": ex["workload"], "gpu_slug": ex["gpu_slug"], "gpu_count": ex["gpu_count"]}


def openapi_examples(body: Any) -> dict[str, dict[str, Any]]:
    """Named examples in the shape FastAPI's ``Body(openapi_examples=...)`` takes."""
    return {name: {"summary": ex["summary"], "description": ex["description"],
                   "value": body(name)} for name, ex in EXAMPLES.items()}
