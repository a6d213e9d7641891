"""The typed client in one page: list GPUs, ask which GPU serves Llama-3.1-8B at 20 requests/s
within its latency targets, cheapest, and read the answer: the GPU, how many, what it costs per
hour, and the SkyPilot task that launches it.

    make run                                          # serves http://127.0.0.1:8000
    .venv/bin/python examples/client_quickstart.py    # or: ... client_quickstart.py URL [KEY]

Reads need no key unless the server sets GPU_ADVISOR_PUBLIC_READS=false; then pass a reader's
key (``gpu-advisor keys create --name me --role reader``) as KEY or in GPU_ADVISOR_API_KEY.
"""

from __future__ import annotations

import os
import sys

from gpu_advisor_client import AdvisorClient, Candidate, Gpu, Page, WorkloadSubmission

LOCAL = "http://127.0.0.1:8000"  # what `make run` serves

# The body of POST /v1/recommendations; a plain dict works too, the model checks it first.
WORKLOAD = WorkloadSubmission.model_validate({
    "kind": "inference",
    "model": {"preset": "llama-3.1-8b"},
    "precision": "bf16",
    "inference": {"prompt_tokens": 1024, "output_tokens": 256, "max_ttft_ms": 500,
                  "max_tpot_ms": 50, "target_requests_per_s": 20},
    "objective": "cost",
    "constraints": {"max_gpus": 8},
})


def quickstart(client: AdvisorClient) -> tuple[Page[Gpu], Candidate]:
    """The five GPUs with the most memory, and the best candidate for WORKLOAD."""
    gpus = client.list_gpus(sort="-memory_gb", limit=5)
    answer = client.recommend(WORKLOAD, limit=3)
    return gpus, answer.recommendations[0]


def main(base_url: str = LOCAL, api_key: str | None = None) -> None:
    with AdvisorClient(base_url, api_key=api_key) as client:
        gpus, best = quickstart(client)

    print(f"{gpus.total} GPUs in the catalog; the most memory:")
    for gpu in gpus.data:
        print(f"  {gpu.slug:34} {gpu.memory_gb:5.0f} GB  {gpu.memory_bandwidth_gb_s:6.0f} GB/s")

    cost, estimate = best.cost, best.estimate
    print(f"\nbest: {best.gpu_count} x {best.gpu.name} "
          f"({best.replicas} replica(s) of {best.gpus_per_replica} GPU(s))")
    if cost.usd_per_hour is not None:
        print(f"  ${cost.usd_per_hour:.2f}/hour for {cost.instances} instance(s)")
    if cost.usd_per_million_output_tokens is not None:
        print(f"  ${cost.usd_per_million_output_tokens:.3f} per million output tokens")
    if best.quote is not None:
        print(f"  offer: {best.quote.provider} {best.quote.instance_type} ({best.quote.pricing})")
    if estimate.ttft_ms is not None and estimate.tpot_ms is not None:
        print(f"  TTFT {estimate.ttft_ms:.0f} ms, TPOT {estimate.tpot_ms:.1f} ms per replica")

    provision = best.provision
    if provision.skypilot_yaml is not None:
        print("\nSkyPilot task:")
        print(provision.skypilot_yaml)
    else:
        print(f"\nno SkyPilot task: {provision.skypilot_note}")
    print(f"{len(provision.kubernetes)} Kubernetes manifests: "
          f"{', '.join(str(m['kind']) for m in provision.kubernetes)}")


if __name__ == "__main__":
    args = sys.argv[1:]
    main(args[0] if args else LOCAL,
         args[1] if len(args) > 1 else os.environ.get("GPU_ADVISOR_API_KEY"))
