"""Convolutional networks timed layer by layer on the operator model of :mod:`kernels`.

A preset with a layer table (:data:`LAYER_TABLES`, named by ``GenericModel.layer_table``) is
timed one layer at a time. Each convolution is an implicit GEMM (cuDNN / TensorRT): forward
M = batch x P x Q output pixels, N = K output channels, K = C x R x S; in training also the
data gradient (M = batch x H x W, N = C, K = K x R x S / stride^2: the same FLOPs) and the
weight gradient (M = K, N = C x R x S, reduced over batch x P x Q). Each GEMM goes through
:class:`kernels.GemmShape` (tile waves over the SMs, split-K) at the device's convolution rate
against the bytes it moves: its input once (the im2col tile lives on chip), its weights and its
output. Batch norm, ReLU and residual adds are memory-bound kernels whose bytes are counted from
the layer's output tensor (PyTorch's eager kernels in training; folded and fused into the
convolution's epilogue by TensorRT in inference). Every kernel pays the fixed per-kernel cost.
In inference a layer whose activations for the batch (input, output and the residual it adds)
fit in the share :data:`constants.L2_RESIDENT_FRACTION` of the GPU's last-level cache moves
them on chip: only its weights cross DRAM (TensorRT reuses its activation buffers, so a
consumed tensor is overwritten in the cache, not written back). The cache's own bandwidth is
not modelled (such a layer is timed at its compute).

Networks without a table (custom generic models, presets not yet tabulated) keep the aggregate
path: the model's forward FLOPs at the convolution rate against conv input/output bytes derived
from its activation size, plus elementwise traffic (:class:`Aggregate`).

An optional host/input ceiling (``input_samples_per_s_per_gpu`` of the training or inference
spec) bounds the samples per second one GPU is fed: a step or forward pass never takes less
than its samples divided by it.

Units: seconds [s], bytes [B], FLOP.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import NamedTuple

from service.engine import constants as c
from service.engine.physics import kernels
from service.engine.types import GenericModel, MemoryFormat

Timing = tuple[float, float, float]
"""(compute_s, memory_s, total_s): sums of the kernels' compute and memory times, and the sum
of their maxima plus memory-bound kernels and fixed costs."""


class Layer(NamedTuple):
    """One layer of a table, for one sample (square feature maps).

    ``kind`` "conv": a convolution (or a fully connected layer: kernel 1, 1 x 1 maps) with
    ``c_in`` -> ``c_out`` channels, a ``kernel`` x ``kernel`` filter, ``size_in`` -> ``size_out``
    pixels per side; ``bn``: followed by batch norm; ``add``: a residual add after the norm;
    ``relu``: a ReLU last; ``grad_input``: training computes the data gradient (False for the
    first layer, whose input is the image). ``kind`` "pool": a pooling layer over ``c_in``
    channels."""

    kind: str
    c_in: int
    c_out: int
    kernel: int
    size_in: int
    size_out: int
    bn: bool = False
    relu: bool = False
    add: bool = False
    grad_input: bool = True


def _conv(c_in: int, c_out: int, kernel: int, size_in: int, size_out: int, *,
          bn: bool = True, relu: bool = True, add: bool = False,
          grad_input: bool = True) -> Layer:
    return Layer("conv", c_in, c_out, kernel, size_in, size_out, bn, relu, add, grad_input)


def _resnet50() -> tuple[Layer, ...]:
    """ResNet-50 v1.5 at 224 x 224, as torchvision defines it (``torchvision/models/
    resnet.py``: ``resnet50`` = ``Bottleneck`` blocks [3, 4, 6, 3]; stem 7x7/2 conv 3 -> 64,
    BN, ReLU, 3x3/2 max pool; each bottleneck 1x1 -> BN -> ReLU, 3x3 (the block's stride:
    v1.5) -> BN -> ReLU, 1x1 (x4 channels) -> BN, ``out += identity``, ReLU; the first block
    of a stage has a 1x1 strided downsample conv + BN on the shortcut; global average pool,
    fc 2048 -> 1000). 4.09 GMAC per image, 25.5M weights."""
    layers = [_conv(3, 64, 7, 224, 112, grad_input=False), Layer("pool", 64, 64, 3, 112, 56)]
    inplanes, size = 64, 56
    for planes, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            s = stride if i == 0 else 1
            out = size // s
            layers += [
                _conv(inplanes, planes, 1, size, size),
                _conv(planes, planes, 3, size, out),
                _conv(planes, 4 * planes, 1, out, out, add=True),
            ]
            if i == 0:
                layers.append(_conv(inplanes, 4 * planes, 1, size, out, relu=False))
            inplanes, size = 4 * planes, out
    layers += [Layer("pool", 2048, 2048, 7, 7, 1),
               _conv(2048, 1000, 1, 1, 1, bn=False, relu=False)]
    return tuple(layers)


LAYER_TABLES: dict[str, tuple[Layer, ...]] = {"resnet-50": _resnet50()}
"""Layer tables by name (``GenericModel.layer_table``)."""


def table_of(model: GenericModel) -> tuple[Layer, ...] | None:
    """The model's layer table, or None (aggregate path)."""
    return LAYER_TABLES.get(model.layer_table) if model.layer_table else None


def forward_flops(layers: tuple[Layer, ...]) -> float:
    """Forward FLOPs of one sample through the table's convolutions [FLOP] (1 MAC = 2)."""
    return sum(
        2.0 * x.size_out**2 * x.c_out * x.c_in * x.kernel**2 for x in layers if x.kind == "conv"
    )


def _gemm_flops(layers: tuple[Layer, ...], *, training: bool, share: Callable[[Layer], float],
                recompute: bool = False) -> float:
    """FLOPs per sample of the table's GEMMs: forward (twice with recomputation), and in
    training the weight gradient and the data gradient (none for the first layer, whose input
    is the image); each layer's FLOPs scaled by ``share`` (Winograd)."""
    total = 0.0
    for x in layers:
        if x.kind != "conv":
            continue
        gemms = 1.0
        if training:
            gemms = (2.0 if recompute else 1.0) + 1.0 + float(x.grad_input)
        total += gemms * 2.0 * x.size_out**2 * x.c_out * x.c_in * x.kernel**2 * share(x)
    return total


def training_floor_flops(model: GenericModel) -> float | None:
    """FLOPs per training sample no GPU runs fewer of (no recomputation): every GEMM of the
    layer table, 3x3 stride-1 convolutions at the Winograd share; None without a table."""
    layers = table_of(model)
    if layers is None:
        return None

    def share(x: Layer) -> float:
        winograd = x.kernel == 3 and x.size_in == x.size_out
        return c.CNN_WINOGRAD_FLOP_FACTOR if winograd else 1.0

    return _gemm_flops(layers, training=True, share=share)


def _grouped(layers: tuple[Layer, ...]) -> tuple[tuple[Layer, int], ...]:
    """Identical layers counted once (ResNet repeats its blocks)."""
    return tuple(Counter(layers).items())


def _gemm(dev: kernels.Device, n: float, k: float, in_b: float, w_b: float,
          out_b: float) -> kernels.GemmShape:
    """A GemmShape whose memory time is exactly (input + weight + output bytes) / bandwidth:
    ``in_b`` and ``out_b`` are bytes per row of M, ``w_b`` the whole weight operand's bytes
    (an implicit GEMM reads its input tensor once, not K times)."""
    return kernels.GemmShape(dev, n, k, in_bytes=in_b / k, weight_bytes=w_b / (k * n),
                             out_bytes=out_b / n)


class _ConvOps:
    """One conv layer's GEMMs on one device, built once: time for any batch."""

    __slots__ = ("layer", "fwd", "dgrad", "out_el", "in_el", "w_el", "act_b", "dgrad_k",
                 "winograd")

    def __init__(self, layer: Layer, dev: kernels.Device, act_b: float, w_b: float,
                 training: bool) -> None:
        self.layer, self.act_b = layer, act_b
        p2, h2 = float(layer.size_out**2), float(layer.size_in**2)
        self.winograd = winograd_factor(layer, dev)
        crs = float(layer.c_in * layer.kernel**2) * self.winograd
        self.out_el = p2 * layer.c_out
        self.in_el = h2 * layer.c_in
        self.w_el = float(layer.c_in * layer.kernel**2 * layer.c_out)
        w_bytes = self.w_el * w_b
        # forward: per output pixel read its share of the input, write K outputs
        self.fwd = _gemm(dev, layer.c_out, crs, self.in_el / p2 * act_b, w_bytes,
                         layer.c_out * act_b)
        self.dgrad: kernels.GemmShape | None = None
        self.dgrad_k = layer.c_out * layer.kernel**2 * p2 / h2 * self.winograd
        if not training:
            return
        if layer.grad_input:
            # per input pixel: read its share of the output gradient, write C gradients
            self.dgrad = _gemm(dev, layer.c_in, self.dgrad_k, self.out_el / h2 * act_b,
                               w_bytes, layer.c_in * act_b)

    def wgrad_time(self, dev: kernels.Device, batch: float) -> kernels.Kernel:
        """Weight gradient: (K x batch*P*Q) @ (batch*P*Q x C*R*S); reads the output gradient
        and the layer input once, writes the weight gradient."""
        layer, b = self.layer, self.act_b
        crs = float(layer.c_in * layer.kernel**2) * self.winograd
        k = batch * layer.size_out**2
        shape = kernels.GemmShape(
            dev, crs, k,
            in_bytes=batch * self.out_el * b / (layer.c_out * k),
            weight_bytes=batch * self.in_el * b / (k * crs),
            out_bytes=self.w_el * b / (layer.c_out * crs),
        )
        return shape.time(float(layer.c_out))


def winograd_factor(layer: Layer, dev: kernels.Device) -> float:
    """Share of a convolution's direct FLOPs it runs: 3x3 stride-1 convolutions on CUDA
    cores (FP32, no tensor cores) use Winograd F(2x2, 3x3) (cuDNN's WINOGRAD /
    WINOGRAD_NONFUSED algorithms, which PyTorch's cudnn.benchmark picks for them), 16
    multiplies per 2x2 output tile instead of 36 (Lavin & Gray 2016, 'Fast Algorithms for
    Convolutional Neural Networks', sec. 4); tensor-core convolutions run as implicit GEMMs."""
    if dev.tensor or layer.kernel != 3 or layer.size_in != layer.size_out:
        return 1.0
    return c.CNN_WINOGRAD_FLOP_FACTOR


def _resident_bytes(layer: Layer, ops: _ConvOps, act_b: float) -> float:
    """Bytes per sample an inference conv layer keeps live: its input, its output and the
    residual it adds."""
    return (ops.in_el + ops.out_el * (2.0 if layer.add else 1.0)) * act_b


def _elementwise_passes(layer: Layer, training: bool, recompute: bool) -> float:
    """Passes over the layer's output tensor by its batch norm, residual add and ReLU in one
    training step (forward, backward, and the forward again with recomputation)."""
    fwd = bwd = 0.0
    if layer.bn:
        fwd += c.CNN_BN_FORWARD_PASSES
        bwd += c.CNN_BN_BACKWARD_PASSES
    if layer.add:
        fwd += c.CNN_ADD_PASSES
        bwd += c.CNN_ADD_PASSES
    if layer.relu:
        fwd += c.CNN_RELU_FORWARD_PASSES
        bwd += c.CNN_RELU_BACKWARD_PASSES
    if not training:
        return 0.0
    return (2.0 if recompute else 1.0) * fwd + bwd


def _kernels(layer: Layer, training: bool, recompute: bool, transpose: bool) -> float:
    """Kernels the layer launches: the GEMMs and one per elementwise op, two layout
    transposes per GEMM in NCHW training (inference: the conv with its fused epilogue, or
    the pool)."""
    if layer.kind == "pool":
        return 2.0 + (1.0 if recompute else 0.0) if training else 1.0
    if not training:
        return 1.0
    ops = float(layer.bn) + float(layer.add) + float(layer.relu)
    gemms_fwd, gemms_bwd = 1.0, 1.0 + float(layer.grad_input)
    if transpose:
        gemms_fwd, gemms_bwd = 3.0 * gemms_fwd, 3.0 * gemms_bwd
    return (2.0 if recompute else 1.0) * (gemms_fwd + ops) + gemms_bwd + ops


class Net:
    """A tabulated network on one device: the time of a training micro-step or of an
    inference forward pass for any batch."""

    def __init__(self, layers: tuple[Layer, ...], dev: kernels.Device, act_b: float,
                 w_b: float, *, training: bool, recompute: bool = False,
                 memory_format: MemoryFormat = "nhwc") -> None:
        rate = dev.conv_flops_s if training else dev.conv_inference_flops_s
        self.dev = replace(dev, matrix_flops_s=rate)
        self.training, self.recompute, self.act_b = training, recompute, act_b
        # NCHW tensors around tensor-core convolutions: each GEMM's activation operands are
        # transposed in and its result back (training only: TensorRT picks its own layouts)
        self.transpose = (c.CNN_LAYOUT_TRANSPOSE_PASSES
                          if training and dev.tensor and memory_format == "nchw" else 0.0)
        self.layers = tuple(
            (layer, count, _ConvOps(layer, self.dev, act_b, w_b, training)
             if layer.kind == "conv" else None)
            for layer, count in _grouped(layers)
        )
        self.kernels_s = dev.kernel_s * sum(
            count * _kernels(layer, training, recompute, self.transpose > 0)
            for layer, count, _ in self.layers)
        # forward FLOPs per sample this device runs (Winograd on CUDA cores): the serving
        # model's lower bounds divide them by the rate
        self.flops = _gemm_flops(layers, training=False,
                                 share=lambda x: winograd_factor(x, dev))
        # activations kept on chip in inference (0 in training: they are saved for backward)
        self.l2_bytes = 0.0 if training else dev.l2_bytes * c.L2_RESIDENT_FRACTION
        # bytes per sample every schedule moves at least: each conv's input and output once,
        # except layers whose activations fit in the cache at batch 1
        self.floor_bytes = sum(
            (ops.in_el + ops.out_el) * act_b * count
            for layer, count, ops in self.layers
            if ops is not None and _resident_bytes(layer, ops, act_b) > self.l2_bytes)
        fwd_passes = 2.0 if training and recompute else 1.0
        self._fwd_passes = fwd_passes
        # memory-bound seconds per sample outside the GEMMs: pools, and per conv its batch
        # norm / ReLU / residual passes and layout transposes (training) or the shortcut read
        # fused into its epilogue (inference)
        self._pool_s = 0.0
        pools: list[tuple[float, float]] = []
        convs: list[tuple[float, _ConvOps, float, float, float]] = []
        for layer, count, ops in self.layers:
            if ops is None:
                nbytes = layer.c_in * (layer.size_in**2 + layer.size_out**2) * act_b
                self._pool_s += count * nbytes * (fwd_passes + 1.0 if training else 1.0)
                pools.append((count * nbytes / dev.bytes_s, nbytes))
                continue
            if training:
                extra = _elementwise_passes(layer, True, recompute) * ops.out_el * act_b
                if self.transpose:
                    # both activation operands of forward, data- and weight-gradient GEMMs
                    gemms = fwd_passes + 1.0 + float(ops.dgrad is not None)
                    extra += self.transpose * gemms * (ops.in_el + ops.out_el) * act_b
            else:
                extra = ops.out_el * act_b if layer.add else 0.0
            convs.append((float(count), ops, float(layer.size_out**2), extra,
                          _resident_bytes(layer, ops, act_b)))
        self._pool_s /= dev.bytes_s
        self._pools = tuple(pools)
        self._convs = tuple(convs)
        self._times: dict[float, Timing] = {}

    def fresh(self) -> Net:
        """This network with an empty batch memo: the tabulated layers are shared (read only;
        the engine's shared cache keeps them per model and device), the timings asked of it
        are the asker's."""
        out = copy.copy(self)
        out._times = {}
        return out

    def time(self, batch: float) -> Timing:
        """(compute_s, memory_s, total_s) of one training micro-step (forward, backward and
        a recomputed forward with checkpointing) or one inference forward of ``batch``
        (memoized per batch: the serving batch search and every GPU count ask again)."""
        found = self._times.get(batch)
        if found is None:
            found = self._times[batch] = self._time(float(batch))
        return found

    def _time(self, b: float) -> Timing:
        dev, training, passes = self.dev, self.training, self._fwd_passes
        bytes_s = dev.bytes_s
        compute = 0.0
        on_chip = self.l2_bytes
        if on_chip:
            memory = total = b * sum(s for s, nbytes in self._pools if b * nbytes > on_chip)
        else:
            memory = total = b * self._pool_s
        for count, ops, pixels, extra, resident in self._convs:
            k0, k1 = ops.fwd.time(b * pixels)
            if b * resident <= on_chip:
                # activations on chip: only the weights cross DRAM
                k1, extra = ops.fwd.weight_s, 0.0
            kt = k0 if k0 > k1 else k1
            if training:
                k0, k1, kt = passes * k0, passes * k1, passes * kt
                if ops.dgrad is not None:
                    d0, d1 = ops.dgrad.time(b * ops.layer.size_in**2)
                    k0, k1, kt = k0 + d0, k1 + d1, kt + (d0 if d0 > d1 else d1)
                w0, w1 = ops.wgrad_time(dev, b)
                k0, k1, kt = k0 + w0, k1 + w1, kt + (w0 if w0 > w1 else w1)
            extra_s = b * extra / bytes_s
            compute += k0 * count
            memory += (k1 + extra_s) * count
            total += (kt + extra_s) * count
        if not training:
            # TensorRT runs the engine's layers back to back in one CUDA graph with several
            # batches in flight, so memory-bound and compute-bound layers overlap: the
            # larger total bounds throughput, as for one fused kernel
            total = max(compute, memory)
        return compute, memory, total + self.kernels_s


class Aggregate:
    """Networks without a layer table: the whole forward pass as one convolution workload
    (the model's FLOPs at the convolution rate against conv input/output bytes from its
    activation size), elementwise traffic per conv output, and a fixed cost per kernel
    (the model's ``layers``, or :data:`constants.GENERIC_DEFAULT_LAYERS`)."""

    def __init__(self, model: GenericModel, dev: kernels.Device, act_b: float, w_b: float,
                 *, training: bool, recompute: bool = False) -> None:
        self.dev, self.training, self.recompute = dev, training, recompute
        conv_out = model.activation_mb_per_sample * 1e6 * act_b / 2.0 / (
            c.CNN_STASHED_TENSORS_PER_CONV)
        self.conv_out = conv_out
        self.flops = model.gflops_per_sample * 1e9
        self.floor_bytes = c.CNN_CONV_PASSES * conv_out
        self.weights = model.params * w_b
        layers = model.layers or c.GENERIC_DEFAULT_LAYERS
        if training:
            passes = c.CNN_TRAIN_FLOPS_FACTOR + (1.0 if recompute else 0.0)
            self.kernels_s = passes * 3.0 * layers * dev.kernel_s
        else:
            self.kernels_s = layers * dev.kernel_s

    def fresh(self) -> Aggregate:
        """Itself (it keeps no memo)."""
        return self

    def time(self, batch: float) -> Timing:
        dev, b = self.dev, float(batch)
        if not self.training:
            conv_c = b * self.flops / dev.conv_inference_flops_s
            conv_m = (b * self.floor_bytes + self.weights) / dev.bytes_s
            ew = b * c.CNN_ELEMENTWISE_PASSES_INFERENCE * self.conv_out / dev.bytes_s
            return conv_c, conv_m + ew, max(conv_c, conv_m) + ew + self.kernels_s
        passes = c.CNN_TRAIN_FLOPS_FACTOR + (1.0 if self.recompute else 0.0)
        conv_c = passes * self.flops * b / dev.conv_flops_s
        conv_m = passes * self.floor_bytes * b / dev.bytes_s
        backward = c.BACKWARD_ELEMENTWISE_FACTOR + (1.0 if self.recompute else 0.0)
        ew = (1.0 + backward) * c.CNN_ELEMENTWISE_PASSES_TRAINING * self.conv_out * b
        ew_s = ew / dev.bytes_s
        return conv_c, conv_m + ew_s, max(conv_c, conv_m) + ew_s + self.kernels_s


def network(model: GenericModel, dev: kernels.Device, act_b: float, w_b: float, *,
            training: bool, recompute: bool = False,
            memory_format: MemoryFormat = "nhwc") -> Net | Aggregate:
    """The per-layer :class:`Net` when the model has a layer table, else :class:`Aggregate`
    (which has no layout term: its traffic is scaled from the activation size alone)."""
    layers = table_of(model)
    if layers is None:
        return Aggregate(model, dev, act_b, w_b, training=training, recompute=recompute)
    return Net(layers, dev, act_b, w_b, training=training, recompute=recompute,
               memory_format=memory_format)


def input_floor_s(samples: float, samples_per_s: float | None) -> float:
    """Least time [s] the host/input pipeline needs to feed ``samples`` to one GPU at its
    stated ceiling (0 when none is stated)."""
    return samples / samples_per_s if samples_per_s else 0.0
