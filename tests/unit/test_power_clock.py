"""The power-limited clock model (physics/power.py) on catalog GPUs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from service.engine import constants as c
from service.engine.physics import kernels, power
from service.engine.physics.performance import PeakRate, peak_rate
from tests.unit.catalog_data import gpus_by_slug


def _gpu(slug: str):  # type: ignore[no-untyped-def]
    return gpus_by_slug()[slug]


def _rate(slug: str, precision: str) -> PeakRate:
    rate = peak_rate(_gpu(slug), precision)  # type: ignore[arg-type]
    assert rate is not None
    return rate


@pytest.mark.parametrize(("slug", "quoted"), [
    ("nvidia-h100-sxm5-80gb", 1830.0),
    ("nvidia-h100-pcie-80gb", 1619.0),
    ("nvidia-h100-nvl-94gb", 1545.0),
    ("nvidia-b200-hgx", 1856.0),
])
def test_hopper_and_blackwell_tensor_peaks_are_quoted_below_boost(slug: str,
                                                                  quoted: float) -> None:
    for precision in ("bf16", "fp8"):
        assert power.quoted_clock_mhz(_gpu(slug), _rate(slug, precision)) == pytest.approx(
            quoted, abs=1.0)


@pytest.mark.parametrize("slug", ["nvidia-a100-sxm4-80gb", "nvidia-l40s", "amd-mi300x"])
def test_other_architectures_quote_at_boost(slug: str) -> None:
    gpu = _gpu(slug)
    assert power.quoted_clock_mhz(gpu, _rate(slug, "bf16")) == gpu.boost_clock_mhz
    # FP64 and vector figures of Hopper are quoted at boost (67 TFLOPS = 132 x 256 x 1,980)
    h100 = _gpu("nvidia-h100-sxm5-80gb")
    assert power.quoted_clock_mhz(h100, _rate("nvidia-h100-sxm5-80gb", "fp64")) == 1980.0


def test_the_4n_energy_reproduces_its_datasheet_design_point() -> None:
    # a large BF16 GEMM on the H100 SXM holds the 1,830 MHz its peak is quoted at, at 700 W
    gpu = _gpu("nvidia-h100-sxm5-80gb")
    rate = _rate("nvidia-h100-sxm5-80gb", "bf16")
    assert kernels.peak_share(gpu, rate) == pytest.approx(1.0, abs=0.005)
    # a saturated array would hold less; a lighter load (FP8 GEMMs reach a smaller share of
    # a doubled peak at half the energy per FLOP) holds boost: 1.08x the quoted peak
    assert power.sustained_peak_share(gpu, rate, utilization=1.0) < 0.95
    assert kernels.peak_share(gpu, _rate("nvidia-h100-sxm5-80gb", "fp8")) == pytest.approx(
        1980 / 1830, abs=0.005)


def test_low_power_ada_holds_boost_on_8bit_but_not_on_fp32_vector() -> None:
    # the midpoint rule held L4 at 0.69 of boost; 8-bit tensor work fits 72 W at boost
    gpu = _gpu("nvidia-l4")
    assert kernels.peak_share(gpu, _rate("nvidia-l4", "int8")) == 1.0
    fp32 = kernels.peak_share(gpu, PeakRate(gpu.fp32_tflops or 0.0, "fp32", False))
    assert 0.6 < fp32 < 0.85


def test_the_clock_falls_with_the_power_limit_and_stays_in_base_boost() -> None:
    gpu = _gpu("nvidia-h100-pcie-80gb")
    rate = _rate("nvidia-h100-pcie-80gb", "bf16")
    shares = [kernels.peak_share(replace(gpu, tdp_w=w), rate) for w in (150, 250, 350, 700)]
    assert shares == sorted(shares)
    quoted = power.quoted_clock_mhz(gpu, rate)
    assert quoted is not None
    # floor: the base clock (1,125 MHz); cap: boost (1,755 MHz)
    assert shares[0] == pytest.approx(1125.0 / quoted, rel=1e-6)
    assert shares[-1] == pytest.approx(1755.0 / quoted, rel=1e-6)
    assert 0.78 < shares[2] < 0.9  # 350 W: ~1,350 MHz under BF16 GEMMs


def test_fp64_matrix_work_throttles_more_than_16_bit_on_cdna2() -> None:
    gpu = _gpu("amd-mi250x")
    fp64 = kernels.peak_share(gpu, _rate("amd-mi250x", "fp64"))
    assert kernels.peak_share(gpu, _rate("amd-mi250x", "bf16")) == 1.0
    assert 0.75 < fp64 < 0.9


def test_b200_fp64_runs_on_the_vector_path_when_matrix_units_are_no_faster() -> None:
    b200 = _gpu("nvidia-b200-hgx")
    rate = peak_rate(b200, "fp64")
    assert rate is not None and not rate.tensor
    h100 = peak_rate(_gpu("nvidia-h100-sxm5-80gb"), "fp64")
    assert h100 is not None and h100.tensor


def test_unknown_node_or_clocks_fall_back() -> None:
    gpu = replace(_gpu("nvidia-l4"), architecture="Unknown")
    assert kernels.peak_share(gpu, _rate("nvidia-l4", "bf16")) == (
        c.SUSTAINED_CLOCK_FRACTION_UNKNOWN)
    gpu = replace(_gpu("nvidia-l4"), boost_clock_mhz=None)
    assert kernels.sustained_clock_fraction(gpu) == c.SUSTAINED_CLOCK_FRACTION_UNKNOWN


def test_more_bandwidth_costs_no_clock_on_compute_bound_gemms() -> None:
    # a compute-bound GEMM moves its FLOPs / intensity bytes, not the memory's full
    # bandwidth: the H200 (4.8 TB/s) runs the H100's (3.35 TB/s) GEMMs at the same clock
    # within 0.5% (same die, same 700 W), where charging full bandwidth cost it ~1.5%
    h100, h200 = _gpu("nvidia-h100-sxm5-80gb"), _gpu("nvidia-h200-sxm-141gb")
    share100 = kernels.peak_share(h100, _rate("nvidia-h100-sxm5-80gb", "bf16"))
    share200 = kernels.peak_share(h200, _rate("nvidia-h200-sxm-141gb", "bf16"))
    assert share200 == pytest.approx(share100, rel=0.005)
    # the GEMM's traffic is capped at the achieved bandwidth and scales with operand width
    flops = 800e12
    assert power.dram_bytes_s(h200, flops, 2.0) == pytest.approx(
        flops / c.GEMM_DRAM_FLOP_PER_BYTE_16BIT)
    assert power.dram_bytes_s(h200, flops, 1.0) == pytest.approx(
        power.dram_bytes_s(h200, flops, 2.0) / 2)
    assert power.dram_bytes_s(h200, 1e18, 2.0) == pytest.approx(
        h200.memory_bandwidth_gb_s * c.GB * c.EFF_MEMORY_BW)
