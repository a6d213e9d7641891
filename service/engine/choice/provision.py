"""Deployable specs for a candidate: a SkyPilot task (SkyServe for serving) and complete
Kubernetes manifests.

SkyPilot (``skypilot_yaml``), only for rented cloud answers on a SkyPilot cloud whose GPU has
a SkyPilot accelerator name (``sky show-gpus``); owned (on-prem/edge) answers, providers that
are not SkyPilot clouds and GPUs with no SkyPilot name get none, and ``skypilot_note`` says why:

* ``resources.accelerators: NAME:k`` is per node, where k = GPUs in one instance, with the
  quote's ``cloud``, ``region``, ``instance_type`` and ``use_spot``; more instances per group
  become ``num_nodes``. NAME: :data:`SKYPILOT_ACCELERATORS` (names of the SkyPilot catalogs),
  RunPod's instance type (its catalog embeds the name: ``8x_H100-SXM_SECURE``), else the
  caller's mapping (catalog aliases that look like SkyPilot names).
* Serving answers (kind ``inference``), one replica or many, get a SkyServe ``service:`` block
  (readiness probe, replicas) and ``resources.ports``: what ``sky.serve.validate_service_task``
  requires. The caller adds ``run:`` (its server command).

Kubernetes (``kubernetes``): a list of complete manifests, each with apiVersion, kind,
metadata and spec, a placeholder image (:data:`PLACEHOLDER_IMAGE`, the caller sets it), GPU
requests = limits, and a ``nodeSelector`` on the GPU product label:

* a group that fits one node: serving -> ``Deployment`` (one pod per replica, each with the
  group's GPUs) + ``Service``; training/compute -> ``Job`` with one pod;
* a group spanning nodes (multi-node): serving -> per replica group a ``StatefulSet`` (one pod
  per node, started together) + a headless ``Service``; training/compute -> an ``Indexed``
  ``Job`` with one pod per node + a headless ``Service`` (stable pod DNS for the rendezvous,
  ``MASTER_ADDR`` = pod 0).
* Device resource: ``amd.com/gpu`` for AMD (ROCm k8s-device-plugin), else ``nvidia.com/gpu``
  (NVIDIA device plugin). Node label: ``nvidia.com/gpu.product`` with the value GPU Feature
  Discovery publishes (:data:`GFD_PRODUCT_LABELS`), or the caller's mapping; a GPU without a
  known value gets no selector and ``kubernetes_note`` says so (never a guessed label).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from service.engine.cache import Memo, memo_of
from service.engine.recommend_types import Offer, Provision
from service.engine.types import Estimate, GpuSpec, Workload

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

SKYPILOT_ACCELERATORS: Mapping[str, str] = {
    # AcceleratorName column of skypilot-org/skypilot-catalog v7 aws/vms.csv and
    # lambda/vms.csv (tests/data/skypilot): p5 H100, p5e H200, p4d A100, p4de A100-80GB,
    # p3 V100, p3dn V100-32GB, g4dn T4, g5 A10G, g6 L4, g6e L40S; Lambda gpu_1x_h100_pcie
    # H100, gpu_1x_a100 A100, gpu_1x_a10 A10, gpu_4x_a6000 A6000, gpu_1x_rtx6000 RTX6000,
    # gpu_1x_gh200 GH200
    "nvidia-h100-sxm5-80gb": "H100",
    "nvidia-h100-pcie-80gb": "H100",
    "nvidia-h200-sxm-141gb": "H200",
    "nvidia-a100-sxm4-40gb": "A100",
    "nvidia-a100-pcie-40gb": "A100",
    "nvidia-a100-sxm4-80gb": "A100-80GB",
    "nvidia-a100-pcie-80gb": "A100-80GB",
    "nvidia-v100-sxm2-16gb": "V100",
    "nvidia-v100-pcie-16gb": "V100",
    "nvidia-v100-sxm2": "V100-32GB",
    "nvidia-t4": "T4",
    "nvidia-a10g": "A10G",
    "nvidia-a10": "A10",
    "nvidia-l4": "L4",
    "nvidia-l40s": "L40S",
    "nvidia-rtx-a6000": "A6000",
    "nvidia-quadro-rtx-6000": "RTX6000",
    "nvidia-gh200-96gb": "GH200",
}
"""Catalog slug -> SkyPilot accelerator name, for GPUs the SkyPilot catalogs list under a name
the catalog aliases do not give (PCIe parts share the SXM name; aliases come after)."""
_RUNPOD_INSTANCE = re.compile(r"^\d+x_([A-Za-z0-9-]+)_(SECURE|COMMUNITY)$")
"""RunPod instance types in SkyPilot's catalog are ``<count>x_<AcceleratorName>_<cloud type>``."""
_SKYPILOT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")
_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
"""libyaml's safe dumper when built in (4x faster: ~0.25 ms a task), else PyYAML's own."""

GFD_PRODUCT_LABELS: Mapping[str, str] = {
    "nvidia-h100-sxm5-80gb": "NVIDIA-H100-80GB-HBM3",
    "nvidia-h100-pcie-80gb": "NVIDIA-H100-PCIe",
    "nvidia-h100-nvl-94gb": "NVIDIA-H100-NVL",
    "nvidia-h200-sxm-141gb": "NVIDIA-H200",
    "nvidia-gh200-96gb": "NVIDIA-GH200-480GB",
    "nvidia-b200-hgx": "NVIDIA-B200",
    "nvidia-a100-sxm4-80gb": "NVIDIA-A100-SXM4-80GB",
    "nvidia-a100-sxm4-40gb": "NVIDIA-A100-SXM4-40GB",
    "nvidia-a100-pcie-80gb": "NVIDIA-A100-80GB-PCIe",
    "nvidia-a100-pcie-40gb": "NVIDIA-A100-PCIE-40GB",
    "nvidia-v100-sxm2": "Tesla-V100-SXM2-32GB",
    "nvidia-v100-sxm2-16gb": "Tesla-V100-SXM2-16GB",
    "nvidia-v100-pcie-16gb": "Tesla-V100-PCIE-16GB",
    "nvidia-t4": "Tesla-T4",
    "nvidia-a10g": "NVIDIA-A10G",
    "nvidia-a10": "NVIDIA-A10",
    "nvidia-l4": "NVIDIA-L4",
    "nvidia-l40s": "NVIDIA-L40S",
    "nvidia-l40": "NVIDIA-L40",
    "nvidia-a40": "NVIDIA-A40",
    "nvidia-rtx-a6000": "NVIDIA-RTX-A6000",
    "nvidia-rtx-a4000": "NVIDIA-RTX-A4000",
    "nvidia-rtx-6000-ada": "NVIDIA-RTX-6000-Ada-Generation",
    "nvidia-rtx-4000-ada": "NVIDIA-RTX-4000-Ada-Generation",
    "nvidia-rtx-4090": "NVIDIA-GeForce-RTX-4090",
    "nvidia-rtx-3090": "NVIDIA-GeForce-RTX-3090",
    "nvidia-quadro-rtx-8000": "Quadro-RTX-8000",
    "nvidia-quadro-rtx-6000": "Quadro-RTX-6000",
    "nvidia-quadro-p6000": "Quadro-P6000",
}
"""Catalog slug -> the ``nvidia.com/gpu.product`` value GPU Feature Discovery publishes: the
NVML device name (``nvidia-smi --query-gpu=name``) with spaces replaced by ``-`` (GFD
``internal/lm/resource.go``; NVIDIA GPU Operator docs, "GPU Feature Discovery" labels, e.g.
``nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3``, ``Tesla-T4``, ``NVIDIA-A100-SXM4-80GB``).
Device names as NVML reports them (nvidia-smi output in MLCommons inference/training
submission system descriptions, cloud provider GPU docs). Jetson (Tegra) boards and AMD parts
are left out: their labels come from other labellers whose values we have no source for."""
GFD_LABEL = "nvidia.com/gpu.product"

PLACEHOLDER_IMAGE = "registry.example.com/REPLACE-ME/workload:latest"
"""Placeholder container image: the caller sets its own (example.com is reserved, RFC 2606)."""
SERVE_PORT = 8000
"""Serving port: the default of vLLM's OpenAI-compatible server and of TGI's launcher docs."""
READINESS_PATH = "/health"
"""GET /health: vLLM's and TGI's health endpoint (200 once the model is loaded)."""
READINESS_INITIAL_DELAY_S = 1200
"""[s] Model load time allowed before SkyServe probes (SkyServe's own default is 1200 s)."""
K8S_NAME_MAX = 52
"""Workload names: DNS-1123 labels of at most 63 characters; 52 leaves room for the
controller-revision suffixes StatefulSets and Jobs add to pod names and labels."""
RENDEZVOUS_PORT = 29500
"""torch.distributed default MASTER_PORT."""
MAX_REPLICA_GROUPS = 128
"""Multi-node serving replicas written out as manifests at most: each is a StatefulSet and a
headless Service (~1.4 KB), so nothing else bounded the answer (GPT-3 175B at 1,860
requests/s needed ~10^5 groups: a 393 MB answer, ~1 min and 5 GB of server memory, found by
the differential test's generator). 128 keeps real fleets (Llama-70B at ~100 requests/s needs
30-70 two-node groups) and bounds a 10-candidate answer's manifests to ~2 MB. Beyond it the
answer carries no manifests and says why."""


def accelerator_name(
    gpu: GpuSpec, offer: Offer | None, names: Mapping[str, str] | None
) -> str | None:
    """The SkyPilot accelerator name of ``gpu`` on ``offer``'s cloud; None when unknown."""
    if offer is not None and offer.provider == "runpod":
        m = _RUNPOD_INSTANCE.match(offer.instance_type)
        if m:
            return m.group(1)
    if gpu.slug in SKYPILOT_ACCELERATORS:
        return SKYPILOT_ACCELERATORS[gpu.slug]
    name = names.get(gpu.slug) if names else None
    if name and _SKYPILOT_NAME.match(name):
        return name
    return None


def node_label(gpu: GpuSpec, labels: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """(label key, value) selecting nodes with this GPU; None when no value is known."""
    if labels and gpu.slug in labels:
        key = "amd.com/gpu.product-name" if gpu.vendor.upper() == "AMD" else GFD_LABEL
        return key, labels[gpu.slug]
    value = GFD_PRODUCT_LABELS.get(gpu.slug)
    return (GFD_LABEL, value) if value else None


def _name(gpu: GpuSpec) -> str:
    base = re.sub(r"[^a-z0-9-]", "-", gpu.slug.lower()).strip("-")
    return base[:K8S_NAME_MAX].rstrip("-") or "workload"


def skypilot_task(
    workload: Workload, gpu: GpuSpec, offer: Offer | None, instances: int, replicas: int,
    owned: bool, names: Mapping[str, str] | None, memo: Memo | None = None,
) -> tuple[str | None, str | None]:
    """(task YAML, None) or (None, why there is none)."""
    if owned:
        return None, ("owned hardware (on_prem/edge): no cloud to launch on; use the "
                      "Kubernetes manifests on your cluster")
    accel = accelerator_name(gpu, offer, names)
    if accel is None:
        return None, f"{gpu.name} has no SkyPilot accelerator name (sky show-gpus)"
    resources: dict[str, Any] = {}
    if offer is not None:
        cloud = SKYPILOT_CLOUDS.get(offer.provider)
        if cloud is None:
            return None, f"provider {offer.provider!r} is not a SkyPilot cloud"
        resources["accelerators"] = f"{accel}:{offer.gpu_count}"
        resources["cloud"] = cloud
        if offer.region and offer.region != "global":
            resources["region"] = offer.region
        resources["instance_type"] = offer.instance_type
        resources["use_spot"] = offer.pricing == "spot"
    else:
        resources["accelerators"] = f"{accel}:{instances}"
        instances = 1
    task: dict[str, Any] = {"name": _name(gpu), "resources": resources}
    if instances > 1:
        task["num_nodes"] = instances
    service: dict[str, Any] = {}
    if workload.kind == "inference":
        resources["ports"] = SERVE_PORT
        service["service"] = {
            "readiness_probe": {
                "path": READINESS_PATH,
                "initial_delay_seconds": READINESS_INITIAL_DELAY_S,
            },
            "replicas": replicas,
        }
    head = ("# SkyPilot task from gpu-advisor: add `run:` (and `setup:`) with your command"
            + ("; launch with `sky serve up`" if workload.kind == "inference" else "") + "\n")
    # PyYAML's representer is Python (~0.1 ms a task): the text is kept per task content.
    # The service block (its replicas follow the load) is the last top-level key, dumped and
    # kept apart: block-style top-level keys dumped one after the other are the text of the
    # whole mapping, and the task's other keys then stay one entry across loads.
    memo = memo_of(memo)
    text = memo.get("skypilot_yaml", _frozen(task),
                    lambda: yaml.dump(task, Dumper=_DUMPER, sort_keys=False))
    if service:
        text += memo.get("skypilot_yaml", _frozen(service),
                         lambda: yaml.dump(service, Dumper=_DUMPER, sort_keys=False))
    return head + text, None


def _frozen(value: Any) -> Any:
    """A hashable stand-in for a task (nested dicts as item tuples, in order: key order is
    part of the text)."""
    if isinstance(value, dict):
        return tuple((k, _frozen(v)) for k, v in value.items())
    return type(value), value


def _container(gpu: GpuSpec, gpus: int, serving: bool, env: list[dict[str, Any]]) -> dict[
        str, Any]:
    device = "amd.com/gpu" if gpu.vendor.upper() == "AMD" else "nvidia.com/gpu"
    container: dict[str, Any] = {
        "name": "workload",
        "image": PLACEHOLDER_IMAGE,
        "resources": {"requests": {device: gpus}, "limits": {device: gpus}},
    }
    if env:
        container["env"] = env
    if serving:
        container["ports"] = [{"name": "http", "containerPort": SERVE_PORT}]
        container["readinessProbe"] = {
            "httpGet": {"path": READINESS_PATH, "port": SERVE_PORT},
            "periodSeconds": 10,
        }
    return container


def _pod_spec(gpu: GpuSpec, gpus: int, serving: bool, labels: Mapping[str, str] | None,
              env: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [_container(gpu, gpus, serving, env or [])]}
    label = node_label(gpu, labels)
    if label is not None:
        spec["nodeSelector"] = {label[0]: label[1]}
    # GPU node pools are commonly tainted (GKE: nvidia.com/gpu=present:NoSchedule)
    device = "amd.com/gpu" if gpu.vendor.upper() == "AMD" else "nvidia.com/gpu"
    spec["tolerations"] = [{"key": device, "operator": "Exists", "effect": "NoSchedule"}]
    spec.update(extra)
    return spec


def _meta(name: str, app: str, **more: str) -> dict[str, Any]:
    return {"name": name, "labels": {"app.kubernetes.io/name": app, **more}}


def _headless(name: str, app: str, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Service", "metadata": _meta(name, app),
        "spec": {"clusterIP": "None", "selector": {"app.kubernetes.io/name": app},
                 "ports": [{"name": "p", "port": port}]},
    }


def over_group_cap(workload: Workload, est: Estimate, replicas: int) -> bool:
    """Multi-node serving with more replica groups than :data:`MAX_REPLICA_GROUPS`: one
    StatefulSet per group would be too many, so :func:`kubernetes_manifests` writes none."""
    return (workload.kind == "inference" and max(1, est.parallelism.nodes) > 1
            and replicas > MAX_REPLICA_GROUPS)


def kubernetes_manifests(
    workload: Workload, gpu: GpuSpec, est: Estimate, replicas: int,
    labels: Mapping[str, str] | None,
) -> list[dict[str, Any]]:
    """Complete manifests for ``replicas`` groups of ``est.parallelism.nodes`` pods, each pod
    holding one node's GPUs (see the module docstring)."""
    name, p = _name(gpu), est.parallelism
    nodes, per_node = max(1, p.nodes), max(1, p.gpus_per_node)
    serving = workload.kind == "inference"
    sel = {"app.kubernetes.io/name": name}
    if serving and nodes == 1:
        return [
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(name, name),
             "spec": {"replicas": replicas, "selector": {"matchLabels": sel},
                      "template": {"metadata": {"labels": sel},
                                   "spec": _pod_spec(gpu, per_node, True, labels)}}},
            {"apiVersion": "v1", "kind": "Service", "metadata": _meta(name, name),
             "spec": {"selector": sel, "ports": [
                 {"name": "http", "port": SERVE_PORT, "targetPort": SERVE_PORT}]}},
        ]
    if serving:
        out: list[dict[str, Any]] = []
        if over_group_cap(workload, est, replicas):
            return out
        for g in range(replicas):
            group = f"{name}-g{g}"
            gsel = {"app.kubernetes.io/name": group}
            env = [{"name": "LEADER_ADDR", "value": f"{group}-0.{group}"},
                   {"name": "GROUP_SIZE", "value": str(nodes)}]
            out += [
                _headless(group, group, SERVE_PORT),
                {"apiVersion": "apps/v1", "kind": "StatefulSet",
                 "metadata": _meta(group, group, **{"app.kubernetes.io/part-of": name}),
                 "spec": {"serviceName": group, "replicas": nodes,
                          "podManagementPolicy": "Parallel", "selector": {"matchLabels": gsel},
                          "template": {"metadata": {"labels": gsel},
                                       "spec": _pod_spec(gpu, per_node, True, labels, env)}}},
            ]
        return out
    env = [{"name": "NNODES", "value": str(nodes)},
           {"name": "NPROC_PER_NODE", "value": str(per_node)}]
    extra: dict[str, Any] = {"restartPolicy": "Never"}
    job_spec: dict[str, Any] = {"backoffLimit": 0}
    out = []
    if nodes > 1:
        env += [{"name": "MASTER_ADDR", "value": f"{name}-0.{name}"},
                {"name": "MASTER_PORT", "value": str(RENDEZVOUS_PORT)}]
        extra["subdomain"] = name
        job_spec.update(completionMode="Indexed", completions=nodes, parallelism=nodes)
        out.append(_headless(name, name, RENDEZVOUS_PORT))
    job_spec["template"] = {"metadata": {"labels": sel},
                            "spec": _pod_spec(gpu, per_node, False, labels, env, **extra)}
    out.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta(name, name),
                "spec": job_spec})
    return out


def provision(
    workload: Workload,
    gpu: GpuSpec,
    est: Estimate,
    offer: Offer | None,
    *,
    instances_per_replica: int,
    replicas: int = 1,
    owned: bool = False,
    skypilot_names: Mapping[str, str] | None = None,
    node_labels: Mapping[str, str] | None = None,
    memo: Memo | None = None,
) -> Provision:
    """Specs for ``replicas`` groups of ``est.gpu_count`` GPUs on ``instances_per_replica``
    instances of ``offer`` (rented) or on owned nodes."""
    instances = instances_per_replica if offer is not None else est.gpu_count
    sky, sky_note = skypilot_task(workload, gpu, offer, instances, replicas, owned,
                                  skypilot_names, memo)
    manifests = kubernetes_manifests(workload, gpu, est, replicas, node_labels)
    k8s_note = None
    if over_group_cap(workload, est, replicas):
        k8s_note = (f"{replicas} replica groups of {est.parallelism.nodes} nodes each: more "
                    f"than {MAX_REPLICA_GROUPS} StatefulSets, so none are written; deploy "
                    "with a multi-node serving controller (e.g. LeaderWorkerSet, "
                    f"replicas: {replicas}, size: {est.parallelism.nodes})")
    elif node_label(gpu, node_labels) is None:
        k8s_note = (f"no known node label value for {gpu.name}: add a nodeSelector for "
                    "your cluster's label of this GPU")
    return Provision(skypilot_yaml=sky, kubernetes=tuple(manifests), skypilot_note=sky_note,
                     kubernetes_note=k8s_note)
