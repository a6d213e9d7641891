"""Ready-to-use provisioning snippets for a candidate: a SkyPilot ``resources:`` block and a
Kubernetes container resources + nodeSelector fragment.

Rules:

* SkyPilot accelerator name: the caller's mapping (the catalog's SkyPilot-style alias, e.g.
  ``H100``, ``A100-80GB``), else the GPU name without the vendor and product-line words
  (``NVIDIA GeForce RTX 4090`` -> ``RTX-4090``). ``accelerators: NAME:k`` is per node, where
  k = GPUs in one instance; more instances become ``num_nodes``. Inference replicas become a
  SkyPilot Serve ``service:`` block.
* Kubernetes device resource: ``amd.com/gpu`` for AMD (ROCm k8s-device-plugin), else
  ``nvidia.com/gpu`` (NVIDIA device plugin).
* nodeSelector: NVIDIA GPU Feature Discovery labels nodes ``nvidia.com/gpu.product`` with the
  product name as nvidia-smi prints it, spaces replaced by ``-`` (``NVIDIA-H100-80GB-HBM3``).
  AMD's node labeller uses ``amd.com/gpu.product-name`` with ``_`` for spaces. We build the
  value from the catalog name the same way, keep only label-safe characters
  ([A-Za-z0-9._-], at most 63, RFC 1123 label value rules), or take the caller's mapping.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from service.engine.recommend_types import Offer, Provision
from service.engine.types import GpuSpec

SKYPILOT_CLOUDS: Mapping[str, str] = {
    "aws": "aws",
    "gcp": "gcp",
    "azure": "azure",
    "lambda": "lambda",
    "runpod": "runpod",
    "nebius": "nebius",
    "cudo": "cudo",
    "fluidstack": "fluidstack",
    "paperspace": "paperspace",
    "digitalocean": "do",
    "oci": "oci",
    "shadeform": "shadeform",
}
"""Quote provider -> SkyPilot cloud name (``sky check`` names; DigitalOcean is ``do``)."""

K8S_LABEL_MAX = 63
"""Kubernetes label values: at most 63 characters (k8s.io docs, 'Labels and Selectors')."""
_VENDOR_WORDS = ("NVIDIA", "AMD", "GeForce", "Tesla", "Quadro", "Instinct")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def accelerator_name(gpu: GpuSpec, names: Mapping[str, str] | None) -> str:
    if names and gpu.slug in names:
        return names[gpu.slug]
    words = [w for w in gpu.name.split() if w not in _VENDOR_WORDS]
    return "-".join(words) or gpu.slug


def node_label(gpu: GpuSpec, labels: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(label key, value) selecting nodes with this GPU."""
    amd = gpu.vendor.upper() == "AMD"
    key = "amd.com/gpu.product-name" if amd else "nvidia.com/gpu.product"
    if labels and gpu.slug in labels:
        return key, labels[gpu.slug]
    value = _UNSAFE.sub("", gpu.name.replace(" ", "_" if amd else "-"))
    return key, value[:K8S_LABEL_MAX].strip("-_.")


def _yaml_lines(
    gpu: GpuSpec, offer: Offer | None, per_node: int, nodes: int, names: Mapping[str, str] | None
) -> list[str]:
    lines = ["resources:", f"  accelerators: {accelerator_name(gpu, names)}:{per_node}"]
    if offer is not None and offer.pricing != "purchase":
        cloud = SKYPILOT_CLOUDS.get(offer.provider)
        if cloud is not None:
            lines.append(f"  cloud: {cloud}")
            if offer.region and offer.region != "global":
                lines.append(f"  region: {offer.region}")
            lines.append(f"  instance_type: {offer.instance_type}")
        lines.append(f"  use_spot: {'true' if offer.pricing == 'spot' else 'false'}")
    elif offer is not None:
        # owned hardware: run on your own cluster through SkyPilot's Kubernetes cloud
        lines.append("  cloud: kubernetes")
    if nodes > 1:
        lines.append(f"num_nodes: {nodes}")
    return lines


def provision(
    gpu: GpuSpec,
    offer: Offer | None,
    gpus_per_replica: int,
    instances_per_replica: int,
    replicas: int = 1,
    *,
    skypilot_names: Mapping[str, str] | None = None,
    node_labels: Mapping[str, str] | None = None,
) -> Provision:
    """Snippets for ``replicas`` copies of ``instances_per_replica`` instances of ``offer``."""
    if offer is not None and offer.pricing != "purchase":
        per_node, nodes = offer.gpu_count, instances_per_replica
    else:
        per_node = min(gpus_per_replica, max(1, gpu.max_gpus_per_node))
        nodes = -(-gpus_per_replica // per_node)
    lines = _yaml_lines(gpu, offer, per_node, nodes, skypilot_names)
    if replicas > 1:
        lines += ["service:", "  readiness_probe: /", f"  replicas: {replicas}"]
    device = "amd.com/gpu" if gpu.vendor.upper() == "AMD" else "nvidia.com/gpu"
    key, value = node_label(gpu, node_labels)
    kubernetes: dict[str, Any] = {
        "replicas": replicas * nodes,
        "nodeSelector": {key: value},
        "containers": [{"name": "workload", "resources": {"limits": {device: per_node}}}],
    }
    return Provision(skypilot_yaml="\n".join(lines) + "\n", kubernetes=kubernetes)
