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

RUNTIME_MAX_NUM_SEQS_LARGE = _const(
    "runtime_max_num_seqs_large_gpu",
    1024.0,
    "sequences per replica",
    "default cap on sequences a decoder replica runs at once (vLLM V1 EngineArgs "
    "default max_num_seqs: 1024 for the OpenAI server on GPUs with >= 70 GiB, 256 below; "
    "vllm/engine/arg_utils.py, _set_default_args_v1); settable per request "
    "(inference.max_num_seqs)",
)
RUNTIME_MAX_NUM_SEQS_SMALL = _const(
    "runtime_max_num_seqs_small_gpu",
    256.0,
    "sequences per replica",
    "vLLM's default max_num_seqs on GPUs with < 70 GiB (same source as the large-GPU default; "
    "also the V0 default for every GPU)",
)
RUNTIME_LARGE_GPU_GIB = _const(
    "runtime_large_gpu_gib",
    70.0,
    "GiB per GPU",
    "memory from which vLLM V1 picks its large-GPU defaults (arg_utils.py: device_memory >= "
    "70 GiB)",
)

# ------------------------------------------------------------- efficiency
EFF_NON_TENSOR = _const(
    "efficiency_non_tensor",
    0.86,
    "fraction of fp32/fp64 vector peak",
    "SGEMM/DGEMM on CUDA cores reach 70-90% of peak at boost, ~90% of the clock they hold; "
    "set by CALIBRATION.md row 4 (ResNet-50 FP32 training on V100, 367 img/s, each layer's "
    "GEMMs timed by tile waves, 3x3 convolutions as Winograd)",
)
EFF_FP64_TENSOR = _const(
    "efficiency_fp64_tensor",
    0.77,
    "fraction of fp64 tensor peak",
    "HPL: A100 ~ 14/19.5 TFLOPS per GPU (Selene, TOP500), H100 ~ 50/67 (Eos) = 0.72-0.75",
)
EFF_MEMORY_BW = _const(
    "efficiency_memory_bandwidth",
    0.80,
    "fraction of datasheet memory bandwidth",
    "STREAM-like reads reach 80-92% of HBM peak (Azure GB200 92%; llm-analysis uses 0.9); "
    "end-to-end decode kernels reach ~0.7-0.85",
)
EFF_COMPUTE_JOB = _const(
    "efficiency_compute_job",
    0.70,
    "fraction of peak",
    "generic 'compute' jobs: dense-linear-algebra-like codes reach 70-75% (HPL), applied to the "
    "tensor rate when the GPU has one for the precision",
)
SERIAL_FRACTION = _const(
    "serial_fraction_compute_job",
    5e-4,
    "fraction of the one-GPU time",
    "Amdahl serial share of a well-scaled HPC code. Gustafson 1988 ('Reevaluating Amdahl's "
    "Law', CACM 31(5)) reports fixed-size speedups of ~500-640 on a 1024-processor hypercube "
    "for wave-motion, fluid-flow and beam codes: Karp-Flatt serial fractions (1/S - 1/p) / "
    "(1 - 1/p) of 6e-4..1e-3 with communication included; communication is modelled "
    "separately here, so we take 5e-4",
)
HALO_DEPTH_CELLS = _const(
    "halo_depth_cells",
    2.0,
    "ghost-cell layers per face",
    "2nd-order stencils need 1 ghost layer, 4th-order central differences 2, WENO-5 3 "
    "(LeVeque, 'Finite Volume Methods for Hyperbolic Problems', 2002, ch. 7); we take 2",
)
REDUCTION_HOP_LATENCY_S = _const(
    "reduction_hop_latency_s",
    2e-6,
    "s per round of a small-message reduction",
    "MPI small-message latency over InfiniBand HDR/NDR is ~1-2 us (OSU micro-benchmarks, "
    "osu_latency); a recursive-doubling all-reduce of a scalar (a time step's CFL limit, a "
    "solver's residual norm) takes ceil(log2 p) such rounds (Thakur, Rabenseifner & Gropp "
    "2005, 'Optimization of Collective Communication Operations in MPICH')",
)

# ------------------------------------------------------------- operator model (engine v2)
GEMM_TILES: tuple[tuple[int, int], ...] = ((128, 128), (256, 128), (64, 128))
_note(
    "gemm_tile",
    "128x128, 256x128, 64x128 (the cheapest is used)",
    "output elements per tile (rows x columns)",
    "CUTLASS/cuBLAS tensor-core GEMM kernels come in 128x128, 256x128 and 64x128 threadblock "
    "tiles and the library heuristics pick per shape; NVIDIA 'Matrix Multiplication "
    "Background' user guide illustrates tile and wave quantization with them",
)
SPLIT_K_MIN = _const(
    "split_k_min_depth",
    256.0,
    "elements of K per split",
    "cuBLAS/CUTLASS split-K (and stream-K) divide K when a GEMM has fewer tiles than SMs; a "
    "slice needs a few 64-deep main-loop iterations to amortize its reduction (CUTLASS "
    "split-K examples use slices of 256+)",
)
SM_COUNT_UNKNOWN = 108
"""SMs assumed when the catalog lacks the figure (A100: the median datacenter part)."""
GEMM_EFFICIENCY = _const(
    "gemm_efficiency",
    0.80,
    "fraction of the sustained-clock tensor peak",
    "large cuBLAS/hipBLASLt GEMMs reach ~80-90% of peak at the clock they hold; set by "
    "CALIBRATION.md row 1 (Llama-2-7B pre-training on A100)",
)
ATTENTION_EFFICIENCY = _const(
    "attention_efficiency",
    0.55,
    "fraction of the sustained-clock tensor peak",
    "FlashAttention-2 (Dao 2023, sec. 4.1): 50-73% of peak forward, 45-63% backward on A100; "
    "FlashAttention-3 ~75% forward on H100. We take 0.55 (training runs both passes)",
)
TRAINING_KERNEL_FACTOR = _const(
    "training_kernel_factor",
    0.62,
    "x gemm_efficiency / attention_efficiency in transformer training",
    "transformer training kernels (forward, data- and weight-gradient GEMMs with fp32 main-"
    "gradient accumulation, attention backward) and the step's host/pipeline stalls reach "
    "less than inference GEMMs: Llama 2 pre-training sustained 39-43% MFU on A100 (Touvron et "
    "al. 2023, Table 2), Llama 3 38-43% on H100; set by CALIBRATION.md rows 1-2",
)
CONV_EFFICIENCY = _const(
    "conv_efficiency",
    0.52,
    "fraction of the sustained-clock tensor peak",
    "share of the tensor peak a well-shaped cuDNN implicit-GEMM convolution tile reaches "
    "(partial tiles and waves are counted per layer by the tile model); set by CALIBRATION.md "
    "row 3 (ResNet-50 AMP channels-last training, 1x A100-80GB, 2,470 img/s)",
)
CONV_INFERENCE_EFFICIENCY = _const(
    "conv_inference_efficiency",
    0.62,
    "fraction of the sustained-clock tensor peak",
    "TensorRT inference convolutions (forward only, batch norm folded, activations fused into "
    "the epilogue, tuned tactics) reach more of peak than cuDNN training convolutions (data "
    "and weight gradients); set by CALIBRATION.md row 5 (MLPerf Inference v3.1 ResNet-50 "
    "offline INT8, 1x H100 SXM, 88,526 samples/s)",
)
EFF_8BIT_GEMM = _const(
    "efficiency_8bit_gemm_factor",
    0.75,
    "x gemm_efficiency / attention_efficiency",
    "FP8/INT8 GEMMs reach a smaller share of their 2x peak (scaling epilogues, smaller "
    "tiles per byte); set by CALIBRATION.md row 7 (TensorRT-LLM Llama 3.1 8B FP8 2048/128)",
)
KERNEL_OVERHEAD_S = _const(
    "kernel_overhead_s",
    3e-6,
    "s per kernel",
    "launch + ramp + tail of one kernel: NVIDIA AIConfigurator adds ~3 us per memory "
    "operation; kernel launch latency is 2-5 us (ESTIMATION.md)",
)
STEP_OVERHEAD_S = _const(
    "serving_step_overhead_s",
    4e-4,
    "s per serving iteration",
    "scheduling, sampling and detokenization per continuous-batching iteration (CPU side, "
    "partly overlapped); vLLM v0.6 release blog: CPU overhead was up to half of decode time "
    "before async scheduling; set by CALIBRATION.md row 9 (batch-1 TPOT)",
)
SEQUENCE_STEP_OVERHEAD_S = _const(
    "serving_sequence_step_overhead_s",
    1.1e-6,
    "s per sequence per serving iteration",
    "the serving runtime's CPU work that grows with the batch: turning each running "
    "sequence's sampled token into output and updating its state every iteration; vLLM V1 "
    "Scheduler.update_from_output alone takes 0.142 ms at 128 decoding sequences and 0.287 "
    "ms at 256 (vllm-project/vllm PR #46112 micro-benchmark, medians of 5: ~1.1 us per "
    "sequence); scheduling and detokenization add more, so this is a floor",
)
DECODE_ATTENTION_PARTITION_TOKENS = _const(
    "decode_attention_partition_tokens",
    512.0,
    "tokens per thread block",
    "decode attention runs one thread block per (query head, sequence, partition of the "
    "context): vLLM paged attention v2 launches grid(num_heads, num_seqs, partitions) over "
    "512-token partitions (csrc/attention/paged_attention_v2.cu, PARTITION_SIZE = 512), and "
    "Flash-Decoding splits the context likewise (Dao et al. 2023, 'Flash-Decoding for "
    "long-context inference'); with fewer blocks than SMs the KV read cannot keep every SM's "
    "loads in flight, and DRAM bandwidth falls in proportion (Little's law for memory: "
    "bytes in flight = bandwidth x latency; Volkov 2016, 'Understanding Latency Hiding on "
    "GPUs', ch. 4). An 8B model at TP8, batch 1, a 1k context: 4 heads x 3 partitions fill "
    "12 of an H100's 132 SMs",
)
TRANSFORMER_KERNELS_PER_LAYER = _const(
    "transformer_kernels_per_layer",
    10.0,
    "kernels per layer per forward",
    "QKV, output, up(+gate), down GEMMs; attention; two norms (fused with residual adds); "
    "rotary/bias; activation; KV-cache write (TensorRT-LLM / vLLM Llama layer)",
)
TRANSFORMER_ELEMENTWISE_PASSES = _const(
    "transformer_elementwise_elements_per_token",
    12.0,
    "hidden-size vectors read or written per token per layer by non-GEMM ops (forward)",
    "two norms (read h, write h each), two residual adds (read 2h, write h each), rotary / "
    "bias (read+write ~2h): 4 + 6 + 2 = 12 vectors of h; the MLP activation adds 2-3 vectors "
    "of the intermediate size (counted separately)",
)
BACKWARD_ELEMENTWISE_FACTOR = _const(
    "backward_elementwise_factor",
    2.0,
    "x forward non-GEMM traffic",
    "each elementwise op's backward reads its saved input and the incoming gradient and writes "
    "the outgoing gradient: ~2x the forward bytes (Korthikanti et al. 2022, Table 1 ops)",
)
CNN_STASHED_TENSORS_PER_CONV = _const(
    "cnn_stashed_tensors_per_conv",
    2.0,
    "tensors kept for backward per convolution",
    "autograd saves each convolution's output (batch norm's input) and the in-place ReLU's "
    "output (the next convolution's input): two tensors per conv in torchvision's ResNet. "
    "Check: ResNet-50's conv outputs total ~10M elements per 224x224 image from the layer "
    "shapes of He et al. 2016 Table 1 (20 MB at 16 bits), i.e. 45 MB / 2",
)
CNN_CONV_PASSES = _const(
    "cnn_conv_io_passes",
    2.0,
    "tensor passes per conv (forward)",
    "a convolution reads its input and writes its output once (weights are small)",
)
CNN_ELEMENTWISE_PASSES_TRAINING = _const(
    "cnn_elementwise_passes_training",
    5.0,
    "tensor passes per conv output (forward, training)",
    "batch norm in training reads the tensor for statistics and again to normalize, and "
    "writes it (3); ReLU reads and writes (2); residual adds are fused in cuDNN/AMP graphs",
)
CNN_ELEMENTWISE_PASSES_INFERENCE = _const(
    "cnn_elementwise_passes_inference",
    0.0,
    "tensor passes per conv output (forward, inference)",
    "TensorRT folds batch norm into the convolution and fuses ReLU/add into its epilogue",
)
CNN_BN_FORWARD_PASSES = _const(
    "cnn_bn_forward_passes",
    3.0,
    "passes over the conv output (training forward)",
    "PyTorch's training batch norm reads its input once for the batch statistics "
    "(batch_norm_collect_statistics) and once more to normalize it while writing the output "
    "(batch_norm_elemt): 1 + 2 (aten/src/ATen/native/cuda/Normalization.cuh)",
)
CNN_BN_BACKWARD_PASSES = _const(
    "cnn_bn_backward_passes",
    5.0,
    "passes over the conv output (training backward)",
    "batch_norm_backward_reduce reads the saved input and the output gradient (2); "
    "batch_norm_backward_elemt reads both again and writes the input gradient (3) "
    "(aten/src/ATen/native/cuda/Normalization.cuh)",
)
CNN_RELU_FORWARD_PASSES = _const(
    "cnn_relu_forward_passes",
    2.0,
    "passes over the tensor (forward)",
    "torchvision's nn.ReLU(inplace=True) reads and writes its tensor once",
)
CNN_RELU_BACKWARD_PASSES = _const(
    "cnn_relu_backward_passes",
    3.0,
    "passes over the tensor (backward)",
    "threshold_backward reads the incoming gradient and the saved output (the mask) and "
    "writes the outgoing gradient",
)
CNN_ADD_PASSES = _const(
    "cnn_residual_add_passes",
    3.0,
    "passes over the tensor (forward; the same again in backward)",
    "torchvision's Bottleneck runs `out += identity` as its own kernel in eager mode: read "
    "two tensors, write one; in backward autograd sums the shortcut's gradient with the main "
    "branch's at the block input (read two, write one)",
)
CNN_WINOGRAD_FLOP_FACTOR = _const(
    "cnn_winograd_flop_factor",
    16.0 / 36.0,
    "x direct-convolution FLOPs",
    "Winograd F(2x2, 3x3) computes a 2x2 output tile of a 3x3 convolution with 16 "
    "multiplies instead of 36 (Lavin & Gray 2016, 'Fast Algorithms for Convolutional Neural "
    "Networks', sec. 4); cuDNN uses it (WINOGRAD / WINOGRAD_NONFUSED) for 3x3 stride-1 "
    "convolutions on CUDA cores; the transforms' extra work is left in the efficiency",
)
CNN_LAYOUT_TRANSPOSE_PASSES = _const(
    "cnn_layout_transpose_passes",
    2.0,
    "passes over each activation operand of a tensor-core conv GEMM (NCHW training)",
    "tensor-core convolutions run on NHWC data; with NCHW tensors cuDNN transposes each "
    "activation operand in and the result back (nchwToNhwc / nhwcToNchw kernels: read and "
    "write the tensor once each), which channels_last avoids (PyTorch tutorial 'Channels "
    "Last Memory Format in PyTorch'; cuDNN developer guide, tensor-core layouts). NVIDIA's "
    "DeepLearningExamples run AMP ResNet-50 with memory_format nhwc (ConvNets/configs.yml); "
    "Lambda's benchmark logs show memory_format nchw",
)
GENERIC_DEFAULT_LAYERS = 50
"""Kernels per forward pass assumed for a generic network that does not give its layer count
(ResNet-50 depth)."""
SUSTAINED_CLOCK_FRACTION_UNKNOWN = _const(
    "sustained_clock_fraction_unknown",
    0.85,
    "fraction of boost clock",
    "median of the catalog GPUs whose base and boost clocks are known",
)
POWER_CLOCK_HEADROOM = _const(
    "power_clock_headroom",
    0.50,
    "fraction of (boost - base) held under sustained matrix load",
    "base clock is guaranteed at TDP under heavy load, boost is opportunistic; dense tensor "
    "load sits between them (NVIDIA GPU Boost docs). Set by CALIBRATION.md row 8 (MLPerf "
    "ResNet-50 INT8 on H100 PCIe, 350 W, vs the SXM row 5 constant)",
)
VENDOR_EFFICIENCY: dict[str, float] = {"amd": 0.78}
_note(
    "vendor_efficiency",
    "amd 0.78 (nvidia 1.0)",
    "x sustained peak",
    "software maturity of the vendor stack (ROCm/hipBLASLt/vLLM-ROCm vs CUDA/TensorRT-LLM), "
    "one factor per vendor: MLPerf Inference v4.1 closed, Llama-2-70B offline, 8x MI300X "
    "23,514.8 tok/s, within 3-4% of NVIDIA's 8x H100 result of the same round (EE Times / "
    "HPCwire reports of the MLCommons table), although MI300X has 1.32x the FP8 peak and "
    "1.58x the bandwidth; set by CALIBRATION.md rows 9-10",
)
PCIE_COLLECTIVE_LATENCY_S = _const(
    "pcie_collective_latency_s",
    3e-5,
    "s per collective over PCIe",
    "NCCL small-message all-reduce over PCIe (through the host bridge, no P2P NVLink) is "
    "20-50 us in nccl-tests on 4-8 GPU PCIe servers, vs ~8 us on NVLink",
)
PIPELINE_STAGE_LATENCY_S = _const(
    "pipeline_stage_latency_s",
    2e-5,
    "s per stage boundary per iteration",
    "a pipeline send/recv of one micro-batch's activations: NCCL point-to-point latency "
    "(10-20 us) before the bytes move",
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

COMMON_KEYS = (
    "framework_overhead_gb",
    "memory_reserve_fraction",
    "power_utilization",
    "sustained_clock_fraction_unknown",
    "power_clock_headroom",
    "vendor_efficiency",
    "gemm_tile",
    "split_k_min_depth",
    "gemm_efficiency",
    "attention_efficiency",
    "conv_efficiency",
    "efficiency_8bit_gemm_factor",
    "kernel_overhead_s",
    "transformer_kernels_per_layer",
    "transformer_elementwise_elements_per_token",
)
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
    "training_kernel_factor",
    "comm_overlap_fraction",
    "backward_elementwise_factor",
    "cnn_stashed_tensors_per_conv",
    "cnn_conv_io_passes",
    "cnn_elementwise_passes_training",
    "cnn_bn_forward_passes",
    "cnn_bn_backward_passes",
    "cnn_relu_forward_passes",
    "cnn_relu_backward_passes",
    "cnn_residual_add_passes",
    "cnn_winograd_flop_factor",
    "cnn_layout_transpose_passes",
)
INFERENCE_KEYS = (
    "quant_scale_overhead",
    "scheduled_tokens_per_iteration",
    "inference_live_activation_fraction",
    "max_auto_batch",
    "runtime_max_num_seqs_large_gpu",
    "runtime_max_num_seqs_small_gpu",
    "runtime_large_gpu_gib",
    "serving_step_overhead_s",
    "serving_sequence_step_overhead_s",
    "decode_attention_partition_tokens",
    "efficiency_memory_bandwidth",
    "efficiency_non_tensor",
    "cnn_stashed_tensors_per_conv",
    "cnn_conv_io_passes",
    "cnn_elementwise_passes_inference",
    "conv_inference_efficiency",
    "pcie_collective_latency_s",
    "pipeline_stage_latency_s",
)
COMPUTE_KEYS = (
    "efficiency_compute_job",
    "efficiency_fp64_tensor",
    "efficiency_non_tensor",
    "efficiency_memory_bandwidth",
    "serial_fraction_compute_job",
    "halo_depth_cells",
    "reduction_hop_latency_s",
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
