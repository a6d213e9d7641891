"""Named GPUs of the seed catalog (service/data/gpus.csv, loaded by catalog_data.py), for tests
that reason about one GPU by name.

The seed catalog is what the service ranks, so tests read the same rows; a test that needs a
figure the catalog does not have builds a variant with ``dataclasses.replace``.
"""

from __future__ import annotations

from tests.unit.catalog_data import gpus_by_slug

_SEED = gpus_by_slug()

H100_SXM = _SEED["nvidia-h100-sxm5-80gb"]
H100_PCIE = _SEED["nvidia-h100-pcie-80gb"]
H200 = _SEED["nvidia-h200-sxm-141gb"]
A100_SXM = _SEED["nvidia-a100-sxm4-80gb"]
A100_SXM_40 = _SEED["nvidia-a100-sxm4-40gb"]
A100_PCIE_40 = _SEED["nvidia-a100-pcie-40gb"]
L40S = _SEED["nvidia-l40s"]
L4 = _SEED["nvidia-l4"]
T4 = _SEED["nvidia-t4"]
A10G = _SEED["nvidia-a10g"]
A10 = _SEED["nvidia-a10"]
V100 = _SEED["nvidia-v100-sxm2"]
RTX_A6000 = _SEED["nvidia-rtx-a6000"]
RTX_4090 = _SEED["nvidia-rtx-4090"]
B200 = _SEED["nvidia-b200-hgx"]
MI300X = _SEED["amd-mi300x"]
JETSON_ORIN = _SEED["nvidia-jetson-agx-orin-64gb"]

ALL = (
    H100_SXM,
    H100_PCIE,
    H200,
    A100_SXM,
    A100_PCIE_40,
    L40S,
    L4,
    T4,
    A10G,
    A10,
    V100,
    RTX_A6000,
    RTX_4090,
    B200,
    MI300X,
    JETSON_ORIN,
)
