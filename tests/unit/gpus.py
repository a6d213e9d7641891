"""GpuSpec fixtures typed from /work/shared/reference/gpu_datasheets.csv (dense tensor figures).

Interconnect bandwidth: NVLink totals from the same CSV (``nvlink_gbps``); PCIe-only cards get
PCIe figures through their ``pcie_gen``.
"""

from __future__ import annotations

from service.engine.types import GpuSpec

H100_SXM = GpuSpec(
    slug="nvidia-h100-sxm5-80gb", name="NVIDIA H100 SXM5 80GB", vendor="NVIDIA",
    form_factor="sxm", memory_gb=80, memory_bandwidth_gb_s=3350, tdp_w=700,
    fp64_tflops=34, fp64_tensor_tflops=67, fp32_tflops=67, tf32_tflops=494.7,
    bf16_tflops=989.4, fp16_tflops=989.4, fp8_tflops=1978.9, int8_tops=1978.9,
    interconnect="nvlink", interconnect_bandwidth_gb_s=900, pcie_gen=5, architecture="Hopper",
)
H100_PCIE = GpuSpec(
    slug="nvidia-h100-pcie-80gb", name="NVIDIA H100 PCIe 80GB", vendor="NVIDIA",
    form_factor="pcie", memory_gb=80, memory_bandwidth_gb_s=2000, tdp_w=350,
    fp64_tflops=26, fp64_tensor_tflops=51, fp32_tflops=51, tf32_tflops=378,
    bf16_tflops=756, fp16_tflops=756, fp8_tflops=1513, int8_tops=1513,
    interconnect="nvlink", interconnect_bandwidth_gb_s=600, pcie_gen=5, architecture="Hopper",
)
H200 = GpuSpec(
    slug="nvidia-h200-sxm-141gb", name="NVIDIA H200 SXM 141GB", vendor="NVIDIA",
    form_factor="sxm", memory_gb=141, memory_bandwidth_gb_s=4800, tdp_w=700,
    fp64_tflops=34, fp64_tensor_tflops=67, fp32_tflops=67, tf32_tflops=494.7,
    bf16_tflops=989.4, fp16_tflops=989.4, fp8_tflops=1978.9, int8_tops=1978.9,
    interconnect="nvlink", interconnect_bandwidth_gb_s=900, pcie_gen=5, architecture="Hopper",
)
A100_SXM = GpuSpec(
    slug="nvidia-a100-sxm4-80gb", name="NVIDIA A100 SXM4 80GB", vendor="NVIDIA",
    form_factor="sxm", memory_gb=80, memory_bandwidth_gb_s=2039, tdp_w=400,
    fp64_tflops=9.7, fp64_tensor_tflops=19.5, fp32_tflops=19.5, tf32_tflops=156,
    bf16_tflops=312, fp16_tflops=312, fp8_tflops=None, int8_tops=624,
    interconnect="nvlink", interconnect_bandwidth_gb_s=600, pcie_gen=4, architecture="Ampere",
)
A100_PCIE_40 = GpuSpec(
    slug="nvidia-a100-pcie-40gb", name="NVIDIA A100 PCIe 40GB", vendor="NVIDIA",
    form_factor="pcie", memory_gb=40, memory_bandwidth_gb_s=1555, tdp_w=250,
    fp64_tflops=9.7, fp64_tensor_tflops=19.5, fp32_tflops=19.5, tf32_tflops=156,
    bf16_tflops=312, fp16_tflops=312, int8_tops=624,
    interconnect="nvlink", interconnect_bandwidth_gb_s=600, pcie_gen=4, architecture="Ampere",
)
L40S = GpuSpec(
    slug="nvidia-l40s", name="NVIDIA L40S", vendor="NVIDIA", form_factor="pcie",
    memory_gb=48, memory_bandwidth_gb_s=864, tdp_w=350, fp64_tflops=1.4, fp32_tflops=91.6,
    tf32_tflops=183, bf16_tflops=362.05, fp16_tflops=362.05, fp8_tflops=733, int8_tops=733,
    interconnect="pcie", pcie_gen=4, architecture="Ada",
)
L4 = GpuSpec(
    slug="nvidia-l4", name="NVIDIA L4", vendor="NVIDIA", form_factor="pcie", memory_gb=24,
    memory_bandwidth_gb_s=300, tdp_w=72, fp64_tflops=0.47, fp32_tflops=30.3, tf32_tflops=60,
    bf16_tflops=121, fp16_tflops=121, fp8_tflops=242.5, int8_tops=242.5,
    interconnect="pcie", pcie_gen=4, architecture="Ada",
)
T4 = GpuSpec(
    slug="nvidia-t4", name="NVIDIA T4", vendor="NVIDIA", form_factor="pcie", memory_gb=16,
    memory_bandwidth_gb_s=320, tdp_w=70, fp64_tflops=0.25, fp32_tflops=8.1,
    fp16_tflops=65, int8_tops=130, interconnect="pcie", pcie_gen=3, architecture="Turing",
)
A10G = GpuSpec(
    slug="nvidia-a10g", name="NVIDIA A10G", vendor="NVIDIA", form_factor="pcie", memory_gb=24,
    memory_bandwidth_gb_s=600, tdp_w=300, fp64_tflops=0.55, fp32_tflops=35, tf32_tflops=35,
    bf16_tflops=70, fp16_tflops=70, int8_tops=140, interconnect="pcie", pcie_gen=4,
    architecture="Ampere",
)
A10 = GpuSpec(
    slug="nvidia-a10", name="NVIDIA A10", vendor="NVIDIA", form_factor="pcie", memory_gb=24,
    memory_bandwidth_gb_s=600, tdp_w=150, fp64_tflops=0.49, fp32_tflops=31.2,
    tf32_tflops=62.5, bf16_tflops=125, fp16_tflops=125, int8_tops=250, interconnect="pcie",
    pcie_gen=4, architecture="Ampere",
)
V100 = GpuSpec(
    slug="nvidia-v100-sxm2", name="NVIDIA Tesla V100 SXM2", vendor="NVIDIA", form_factor="sxm",
    memory_gb=32, memory_bandwidth_gb_s=900, tdp_w=300, fp64_tflops=7.8, fp32_tflops=15.7,
    fp16_tflops=125, interconnect="nvlink", interconnect_bandwidth_gb_s=300, pcie_gen=3,
    architecture="Volta",
)
RTX_A6000 = GpuSpec(
    slug="nvidia-rtx-a6000", name="NVIDIA RTX A6000", vendor="NVIDIA",
    form_factor="workstation", memory_gb=48, memory_bandwidth_gb_s=768, tdp_w=300,
    fp64_tflops=0.6, fp32_tflops=38.7, tf32_tflops=77.4, bf16_tflops=154.8,
    fp16_tflops=154.8, int8_tops=309.7, interconnect="nvlink",
    interconnect_bandwidth_gb_s=112.5, pcie_gen=4, architecture="Ampere",
)
RTX_4090 = GpuSpec(
    slug="nvidia-rtx-4090", name="NVIDIA GeForce RTX 4090", vendor="NVIDIA",
    form_factor="consumer", memory_gb=24, memory_bandwidth_gb_s=1008, tdp_w=450,
    fp64_tflops=1.29, fp32_tflops=82.6, tf32_tflops=82.6, bf16_tflops=165.2,
    fp16_tflops=165.2, fp8_tflops=330.3, int8_tops=660.6, interconnect="pcie", pcie_gen=4,
    architecture="Ada",
)
B200 = GpuSpec(
    slug="nvidia-b200-hgx", name="NVIDIA B200 (HGX)", vendor="NVIDIA", form_factor="sxm",
    memory_gb=180, memory_bandwidth_gb_s=8000, tdp_w=1000, fp64_tflops=37,
    fp64_tensor_tflops=37, fp32_tflops=75, tf32_tflops=1100, bf16_tflops=2250,
    fp16_tflops=2250, fp8_tflops=4500, int8_tops=4500, interconnect="nvlink",
    interconnect_bandwidth_gb_s=1800, pcie_gen=5, architecture="Blackwell",
)
MI300X = GpuSpec(
    slug="amd-mi300x", name="AMD Instinct MI300X", vendor="AMD", form_factor="oam",
    memory_gb=192, memory_bandwidth_gb_s=5300, tdp_w=750, fp64_tflops=81.7,
    fp64_tensor_tflops=163.4, fp32_tflops=163.4, tf32_tflops=653.7, bf16_tflops=1307.4,
    fp16_tflops=1307.4, fp8_tflops=2614.9, int8_tops=2614.9, interconnect="infinity_fabric",
    interconnect_bandwidth_gb_s=896, pcie_gen=5, architecture="CDNA 3",
)
JETSON_ORIN = GpuSpec(
    slug="nvidia-jetson-agx-orin-64gb", name="NVIDIA Jetson AGX Orin 64GB", vendor="NVIDIA",
    form_factor="edge", memory_gb=64, memory_bandwidth_gb_s=204.8, tdp_w=60,
    fp32_tflops=5.3, tf32_tflops=21.3, bf16_tflops=42.5, fp16_tflops=42.5, int8_tops=85,
    interconnect="none", max_gpus_per_node=1, pcie_gen=4, architecture="Ampere",
)

ALL = (
    H100_SXM, H100_PCIE, H200, A100_SXM, A100_PCIE_40, L40S, L4, T4, A10G, A10, V100,
    RTX_A6000, RTX_4090, B200, MI300X, JETSON_ORIN,
)
