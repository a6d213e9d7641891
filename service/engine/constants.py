"""Every named constant the engine uses: value, unit and source.

Each constant is registered as an :class:`Assumption` in :data:`ASSUMPTIONS` so an estimate can
list exactly which numbers it rests on. 1 GB = 1e9 bytes throughout.
"""

from __future__ import annotations

from service.engine.types import Assumption, Precision

ASSUMPTIONS: dict[str, Assumption] = {}


def _const(name: str, value: float, unit: str, source: str) -> float:
    ASSUMPTIONS[name] = Assumption(name=name, value=value, unit=unit, source=source)
    return value


def _note(name: str, value: str, unit: str, source: str) -> None:
    ASSUMPTIONS[name] = Assumption(name=name, value=value, unit=unit, source=source)


GB = 1e9
"""Bytes per GB (decimal, as GPU datasheets use)."""

BYTES_PER_ELEMENT: dict[Precision, float] = {
    "fp64": 8.0,
    "fp32": 4.0,
    "tf32": 4.0,  # TF32 is a compute mode; tensors are stored as fp32
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
}

# ---------------------------------------------------------------- memory
QUANT_SCALE_OVERHEAD = _const(
    "quant_scale_overhead",
    0.03,
    "fraction of quantized weight bytes",
    "Group-wise weight-only quantization (GPTQ/AWQ, group 128) stores an fp16 scale (+zero) per "
    "group: ~3% extra for int4 (ESTIMATION.md)",
)
MASTER_WEIGHT_BYTES = _const(
    "master_weight_bytes_per_param",
    4.0,
    "B/param",
    "fp32 master copy kept by mixed-precision training (Micikevicius et al. 2018; ZeRO §3)",
)
ADAM_STATE_BYTES = _const(
    "adam_state_bytes_per_param",
    8.0,
    "B/param",
    "fp32 momentum + variance. Mixed-precision Adam totals 2+2+4+8 = 16 B/param as in the ZeRO "
    "paper (Rajbhandari et al. 2020, §3); we use 16, not DeepSpeed's 18 (extra fp32 grad copy)",
)
SGD_STATE_BYTES = _const(
    "sgd_momentum_bytes_per_param", 4.0, "B/param", "fp32 momentum buffer (PyTorch SGD)"
)
ADAFACTOR_STATE_BYTES = _const(
    "adafactor_state_bytes_per_param",
    0.05,
    "B/param",
    "factored second moment: O(rows+cols) per matrix, no momentum (Shazeer & Stern 2018); "
    "~0.05 B/param is an upper bound for hidden sizes >= 1024",
)
FRAMEWORK_OVERHEAD_GB = _const(
    "framework_overhead_gb",
    1.0,
    "GB per GPU",
    "CUDA context + cuBLAS/NCCL workspaces + allocator: 0.5-1 GB commonly assumed "
    "(gpu_poor uses 650 MB); we take 1 GB",
)
MEMORY_RESERVE_FRACTION = _const(
    "memory_reserve_fraction",
    0.05,
    "fraction of GPU memory",
    "allocator fragmentation head-room; Vidur reserves 10% for inference, PyTorch training "
    "typically loses 3-8% to fragmentation",
)
ACT_COEF_LINEAR = _const(
    "activation_bytes_coef_linear",
    34.0,
    "B per (token x hidden) per layer at 16-bit",
    "Korthikanti et al. 2022, 'Reducing Activation Recomputation in Large Transformer Models', "
    "eq. 1: s*b*h*(34 + 5*a*s/h)",
)
ACT_COEF_ATTENTION = _const(
    "activation_bytes_coef_attention",
    5.0,
    "B per (head x token^2) per layer",
    "Korthikanti et al. 2022 eq. 1 (the 5*a*s/h term: softmax scores + dropout mask); removed "
    "by flash attention (Dao et al. 2022), which recomputes it",
)
ACT_COEF_CHECKPOINT = _const(
    "activation_bytes_coef_checkpoint",
    2.0,
    "B per (token x hidden) per layer",
    "full activation checkpointing keeps only each layer's 16-bit input (Korthikanti et al. "
    "2022 §4); one layer's full working set is added back during recomputation",
)
SCHEDULED_TOKENS_PER_ITERATION = _const(
    "scheduled_tokens_per_iteration",
    8192.0,
    "tokens per forward pass",
    "serving engines bound one iteration's tokens (decode tokens + chunked-prefill chunks) and "
    "size activation memory for that budget, not for batch x prompt: vLLM "
    "max_num_batched_tokens, default 8192 for the OpenAI server on >= 70 GiB GPUs (2048 on "
    "smaller ones and A100; 16384/8192 for the offline LLM class), vllm/engine/arg_utils.py "
    "EngineArgs.get_batch_defaults; 2048 since PR #10544 (Nov 2024) before that. We take the "
    "upper 8192 (a conservative reservation); one layer's working set is live at a time",
)
INFERENCE_LIVE_ACT_FRACTION = _const(
    "inference_live_activation_fraction",
    0.10,
    "fraction of the training activation stash",
    "a CNN forward pass keeps only the largest adjacent layer outputs live (ResNet-50: ~3 MB "
    "of the ~45 MB/image kept for backward at fp16)",
)
LOGIT_BYTES = _const(
    "logit_bytes_per_vocab_entry",
    4.0,
    "B per token per vocab entry",
    "training keeps fp32 logits for the cross-entropy loss (Megatron-LM, HF Transformers)",
)
MAX_AUTO_BATCH = _const(
    "max_auto_batch",
    1024.0,
    "requests",
    "upper bound of the automatic inference batch search (vLLM default max_num_seqs is 256, "
    "TensorRT-LLM benchmarks go to 1024+)",
)

# ------------------------------------------------------------- efficiency
MFU_TRANSFORMER_TRAINING = _const(
    "mfu_transformer_training",
    0.40,
    "fraction of dense tensor peak",
    "Llama 2 paper (Touvron et al. 2023, Table 2): 184,320 A100-80GB GPU-hours for 7B x 2T "
    "tokens = 39% MFU, 70B = 43%; Llama 3 paper (2024, Table 4) 38-43% BF16 MFU on H100",
)
MFU_CNN_TRAINING = _const(
    "mfu_cnn_training",
    0.22,
    "fraction of dense tensor peak",
    "NVIDIA DeepLearningExamples ResNet-50 v1.5 PyTorch AMP on A100-80GB ~2,700 img/s = "
    "2,700 x 24.6 GFLOP = 66 TFLOPS of 312 (see CALIBRATION.md)",
)
MFU_NON_TENSOR_TRAINING = _const(
    "mfu_non_tensor_training",
    0.55,
    "fraction of fp32/fp64 vector peak",
    "training on CUDA cores without tensor cores: ResNet-50 FP32 on V100 ~360-390 img/s "
    "(NVIDIA DeepLearningExamples) = 9 TFLOPS of 15.7 = 0.57",
)
EFF_NON_TENSOR = _const(
    "efficiency_non_tensor",
    0.70,
    "fraction of fp32/fp64 vector peak",
    "SGEMM/DGEMM on CUDA cores reach 70-90% of peak; HPL on V100 ~ 5.5/7.8 (TOP500 lists)",
)
EFF_FP64_TENSOR = _const(
    "efficiency_fp64_tensor",
    0.75,
    "fraction of fp64 tensor peak",
    "HPL: A100 ~ 14/19.5 TFLOPS per GPU (Selene, TOP500), H100 ~ 50/67 (Eos) = 0.72-0.75",
)
EFF_PREFILL = _const(
    "efficiency_prefill",
    0.65,
    "fraction of dense tensor peak",
    "llm-analysis suggests 0.7 for inference FLOPs; TensorRT-LLM prefill reaches 60-70% MFU",
)
EFF_DECODE_COMPUTE = _const(
    "efficiency_decode_compute",
    0.50,
    "fraction of dense tensor peak",
    "large-batch decode GEMMs are skinny and interleave attention; 40-60% MFU "
    "(vLLM/TensorRT-LLM throughput tables, see CALIBRATION.md)",
)
EFF_8BIT_TRANSFORMER = _const(
    "efficiency_8bit_transformer_factor",
    0.80,
    "x efficiency_prefill / efficiency_decode_compute",
    "FP8/INT8 transformer inference reaches a smaller share of its (2x) tensor peak: "
    "attention, norms and (de)quantization do not speed up. TensorRT-LLM perf overview (v1.0, "
    "docs/source/performance/perf-overview.md), Llama 3.1 8B FP8, ISL/OSL 2048/128, "
    "compute-bound: H100 3,450 and H200 3,538 output tok/s = ~0.51 of FP8 dense peak, vs 0.65 "
    "at 16-bit (see CALIBRATION.md)",
)
EFF_MEMORY_BW = _const(
    "efficiency_memory_bandwidth",
    0.80,
    "fraction of datasheet memory bandwidth",
    "STREAM-like reads reach 80-92% of HBM peak (Azure GB200 92%; llm-analysis uses 0.9); "
    "end-to-end decode kernels reach ~0.7-0.85",
)
EFF_CNN_INFERENCE = _const(
    "efficiency_cnn_inference",
    0.38,
    "fraction of dense tensor peak",
    "MLPerf Inference ResNet-50 offline (TensorRT, INT8): T4 ~5,600 img/s = 35% of 130 TOPS, "
    "A100 ~ 40% (see CALIBRATION.md)",
)
EFF_COMPUTE_JOB = _const(
    "efficiency_compute_job",
    0.70,
    "fraction of peak",
    "generic 'compute' jobs: dense-linear-algebra-like codes reach 70-75% (HPL), applied to the "
    "tensor rate when the GPU has one for the precision",
)
PARALLEL_EFFICIENCY = _const(
    "parallel_efficiency_compute_job",
    0.90,
    "fraction per extra GPU group",
    "strong-scaling efficiency of a generic multi-GPU compute job (HPL scales at ~0.9 per node)",
)

# ------------------------------------------------------------- interconnect
NETWORK_GB_S_PER_GPU = _const(
    "network_bandwidth_per_gpu_gb_s",
    50.0,
    "GB/s per GPU per direction",
    "one 400 Gb/s InfiniBand NDR (ConnectX-7) port per GPU, as in DGX H100 = 50 GB/s",
)
NETWORK_GB_S_PER_GPU_A100_HGX = _const(
    "network_bandwidth_per_gpu_a100_class_gb_s",
    25.0,
    "GB/s per GPU per direction",
    "DGX A100 / AWS p4d era: one 200 Gb/s HDR port per GPU (DGX A100 user guide: 8x ConnectX-6)"
    " = 25 GB/s; applies to SXM/OAM GPUs whose fast link is below 800 GB/s",
)
NETWORK_GB_S_PER_GPU_V100_HGX = _const(
    "network_bandwidth_per_gpu_v100_class_gb_s",
    1.5625,
    "GB/s per GPU per direction",
    "AWS p3dn.24xlarge: 100 Gb/s for 8 V100 SXM2 = 1.56 GB/s per GPU (fast link below 400 GB/s)",
)
NETWORK_GB_S_PER_GPU_PCIE_SERVER = _const(
    "network_bandwidth_per_gpu_pcie_server_gb_s",
    6.25,
    "GB/s per GPU per direction",
    "AWS g6e.48xlarge: 400 Gb/s for 8 L40S = 6.25 GB/s per GPU (datacenter PCIe servers)",
)
NETWORK_GB_S_PER_GPU_WORKSTATION = _const(
    "network_bandwidth_per_gpu_workstation_gb_s",
    1.5625,
    "GB/s per GPU per direction",
    "AWS g5.48xlarge: 100 Gb/s for 8 GPUs = 1.56 GB/s per GPU; the best case for workstation-"
    "class multi-GPU boxes",
)
NETWORK_GB_S_PER_GPU_CONSUMER = _const(
    "network_bandwidth_per_gpu_consumer_gb_s",
    0.39,
    "GB/s per GPU per direction",
    "25 GbE per 8-GPU consumer-card node (community clouds) = 3.1 GB/s / 8",
)
NETWORK_GB_S_PER_GPU_EDGE = _const(
    "network_bandwidth_per_gpu_edge_gb_s",
    0.125,
    "GB/s per GPU per direction",
    "1 GbE on Jetson developer kits (NVIDIA Jetson AGX Orin / Orin NX carrier boards)",
)
PCIE_GB_S: dict[int, float] = {3: 12.0, 4: 25.0, 5: 50.0}
"""Achievable per-direction PCIe x16 bandwidth [GB/s] by generation (theoretical 16/32/64)."""
_note(
    "pcie_achievable_gb_s",
    "gen3 12, gen4 25, gen5 50",
    "GB/s per direction",
    "PCIe x16 theoretical 16/32/64 GB/s; ~75-80% achievable (ESTIMATION.md: gen4 ~25)",
)
DEFAULT_PCIE_GEN = 4
LINK_DIRECTIONAL_FRACTION = _const(
    "nvlink_directional_fraction",
    0.5,
    "fraction",
    "NVLink/Infinity Fabric figures are bidirectional totals (H100 900 GB/s = 450 each way); "
    "ring collectives are limited by the one-way rate",
)
COLLECTIVE_EFFICIENCY = _const(
    "collective_efficiency",
    0.80,
    "fraction of link bandwidth",
    "NCCL all-reduce bus bandwidth reaches ~80% of the one-way link rate (nccl-tests on "
    "DGX A100: ~230 of 300 GB/s)",
)
COLLECTIVE_LATENCY_S = _const(
    "collective_latency_s",
    8e-6,
    "s per collective",
    "llm-analysis: ~8 us per tensor-parallel all-reduce",
)
BACKWARD_OVERLAP_FRACTION = _const(
    "comm_overlap_fraction",
    0.66,
    "fraction of compute time that can hide communication",
    "data-parallel gradient reduction overlaps with the backward pass, which is 2/3 of the "
    "6*N*D training FLOPs (Kaplan et al. 2020); ZeRO-3 prefetch overlaps likewise. TP "
    "collectives share the same budget: the training MFU is end-to-end from runs with TP = 8 "
    "inside NVLink nodes (Llama 3 paper 2024: 38-43% BF16 MFU with TP 8), and Megatron/"
    "TransformerEngine overlap TP communication with GEMMs (--tp-comm-overlap)",
)
BRIDGE_PAIR_SIZE = 2
"""PCIe cards with NVLink bridges (A100/H100 PCIe, RTX A6000) connect pairs only."""

# ------------------------------------------------------------- FLOPs and power
TRAIN_FLOPS_PER_PARAM_TOKEN = _const(
    "training_flops_per_param_token",
    6.0,
    "FLOP per param per token",
    "Kaplan et al. 2020: forward 2N + backward 4N",
)
RECOMPUTE_FLOPS_PER_PARAM_TOKEN = _const(
    "training_flops_per_param_token_recompute",
    8.0,
    "FLOP per param per token",
    "full activation recomputation adds one forward: 8N (Korthikanti et al. 2022)",
)
CNN_TRAIN_FLOPS_FACTOR = _const(
    "cnn_training_flops_factor",
    3.0,
    "x forward FLOPs",
    "backward ~ 2x forward (ESTIMATION.md: training ~ 3x forward)",
)
POWER_UTILIZATION = _const(
    "power_utilization",
    0.75,
    "fraction of TDP",
    "sustained board power under training/inference load is 60-90% of TDP (MLPerf Power "
    "submissions); we take 0.75",
)

COMMON_KEYS = ("framework_overhead_gb", "memory_reserve_fraction", "power_utilization")
TRAINING_KEYS = (
    "master_weight_bytes_per_param",
    "adam_state_bytes_per_param",
    "sgd_momentum_bytes_per_param",
    "adafactor_state_bytes_per_param",
    "activation_bytes_coef_linear",
    "activation_bytes_coef_attention",
    "activation_bytes_coef_checkpoint",
    "logit_bytes_per_vocab_entry",
    "training_flops_per_param_token",
    "training_flops_per_param_token_recompute",
    "cnn_training_flops_factor",
    "mfu_transformer_training",
    "mfu_cnn_training",
    "mfu_non_tensor_training",
    "comm_overlap_fraction",
)
INFERENCE_KEYS = (
    "quant_scale_overhead",
    "scheduled_tokens_per_iteration",
    "inference_live_activation_fraction",
    "max_auto_batch",
    "efficiency_prefill",
    "efficiency_decode_compute",
    "efficiency_8bit_transformer_factor",
    "efficiency_memory_bandwidth",
    "efficiency_cnn_inference",
    "efficiency_non_tensor",
)
COMPUTE_KEYS = (
    "efficiency_compute_job",
    "efficiency_fp64_tensor",
    "efficiency_non_tensor",
    "efficiency_memory_bandwidth",
    "parallel_efficiency_compute_job",
)
LINK_KEYS = (
    "network_bandwidth_per_gpu_gb_s",
    "network_bandwidth_per_gpu_a100_class_gb_s",
    "network_bandwidth_per_gpu_v100_class_gb_s",
    "network_bandwidth_per_gpu_pcie_server_gb_s",
    "network_bandwidth_per_gpu_workstation_gb_s",
    "network_bandwidth_per_gpu_consumer_gb_s",
    "network_bandwidth_per_gpu_edge_gb_s",
    "pcie_achievable_gb_s",
    "nvlink_directional_fraction",
    "collective_efficiency",
    "collective_latency_s",
)
