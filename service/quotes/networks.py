"""Default network fields of a quote, per provider and instance family, with their source.

Price catalogs (SkyPilot's CSVs included) carry no network column, so a quote created or
imported without ``network_fabric`` / ``network_gbps`` / ``multi_node`` gets them from this
table: the first rule whose provider matches and whose pattern matches the whole instance type.
No rule: the fields stay unknown (null, ``multi_node`` false), and the engine plans no job
across instances of it. The figures are the providers' published per-instance network
bandwidth and fabric; a rule says ``ethernet`` at the listed rate when the provider lists a
rate but no RDMA fabric.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from service.engine.recommend_types import Fabric

AWS_SPECS = ("AWS EC2 User Guide, 'Accelerated computing instance specifications' (network "
             "bandwidth, EFA support per instance type), docs.aws.amazon.com/ec2/latest/"
             "instancetypes/ac.html; EFA support cross-checked with eksctl-io/eksctl "
             "pkg/utils/instance/instance_types.go @1105014 (EFASupported: true for p5, p5e, "
             "p5en, p4d, p4de, p3dn, g6e.48xlarge, g6.48xlarge, g5.48xlarge, g4dn.12xlarge)")
GCP_SPECS = ("Google Cloud, 'Network bandwidths and GPUs' (A2 standard: 24 Gbps for 1 GPU, "
             "100 Gbps for 8 GPUs; no GPUDirect-TCPX/RDMA on A2), cloud.google.com/compute/"
             "docs/gpus/gpu-network-bandwidth")
AZURE_ND_V2 = ("Azure, 'ND-series' (ND40rs_v2: 8 V100 SXM2, 100 Gb/s InfiniBand EDR), "
               "learn.microsoft.com/azure/virtual-machines/ndv2-series")
NEBIUS_IB = ("Nebius AI Cloud docs, 'GPU clusters' (8-GPU H100/H200/B200 VMs joined by "
             "InfiniBand, 3.2 Tbit/s per VM: 8 x 400 Gbit/s), docs.nebius.com/compute/"
             "clusters/gpu")
OCI_SPECS = ("Oracle Cloud, 'Compute Shapes' GPU shapes (BM.GPU3.8: 2 x 25 Gbps; "
             "VM.GPU.A10.1: 24 Gbps; VM.GPU.A10.2: 48 Gbps), docs.oracle.com/iaas/Content/"
             "Compute/References/computeshapes.htm")


@dataclass(frozen=True)
class NetworkDefault:
    network_gbps: float | None
    network_fabric: Fabric | None
    multi_node: bool
    network_source: str


@dataclass(frozen=True)
class _Rule:
    provider: str
    pattern: re.Pattern[str]
    gbps: float
    fabric: Fabric
    multi_node: bool
    source: str


def _r(provider: str, pattern: str, gbps: float, fabric: Fabric, multi_node: bool,
       source: str) -> _Rule:
    return _Rule(provider, re.compile(pattern), gbps, fabric, multi_node, source)


RULES: tuple[_Rule, ...] = (
    # AWS: EFA on the p-families and the largest g sizes; cluster placement groups for all
    _r("aws", r"p5e?n?\.48xlarge", 3200, "efa", True, AWS_SPECS),
    _r("aws", r"p4de?\.24xlarge", 400, "efa", True, AWS_SPECS),
    _r("aws", r"p3dn\.24xlarge", 100, "efa", True, AWS_SPECS),
    _r("aws", r"p3\.16xlarge", 25, "ethernet", True, AWS_SPECS),
    _r("aws", r"p3\.8xlarge", 10, "ethernet", True, AWS_SPECS),
    _r("aws", r"g6e\.48xlarge", 400, "efa", True, AWS_SPECS),
    _r("aws", r"g6\.48xlarge", 100, "efa", True, AWS_SPECS),
    _r("aws", r"g5\.48xlarge", 100, "efa", True, AWS_SPECS),
    _r("aws", r"g4dn\.metal", 100, "efa", True, AWS_SPECS),
    _r("aws", r"g4dn\.12xlarge", 50, "efa", True, AWS_SPECS),
    # single-GPU sizes: "up to" burst rates; partial nodes are never combined anyway
    _r("aws", r"(g4dn|g5|g6|g6e|p3)\.(x|2x)large", 10, "ethernet", False, AWS_SPECS),
    _r("gcp", r"a2-highgpu-8g", 100, "ethernet", True, GCP_SPECS),
    _r("gcp", r"a2-highgpu-1g", 24, "ethernet", False, GCP_SPECS),
    _r("azure", r"Standard_ND40rs_v2", 100, "infiniband", True, AZURE_ND_V2),
    _r("nebius", r"gpu-(h100|h200|b200)-sxm_8gpu-.*", 3200, "infiniband", True, NEBIUS_IB),
    _r("oci", r"BM\.GPU3\.8", 50, "ethernet", True, OCI_SPECS),
    _r("oci", r"VM\.GPU\.A10\.1", 24, "ethernet", False, OCI_SPECS),
    _r("oci", r"VM\.GPU\.A10\.2", 48, "ethernet", False, OCI_SPECS),
)
"""Known instance families. Not listed (unknown network, no multi-node plans): on-demand pods
and VMs of Lambda, RunPod, Paperspace, Cudo, FluidStack, Shadeform and DigitalOcean (their
cluster products are sold separately, not as these instance types), Azure NC/NV sizes, and
purchase quotes (the buyer builds the network)."""


def network_default(provider: str, instance_type: str) -> NetworkDefault | None:
    """The table's network fields for a quote, or None when no rule knows the instance."""
    provider = provider.lower()
    for rule in RULES:
        if rule.provider == provider and rule.pattern.fullmatch(instance_type):
            return NetworkDefault(rule.gbps, rule.fabric, rule.multi_node,
                                  f"default for {provider} {instance_type}: {rule.source}")
    return None


def fill_network(values: dict[str, object]) -> dict[str, object]:
    """``values`` (a quote's fields) with the default network fields when none was given."""
    given = any(values.get(k) is not None
                for k in ("network_gbps", "network_fabric", "network_source"))
    if given or values.get("multi_node"):
        return values
    default = network_default(str(values.get("provider", "")),
                              str(values.get("instance_type", "")))
    if default is None:
        return {**values, "network_gbps": None, "network_fabric": None, "multi_node": False,
                "network_source": None}
    return {**values, "network_gbps": default.network_gbps,
            "network_fabric": default.network_fabric, "multi_node": default.multi_node,
            "network_source": default.network_source}
