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
"""Bytes per GB (decimal: bandwidths, and the engine's memory needs; a GPU's memory size is
binary, :data:`GIB`)."""
MIB = 2.0**20
"""Bytes per MiB: on-chip cache sizes are binary (A100 'l2CacheSize' 41,943,040 B = 40 MiB,
quoted as 40 MB)."""
GIB = 2.0**30
"""Bytes per GiB: a GPU's memory size is binary (the A100 80GB holds 81,920 MiB; the H100
80GB's driver reports 81,559 MiB, the rest held for itself)."""

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
    "fraction of int4 weight bytes",
    "Group-wise weight-only quantization (GPTQ/AWQ, group 128) stores an fp16 scale (+zero) per "
    "group: ~3% extra for int4 (ESTIMATION.md; 2 B per 128 x 0.5 B = 3.1%). int8 weights "
    "carry one scale per output channel (per-channel quantization: SmoothQuant W8A8, Xiao et "
    "al. ICML 2023; TensorRT-LLM's int8 weight-only), 2 B per thousands of weights: none is "
    "counted",
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
ECC_RESERVED_FRACTION = _const(
    "ecc_reserved_fraction",
    1.0 / 16.0,
    "fraction of a GDDR board's memory",
    "GDDR has no sideband for ECC check bits, so a board with ECC on stores them in its own "
    "memory, 1/16 of it; NVIDIA's datacenter PCIe GDDR boards ship with ECC on: nvidia-smi "
    "reports 23,034 MiB on the L4 and 15,360 MiB on the T4 (24 and 16 GiB x 15/16, public "
    "nvidia-smi outputs), where the workstation RTX A6000 (ECC off by default) reports "
    "49,140 MiB of 48 GiB and HBM parts keep their ECC in the stack's sideband (A100 80GB: "
    "81,920 MiB)",
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
    "eq. 1: s*b*h*(34 + 5*a*s/h), for a GELU MLP of 4h (its share 19); other MLPs swap in "
    "their own share (memory.layer_activation_bytes_per_token)",
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
    0.73,
    "fraction of fp64 tensor peak",
    "HPL: A100 ~ 14/19.5 TFLOPS per GPU (Selene, TOP500), H100 ~ 50/67 (Eos) = 0.72-0.75; "
    "set by CALIBRATION.md row 6 (re-set from 0.77 when the power model let the A100 hold "
    "its boost clock)",
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
JOB_STARTUP_FIXED_S = _const(
    "job_startup_fixed_s",
    2.6,
    "s before a multi-GPU job's first step, whatever its size",
    "setting up the job's communicator on one node: NVIDIA/nccl#1646 logs "
    "ncclCommInitRankConfig's phases on an 8-GPU DGX B200 (alloc 0.41, bootstrap 0.57, "
    "allgathers 0.08, topo 1.10, graphs 0.01, connections 0.39 s: 2.56 s, leaving out that "
    "report's 52 s of kernel loading, the bug it reports). A one-GPU job sets up no "
    "communicator; its CUDA context is the same at every count and not counted",
)
JOB_STARTUP_S_PER_GPU = _const(
    "job_startup_s_per_gpu",
    0.0123,
    "s per GPU of a multi-GPU job, before its first step",
    "the bootstrap that wires every rank grows with the ranks (its all-gathers are rings of "
    "N - 1 steps over TCP: NVIDIA/nccl pull request #1791): NVIDIA/nccl#534 measured 7 "
    "communicators in 31.3 s on one 8-GPU machine and 41.7 s on 16 (128 GPUs), (41.7 - "
    "31.3) / 7 / 120 = 12.3 ms per added GPU; NVIDIA/nccl#1156 (Meta) reports 2.5 minutes "
    "of init 'above certain K GPUs', which this gives at ~12,000 GPUs. Paid once per launch: "
    "the restarts of a long run are in the training goodput",
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
    0.595,
    "x gemm_efficiency / attention_efficiency in transformer training",
    "transformer training kernels (forward, data- and weight-gradient GEMMs with fp32 main-"
    "gradient accumulation, attention backward) and the step's host/pipeline stalls reach "
    "less than inference GEMMs: the healthy step rate, apart from the job-level goodput "
    "(training_interruptions_per_gpu_hour, training_hours_lost_per_interruption). Set by "
    "CALIBRATION.md rows 1-2 (Llama 2 pre-training GPU-hours on A100, Touvron et al. 2023, "
    "Table 2: 39-43% MFU) after dividing out their goodput (0.998 at 256 GPUs, 0.994 at "
    "1,024): failure statistics explain under 1% of those GPU-hours. Re-set with the "
    "power-limited clock model (physics/power.py), which holds the A100 nearer boost. "
    "GeForce cards, whose catalog tensor rates are half the array's full rate, reach "
    "min(1, this x geforce_fp16_accumulate_speedup) (physics/training.py, "
    "training_kernel_factor)",
)
TRAINING_INTERRUPTIONS_PER_GPU_HOUR = _const(
    "training_interruptions_per_gpu_hour",
    2.19e-5,
    "job interruptions per GPU-hour of wall time",
    "Llama 3 (Dubey et al. 2024, sec. 3.3.4): 466 job interruptions (47 planned, 419 "
    "unexpected) in a 54-day snapshot of pre-training on 16,384 H100 = 466 / (16,384 x 54 x "
    "24 h). Cross-check: Kokolis et al. 2024 ('Revisiting Reliability in Large-Scale ML "
    "Research Clusters', Meta RSC-1 A100 cluster) report ~6.5 failures per 1,000 node-days "
    "(3.4e-5 per GPU-hour) and project an MTTF of ~1.8 h for a 16,384-GPU job [recalled]",
)
TRAINING_HOURS_LOST_PER_INTERRUPTION = _const(
    "training_hours_lost_per_interruption",
    0.28,
    "h of the whole job per interruption (restart, reload, recomputed steps)",
    "Llama 3 (Dubey et al. 2024, sec. 3.3.4): 'higher than 90% effective training time' over "
    "the 54 days with 466 interruptions, so at most 0.10 x 54 x 24 h / 466 = 0.28 h lost per "
    "interruption (detection, restart, checkpoint reload and the steps since the last "
    "checkpoint); a job shorter than twice this loses on average half its length",
)
CONV_EFFICIENCY = _const(
    "conv_efficiency",
    0.52,
    "fraction of the sustained-clock tensor peak",
    "share of the tensor peak a well-shaped cuDNN implicit-GEMM convolution tile reaches "
    "(partial tiles and waves are counted per layer by the tile model); set by CALIBRATION.md "
    "row 3 (ResNet-50 AMP channels-last training, 1x A100-80GB, 2,470 img/s)",
)
L2_RESIDENT_FRACTION = _const(
    "l2_resident_fraction",
    0.75,
    "fraction of the last-level cache that holds a layer's activations",
    "CUDA programming guide, L2 cache set-aside for persisting accesses: the guide's example "
    "sets aside min(0.75 x l2CacheSize, persistingL2CacheMaxSize), and the A100 reports "
    "persistingL2CacheMaxSize 31,457,280 of l2CacheSize 41,943,040 B = 0.75 (cudaDeviceProp "
    "values quoted on the NVIDIA developer forum, 'What is the difference: "
    "cudaLimitPersistingL2CacheSize, accessPolicyMaxWindowSize, persistingL2CacheMaxSize'). "
    "Used for CNN inference (physics/cnn.py): a layer whose input and output activations "
    "(and residual) for the batch fit in this share of the cache reads and writes them on "
    "chip (TensorRT reuses activation buffers, so they are overwritten in the cache rather "
    "than written back)",
)
CONV_INFERENCE_EFFICIENCY = _const(
    "conv_inference_efficiency",
    0.62,
    "fraction of the sustained-clock tensor peak",
    "TensorRT inference convolutions (forward only, batch norm folded, activations fused into "
    "the epilogue, tuned tactics) reach more of peak than cuDNN training convolutions (data "
    "and weight gradients); set by CALIBRATION.md row 5 (MLPerf Inference v3.1 ResNet-50 "
    "offline INT8, 1x H100 SXM, 88,526 samples/s; re-set from 0.55 with the power model, "
    "which holds the H100 at boost, 1.08x its 1,830 MHz-quoted peak, where the midpoint rule "
    "held 0.90 of boost)",
)
EFF_8BIT_GEMM = _const(
    "efficiency_8bit_gemm_factor",
    0.64,
    "x gemm_efficiency / attention_efficiency",
    "FP8/INT8 GEMMs reach a smaller share of their 2x peak (scaling epilogues, smaller "
    "tiles per byte); set by CALIBRATION.md rows 7-8 (TensorRT-LLM Llama 3.1 8B FP8 "
    "2048/128; re-set from 0.75 with the power model)",
)
KERNEL_OVERHEAD_S = _const(
    "kernel_overhead_s",
    3e-6,
    "s per kernel",
    "launch + ramp + tail of one kernel: NVIDIA AIConfigurator adds ~3 us per memory "
    "operation; kernel launch latency is 2-5 us (ESTIMATION.md)",
)
LLAMACPP_STREAM_BYTES_PER_SM_CYCLE = _const(
    "llamacpp_stream_bytes_per_sm_cycle",
    6.8,
    "B per SM per clock cycle",
    "llama.cpp (inference.runtime llama.cpp) streams weights through matrix-vector kernels "
    "whose bytes in flight per SM, over the DRAM latency, cap the bandwidth they reach "
    "(Little's law: throughput = concurrency / latency; V. Volkov, 'Understanding Latency "
    "Hiding on GPUs', UC Berkeley PhD thesis 2016, ch. 4): bandwidth <= SMs x boost clock x "
    "this rate, below the achieved DRAM bandwidth on HBM parts, above it on GDDR cards. Set "
    "by CALIBRATION.md row 11: Argonne LLM-Inference-Bench, llama-bench Llama-3-8B F16 on one "
    "H100 SXM (101.57 tokens/s)",
)
LLAMACPP_PROMPT_EFFICIENCY = _const(
    "llamacpp_prompt_efficiency",
    0.625,
    "x the batching-server GEMM and attention rates",
    "share of a batching server's GEMM and attention FLOP rates that llama.cpp's prompt path "
    "reaches: it converts F32 activations to F16 and the results back around every cuBLAS "
    "GEMM, runs attention unfused without flash attention, and keeps norms and RoPE in F32 "
    "(ggml-cuda ggml_cuda_op_mul_mat_cublas). Set by CALIBRATION.md row 12: llama.cpp PR "
    "#4766 (ggerganov, 2024-01-10), llama-bench pp512 of a 7B F16 model on one RTX 4090, "
    "11,048 tokens/s",
)
GEFORCE_FP16_ACCUMULATE_SPEEDUP = _const(
    "geforce_fp16_accumulate_speedup",
    2.0,
    "x the FP32-accumulate FP16 tensor rate",
    "NVIDIA GeForce cards (Turing and later) run FP16 tensor math with FP16 accumulation at "
    "twice the rate with FP32 accumulation (the catalog's fp16 figure): RTX 4090 330.3 vs "
    "165.2 dense TFLOPS (NVIDIA Ada GPU Architecture whitepaper, appendix table), RTX 3090 142 "
    "vs 71 (NVIDIA Ampere GA102 whitepaper); workstation and datacenter parts run both at one "
    "rate (RTX 6000 Ada, RTX A6000, A40: same tables). llama.cpp multiplies F16 weights with "
    "cublasGemmEx(..., CUBLAS_COMPUTE_16F) (ggml-cuda ggml_cuda_op_mul_mat_cublas), so its "
    "F16 GEMMs on a GeForce card get the doubled rate; a datasheet ratio, not fitted",
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
EAGER_ATTENTION_FORWARD_PASSES = _const(
    "eager_attention_forward_score_passes",
    10.0,
    "score-sized tensors read or written per (query, key) pair per head, forward",
    "attention without a fused kernel materialises the scores and runs each step as its own "
    "kernel, as NVIDIA's BERT (DeepLearningExamples PyTorch/LanguageModeling/BERT/modeling.py, "
    "BertSelfAttention.forward) and Hugging Face's eager attention write it: QK^T writes S (1), "
    "scale reads and writes it (2), the mask add (2), softmax (2), dropout (2, plus its 1-byte "
    "mask: eager_attention_dropout_mask_bytes), PV reads P (1) = 10",
)
EAGER_ATTENTION_BACKWARD_PASSES = _const(
    "eager_attention_backward_score_passes",
    11.0,
    "score-sized tensors read or written per (query, key) pair per head, backward",
    "the same code's autograd: dO V^T writes dP (1), dV = P^T dO reads P (1), dropout's "
    "backward reads dP and writes its gradient (2, plus the mask), softmax's backward reads P "
    "and its gradient and writes dS (3), the scale's backward (2), dQ = dS K and dK = dS^T Q "
    "read dS (2) = 11; the mask add passes its gradient through",
)
EAGER_ATTENTION_DROPOUT_MASK_BYTES = _const(
    "eager_attention_dropout_mask_bytes",
    1.0,
    "B per (query, key) pair per head, written forward and read backward",
    "PyTorch's native dropout keeps a bool (1-byte) mask; the same mask Korthikanti et al. "
    "2022 count in the attention activations (activation_bytes_coef_attention)",
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
    "used where a GPU's clocks or process node are unknown (physics/power.py cannot run): "
    "the median of the base/boost midpoints of the catalog GPUs, conservative against the "
    "power model, which holds most catalog parts at 0.93-1.0 of boost",
)
# ------------------------------------------------------------- clocks under the power limit
# (physics/power.py: P(f) = P_static + u x E_flop x R_boost x (f/f_boost)^alpha + E_byte x B)
STATIC_POWER_FRACTION = _const(
    "static_power_fraction",
    0.15,
    "fraction of the board power limit",
    "power drawn whatever the clock: leakage, memory refresh and PHYs, board regulators, fans "
    "(idle datacenter GPUs read 10-20% of their limit in nvidia-smi: A100 SXM ~50-60 of 400 "
    "W, H100 SXM ~70-100 of 700 W); leakage grows with temperature under load, so we take "
    "the upper-middle 15% [recalled]",
)
DVFS_POWER_EXPONENT = _const(
    "dvfs_power_exponent",
    2.5,
    "dynamic power ~ clock^exponent",
    "CMOS dynamic power C V^2 f; over a GPU's DVFS range the supply voltage rises roughly "
    "linearly with the clock above a floor, so power grows between f^2 and f^3 (Mei, Wang & "
    "Chu 2017, 'A survey and measurement study of GPU DVFS on energy conservation', Digital "
    "Communications and Networks 3(2): measured voltage/frequency pairs; AccelWattch, Kandiah "
    "et al., MICRO 2021, scales dynamic power by V^2 f per DVFS state); we take the middle",
)
DRAM_ENERGY_PJ_PER_BYTE = _const(
    "dram_energy_pj_per_byte",
    31.2,
    "pJ per DRAM byte moved",
    "HBM2 access + I/O energy 3.9 pJ/bit (O'Connor et al., 'Fine-Grained DRAM: Energy-"
    "Efficient DRAM for Extreme Bandwidth Systems', MICRO 2017, Table 1; GDDR5 14 pJ/bit). "
    "One figure for every part: it understates GDDR6/LPDDR5 boards, whose memory power is a "
    "small share of the budget at their bandwidth",
)
GEMM_DRAM_FLOP_PER_BYTE_16BIT = _const(
    "gemm_dram_flop_per_byte_16bit",
    315.0,
    "FLOP per DRAM byte of a large 16-bit GEMM (x 2 / operand bytes at other widths)",
    "NVIDIA 'Matrix Multiplication Background' user guide (DU-09799-001), Math and Memory "
    "Bounds, Table 1: a linear layer of 4,096 outputs, 1,024 inputs, batch 512 has an "
    "arithmetic intensity of 315 FLOPS/B at FP16 (2MNK / 2(MK + NK + MN): each operand and "
    "the output moved once) [recalled; the formula gives 315]. Used by the power model "
    "(physics/power.py) for the DRAM traffic of compute-bound GEMMs: they sit at or right of "
    "the ridge point (H100 SXM: ~295 FLOP/B at the engine's achieved rates), so they move "
    "their FLOPs / 315 bytes per second, at most the achieved bandwidth",
)
TENSOR16_ENERGY_PJ_4N = _const(
    "tensor16_energy_pj_per_flop_4n",
    0.727,
    "pJ per dense 16-bit tensor FLOP at the boost voltage, TSMC 4N, board level",
    "NVIDIA's own power figure: the H100 SXM datasheet quotes its dense BF16 peak (989.4 "
    "TFLOPS) at 1,830 MHz, below the 1,980 MHz boost, for a 700 W module; read as the clock "
    "a large dense GEMM (gemm_efficiency, 0.8 of peak) holds at that limit, with the static "
    "share and DRAM at achieved bandwidth (the GEMM's 856 TFLOPS at boost / "
    "gemm_dram_flop_per_byte_16bit = 2.72 TB/s exceeds it): (700 - 0.15 x 700 - 3.35 TB/s x "
    "0.8 x 31.2 pJ/B) "
    "/ (0.8 x 1070.5 TFLOPS at boost x (1830/1980)^2.5) = 0.727 pJ. A datasheet design "
    "point, not a measurement; the H100 PCIe (1,620 MHz at 350 W) and NVL (1,545 MHz at 400 "
    "W) quotes, not used, are ~20% above the clocks this energy gives those parts. Order "
    "of magnitude check: Volta's HMMA spends ~1 pJ per FLOP in the tensor core alone at 12 nm "
    "(Dally, Keckler & Kirk, 'Evolution of the Graphics Processing Unit (GPU)', IEEE Micro "
    "41(6), 2021) [recalled]; 0.727 x 3.57 (node) = 2.6 pJ per FLOP on the whole board",
)
NODE_ENERGY_FACTOR: tuple[tuple[str, float], ...] = (
    ("blackwell", 1.0),
    ("hopper", 1.0),
    ("ada", 1.0),
    ("cdna 3", 1.0),
    ("ga100", 1.43),
    ("cdna 2", 1.43),
    ("ampere", 2.14),
    ("turing", 3.57),
    ("volta", 3.57),
    ("pascal", 3.57),
)
"""Energy per FLOP of an architecture's process node relative to TSMC 4N (first match of the
catalog's architecture text, lower case; Ampere GA100 before the other Amperes)."""
_note(
    "node_energy_factor",
    "4N/4NP/N5 (Hopper, Ada, Blackwell, CDNA 3 XCDs) 1.0; N7/N6 (GA100, CDNA 2) 1.43; "
    "Samsung 8N (GA10x, Orin) 2.14; 16/12 nm (Pascal, Volta, Turing) 3.57",
    "x energy per FLOP at TSMC 4N",
    "TSMC's iso-speed power reductions: N5 vs N7 -30% (N7 = 1/0.7 = 1.43 x N5; 4N is an N5 "
    "variant, N6 an N7 one), N7 vs 16FF+ -60% (16/12 nm = 1.43/0.4 = 3.57), 10FF vs 16FF+ "
    "-40% for Samsung's 10 nm-class 8N (0.6 x 3.57 = 2.14) (TSMC technology announcements "
    "for N5, N7, 10FF) [recalled]",
)
TENSOR16_FLOP_PER_CLOCK_PER_SM: tuple[tuple[str, float], ...] = (
    ("hopper", 4096.0),
    ("blackwell", 8192.0),
)
"""Dense 16-bit tensor FLOP per clock per SM of the architectures whose datasheets quote the
tensor peak below the boost clock (every other architecture quotes at boost: A100 312 TFLOPS =
108 x 2,048 x 1,410 MHz; MI300X 1,307 = 304 x 2,048 x 2,100 MHz; L40S 362 = 142 x 1,024 x
2,490 MHz)."""
_note(
    "tensor16_flop_per_clock_per_sm",
    "Hopper 4096, Blackwell 8192 (others quote at boost)",
    "dense FLOP per clock per SM",
    "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): 1,024 dense FP16 FMA per "
    "clock per SM (4 tensor cores), H100 SXM 989.4 TFLOPS = 132 SMs x 4,096 x 1,830 MHz; "
    "Blackwell doubles it per SM: B200 2,250 TFLOPS = 148 SMs x 8,192 x ~1,856 MHz",
)
ENERGY_RATIO_TENSOR_8BIT = _const(
    "energy_ratio_tensor_8bit",
    0.5,
    "x the energy of a 16-bit tensor FLOP",
    "FP8/INT8 tensor rates are 2x the 16-bit rate on the same array with the same operand "
    "bytes per clock; board power per clock is dominated by operand movement (register file, "
    "shared memory, L2), so a full-rate 8-bit array costs about what a 16-bit one does per "
    "clock: half the energy per FLOP. (The multipliers alone are 5-7x cheaper: Horowitz, "
    "'Computing's energy problem', ISSCC 2014: 8-bit int mult+add 0.23 pJ vs FP16 1.5 pJ at "
    "45 nm; this is an upper bound of the 8-bit energy)",
)
ENERGY_RATIO_TENSOR_TF32 = _const(
    "energy_ratio_tensor_tf32",
    2.0,
    "x the energy of a 16-bit tensor FLOP",
    "TF32 runs at half the 16-bit rate on the same array (4-byte operands at half the rate: "
    "the same bytes per clock), so about the same power per clock: twice the energy per FLOP",
)
ENERGY_RATIO_FP64 = _const(
    "energy_ratio_fp64",
    10.0,
    "x the energy of a 16-bit tensor FLOP",
    "FP64 FMA arithmetic vs FP16: Horowitz (ISSCC 2014, 45 nm) gives FP16 mult 1.1 + add "
    "0.4 pJ and FP32 3.7 + 0.9 pJ; the multiplier grows as mantissa^1.55 between them "
    "(11 -> 24 bits: 3.4x), so a 53-bit FP64 mult ~12.8 pJ + add ~2 pJ = ~10x an FP16 FMA. "
    "Used for FP64 on matrix units (DMMA / MFMA F64) and vector units",
)
ENERGY_RATIO_VECTOR_FP32 = _const(
    "energy_ratio_vector_fp32",
    8.0,
    "x the energy of a 16-bit tensor FLOP",
    "an FP32 FMA on CUDA cores / SIMD lanes pays instruction fetch, decode and register-file "
    "operand delivery for 2 FLOPs, which tensor instructions amortize over 128-1024 (Dally, "
    "Keckler & Kirk, IEEE Micro 2021: overhead ~20x the op energy for HFMA, 16-22% for "
    "HMMA / IMMA), plus FP32 arithmetic ~3x FP16 (Horowitz 2014); we take 8x [recalled]",
)
VENDOR_EFFICIENCY: dict[str, float] = {"amd": 0.67}
_note(
    "vendor_efficiency",
    "amd 0.67 (nvidia 1.0)",
    "x sustained peak, achieved bandwidth and collective bandwidth",
    "software maturity of the vendor stack (ROCm/hipBLASLt/vLLM-ROCm/RCCL vs CUDA/TensorRT-"
    "LLM/NCCL), one factor per vendor, on every kind of kernel the ML stack runs: its GEMM "
    "and attention rates, the bandwidth its memory-bound kernels reach, and its collectives' "
    "bandwidth (latency divided by it); compute jobs' bandwidth (STREAM-like) is the "
    "hardware's: MLPerf Inference v4.1 closed, Llama-2-70B offline, 8x MI300X "
    "23,514.8 tok/s, within 3-4% of NVIDIA's 8x H100 result of the same round (EE Times / "
    "HPCwire reports of the MLCommons table), although MI300X has 1.32x the FP8 peak and "
    "1.58x the bandwidth; set by CALIBRATION.md rows 9-10 (re-set from 0.78 with the power "
    "model, which holds the 750 W MI300X at 0.85 of its 2,100 MHz on BF16 and at boost on "
    "FP8, where the midpoint rule held 0.74; then to 0.645 when collectives moved to 16-bit "
    "payloads and the H100's TP all-reduces grew; then to 0.67 when it moved from the compute "
    "rates alone to the bandwidth and collectives too)",
)
PCIE_COLLECTIVE_LATENCY_S = _const(
    "pcie_collective_latency_s",
    3e-5,
    "s per collective over PCIe",
    "NCCL small-message all-reduce over PCIe (through the host bridge, no P2P NVLink) is "
    "20-50 us in nccl-tests on 4-8 GPU PCIe servers, vs ~8 us on NVLink",
)
COLLECTIVE_ACTIVATION_BYTES = _const(
    "collective_activation_bytes",
    2.0,
    "B per element of a serving TP all-reduce / pipeline hop",
    "8-bit serving engines run GEMMs in FP8/INT8 but hand their outputs back in the model's "
    "16-bit dtype, and the tensor-parallel all-reduce and the pipeline send/recv move those "
    "16-bit tensors: vLLM's Fp8LinearMethod returns the input dtype (bf16/fp16) and "
    "RowParallelLinear all-reduces that output; TensorRT-LLM's AllReduce plugin runs in the "
    "network's fp16/bf16 dtype (FP8 all-reduce is a separate opt-in fusion) [recalled from "
    "the vLLM / TensorRT-LLM sources]",
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
    "ecc_reserved_fraction",
    "power_utilization",
    "sustained_clock_fraction_unknown",
    "static_power_fraction",
    "dvfs_power_exponent",
    "dram_energy_pj_per_byte",
    "tensor16_energy_pj_per_flop_4n",
    "node_energy_factor",
    "tensor16_flop_per_clock_per_sm",
    "energy_ratio_tensor_8bit",
    "energy_ratio_tensor_tf32",
    "energy_ratio_fp64",
    "energy_ratio_vector_fp32",
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
    "training_interruptions_per_gpu_hour",
    "training_hours_lost_per_interruption",
    "job_startup_fixed_s",
    "job_startup_s_per_gpu",
    "comm_overlap_fraction",
    "backward_elementwise_factor",
    "eager_attention_forward_score_passes",
    "eager_attention_backward_score_passes",
    "eager_attention_dropout_mask_bytes",
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
    "collective_activation_bytes",
)
LLAMACPP_KEYS = ("llamacpp_stream_bytes_per_sm_cycle", "llamacpp_prompt_efficiency",
                 "geforce_fp16_accumulate_speedup")
"""Listed beside :data:`INFERENCE_KEYS` when the workload runs on llama.cpp."""
GEFORCE_KEYS = ("geforce_fp16_accumulate_speedup", "conv_inference_efficiency")
"""Listed beside :data:`TRAINING_KEYS` on GeForce cards (their training kernel factor, and
their training convolutions' share of the inference convolution rate)."""
COMPUTE_KEYS = (
    "efficiency_compute_job",
    "efficiency_fp64_tensor",
    "efficiency_non_tensor",
    "efficiency_memory_bandwidth",
    "serial_fraction_compute_job",
    "halo_depth_cells",
    "reduction_hop_latency_s",
    "job_startup_fixed_s",
    "job_startup_s_per_gpu",
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
