"""service.quotes.importers: SkyPilot / generic parsing and GPU matching, no database."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from service.app.seeding import seed_gpus
from service.quotes.importers import (
    CatalogGpu,
    GpuMatcher,
    ImportFormatError,
    parse_generic,
    parse_skypilot,
)

DATA = Path(__file__).resolve().parent.parent / "data" / "skypilot"
AWS_HEADER = ("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,"
              "SpotPrice,Region,AvailabilityZone")
NOW = datetime(2026, 11, 30, tzinfo=UTC)


def info(name: str, mib: int, count: int = 1) -> str:
    return (f"\"{{'Gpus': [{{'Name': '{name}', 'Manufacturer': 'NVIDIA', 'Count': {count}, "
            f"'MemoryInfo': {{'SizeInMiB': {mib}}}}}], 'TotalGpuMemoryInMiB': {mib * count}}}\"")


@pytest.fixture(scope="module")
def matcher() -> GpuMatcher:
    return GpuMatcher(CatalogGpu(g.slug, g.memory_gb, g.form_factor, tuple(g.aliases))
                      for g in seed_gpus())


@pytest.mark.parametrize(("provider", "name", "info_name", "mib", "inst", "slug"), [
    ("aws", "A100", "A100", 40960, "p4d.24xlarge", "nvidia-a100-sxm4-40gb"),
    ("aws", "A100-80GB", "A100", 81920, "p4de.24xlarge", "nvidia-a100-sxm4-80gb"),
    ("cudo", "A100", "A100", 81920, "epyc-genoa-a100-pcie_1x", "nvidia-a100-pcie-80gb"),
    ("lambda", "H100", "H100", 81920, "gpu_8x_h100_sxm5", "nvidia-h100-sxm5-80gb"),
    ("lambda", "H100", "H100", 81920, "gpu_1x_h100_pcie", "nvidia-h100-pcie-80gb"),
    ("cudo", "H100", "H100", 96256, "epyc-genoa-h100-nvl-pcie_1x", "nvidia-h100-nvl-94gb"),
    ("runpod", "H100", "H100", 81920, "1x_H100_SECURE", "nvidia-h100-pcie-80gb"),
    ("runpod", "A100-80GB", "A100-80GB", 81920, "1x_A100-80GB", "nvidia-a100-pcie-80gb"),
    ("lambda", "RTX6000", "RTX6000", 24576, "gpu_1x_rtx6000", "nvidia-quadro-rtx-6000"),
    ("aws", "L4", "L4", 22888, "g6.xlarge", "nvidia-l4"),
    ("aws", "A10G", "A10G", 22888, "g5.xlarge", "nvidia-a10g"),
    ("aws", "L40S", "L40S", 45776, "g6e.xlarge", "nvidia-l40s"),
    ("aws", "H200", "H200", 144384, "p5e.48xlarge", "nvidia-h200-sxm-141gb"),
    ("aws", "V100-32GB", "V100", 32768, "p3dn.24xlarge", "nvidia-v100-sxm2"),
    ("aws", "V100", "V100", 16384, "p3.2xlarge", "nvidia-v100-sxm2-16gb"),
    ("lambda", "GH200", "GH200", 98304, "gpu_1x_gh200", "nvidia-gh200-96gb"),
    ("gcp", "B200", "B200", 184320, "a4-highgpu-8g", "nvidia-b200-hgx"),
])
def test_matching(matcher: GpuMatcher, provider: str, name: str, info_name: str, mib: int,
                  inst: str, slug: str) -> None:
    assert matcher.match(provider=provider, accelerator=name, info_name=info_name,
                         memory_mib=mib, instance_type=inst) == (slug, "")


@pytest.mark.parametrize(("name", "mib"), [
    ("T4g", 16384), ("Inferentia", None), ("Radeon Pro V520", 8192), ("Gaudi HL-205", 32768),
    ("A100", 20480),  # a size no A100 in the catalog has
])
def test_unmatched(matcher: GpuMatcher, name: str, mib: int | None) -> None:
    slug, reason = matcher.match(provider="aws", accelerator=name, memory_mib=mib)
    assert slug is None and reason


def test_aws_reference_file(matcher: GpuMatcher) -> None:
    r = parse_skypilot((DATA / "aws_vms_gpu.csv").read_text(), provider="AWS", matcher=matcher)
    assert r.rows_read == 537 and not r.skipped
    assert Counter(q.pricing for q in r.quotes) == {"on_demand": 82, "spot": 83}
    assert Counter(u.accelerator_name for u in r.unmatched) == {
        "T4g": 42, "Inferentia": 36, "Radeon Pro V520": 35, "Inferentia2": 32,
        "Virtex UltraScale (VU9P)": 24, "Virtex UltraScale+ (VU47P)": 20, "Trainium": 11,
        "Gaudi HL-205": 2, "Qualcomm AI100": 1,
    }
    by_key = {(q.region, q.instance_type, q.pricing): q for q in r.quotes}
    # Quirk 1: the lowest spot price over the region's AZ rows.
    assert by_key[("us-east-1", "g4dn.12xlarge", "spot")].price_usd_per_hour == 1.2684
    # Quirk 2: p4de duplicates (A100 / A100-80GB GpuInfo names) are one 80 GB SXM4 quote.
    p4de = by_key[("us-east-1", "p4de.24xlarge", "on_demand")]
    assert (p4de.gpu_slug, p4de.gpu_count) == ("nvidia-a100-sxm4-80gb", 8)
    # Quirk 3: p5e in us-west-2 has an empty Price in one AZ: not read as 0.
    assert by_key[("us-west-2", "p5e.48xlarge", "spot")].price_usd_per_hour > 0
    assert all(q.price_usd_per_hour and q.price_usd_per_hour > 0 for q in r.quotes)
    assert {q.provider for q in r.quotes} == {"aws"}


def test_lambda_reference_file(matcher: GpuMatcher) -> None:
    r = parse_skypilot((DATA / "lambda_vms.csv").read_bytes().decode(), provider="lambda",
                       matcher=matcher)
    assert (r.rows_read, len(r.quotes), r.ignored_rows, r.unmatched) == (323, 306, 17, [])
    assert {q.pricing for q in r.quotes} == {"on_demand"}  # SpotPrice always empty
    slugs = {q.instance_type: q.gpu_slug for q in r.quotes}
    assert slugs["gpu_1x_h100_pcie"] == "nvidia-h100-pcie-80gb"
    assert slugs["gpu_8x_h100_sxm5"] == "nvidia-h100-sxm5-80gb"
    assert slugs["gpu_1x_rtx6000"] == "nvidia-quadro-rtx-6000"
    assert slugs["gpu_8x_a100_80gb_sxm4"] == "nvidia-a100-sxm4-80gb"
    assert all(not q.instance_type.startswith("cpu") for q in r.quotes)


def test_columns_by_name_crlf_and_spot_not_cheaper(matcher: GpuMatcher) -> None:
    text = ("Region,Price,SpotPrice,InstanceType,AcceleratorCount,AcceleratorName,GpuInfo\r\n"
            f"r1,13.2,13.200000,x.big,1.0,T4,{info('T4', 16384)}\r\n"
            f"r1,12.0,,x.big,1.0,T4,{info('T4', 16384)}\r\n"
            "r1,0.1,,cpu.small,,,\r\n")
    r = parse_skypilot(text, provider="aws", matcher=matcher)
    prices = {q.pricing: q.price_usd_per_hour for q in r.quotes}
    assert prices == {"on_demand": 12.0, "spot": 13.2}
    assert r.ignored_rows == 1 and all(q.row == 2 for q in r.quotes)


def test_row_without_any_price_is_skipped(matcher: GpuMatcher) -> None:
    text = f"{AWS_HEADER}\nx.big,T4,1.0,4.0,16.0,{info('T4', 16384)},,,r1,az1\n"
    r = parse_skypilot(text, provider="aws", matcher=matcher)
    assert r.quotes == [] and [s.row for s in r.skipped] == [2]


@pytest.mark.parametrize(("line", "field"), [
    ("x.big,T4,1.0,4.0,16.0,{i},abc,,r1,az1", "row 3.Price"),
    ("x.big,T4,1.0,4.0,16.0,{i},1.0,-2,r1,az1", "row 3.SpotPrice"),
    ("x.big,T4,-1.0,4.0,16.0,{i},1.0,,r1,az1", "row 3.AcceleratorCount"),
    ("x.big,T4,1.0,4.0,16.0,{{'Gpus': oops}},1.0,,r1,az1", "row 3.GpuInfo"),
    ("x.big,T4,1.0,4.0,16.0,{i},nan,,r1,az1", "row 3.Price"),
])
def test_bad_rows_name_row_and_column(matcher: GpuMatcher, line: str, field: str) -> None:
    good = f"x.small,T4,1.0,4.0,16.0,{info('T4', 16384)},1.0,,r1,az1"
    text = f"{AWS_HEADER}\n{good}\n{line.format(i=info('T4', 16384))}\n"
    with pytest.raises(ImportFormatError, match="invalid value") as exc:
        parse_skypilot(text, provider="aws", matcher=matcher)
    assert field in [f for f, _ in exc.value.errors]


def test_missing_columns_rejected(matcher: GpuMatcher) -> None:
    with pytest.raises(ImportFormatError, match="Not a SkyPilot catalog CSV") as exc:
        parse_skypilot("InstanceType,Price\nx,1\n", provider="aws", matcher=matcher)
    assert ("header", "missing column Region") in exc.value.errors


def test_gcp_gpus_priced_apart_are_added_to_their_host(matcher: GpuMatcher) -> None:
    text = "\n".join([
        AWS_HEADER,
        "n1-standard-1,,,1.0,3.75,,0.05,0.01,us-central1,us-central1-a",
        "n1-standard-4,,,4.0,15.0,,0.19,0.04,us-central1,us-central1-a",
        "n1-standard-8,,,8.0,30.0,,0.38,0.08,us-central1,us-central1-a",
        "n1-standard-4,,,4.0,15.0,,0.20,0.05,us-central1,us-central1-b",
        "a2-highgpu-1g,,,12.0,85.0,,0.75,0.22,us-central1,us-central1-a",
        f",T4,1.0,,,{info('T4', 16384)},0.35,0.07,us-central1,us-central1-a",
        f",T4,1.0,,,{info('T4', 16384)},0.35,0.06,us-central1,us-central1-b",
        f",T4,2.0,,,{info('T4', 16384, 2)},0.70,0.14,us-central1,us-central1-a",
        f",A100,1.0,,,{info('A100', 40960)},2.93,0.88,us-central1,us-central1-a",
        f",T4,1.0,,,{info('T4', 16384)},0.35,0.07,europe-west9,europe-west9-a",
    ]) + "\n"
    r = parse_skypilot(text, provider="gcp", matcher=matcher)
    got = {(q.instance_type, q.pricing): (q.gpu_slug, q.gpu_count, q.price_usd_per_hour)
           for q in r.quotes}
    assert got[("n1-standard-4+1xT4", "on_demand")] == ("nvidia-t4", 1, 0.54)
    assert got[("n1-standard-4+1xT4", "spot")] == ("nvidia-t4", 1, 0.11)  # min over zones
    assert got[("n1-standard-8+2xT4", "on_demand")] == ("nvidia-t4", 2, 1.08)
    assert got[("a2-highgpu-1g+1xA100", "on_demand")] == ("nvidia-a100-sxm4-40gb", 1, 3.68)
    assert r.ignored_rows == 5
    assert [(u.row, u.accelerator_name) for u in r.unmatched] == [(11, "T4")]  # no host there


def test_generic_csv_and_json() -> None:
    known = {"nvidia-t4"}
    header = ("gpu_slug,provider,region,instance_type,gpu_count,pricing,price_usd_per_hour,"
              "purchase_price_usd,source,captured_at,valid_until")
    text = (f"{header}\nnvidia-t4,Acme,r1,t.1,1,on_demand,0.5,,,,\n"
            "nvidia-zz,acme,r1,t.2,1,on_demand,0.5,,s,2026-01-01,\n")
    r = parse_generic(text, is_json=False, provider="acme", captured_at=NOW, source="src",
                      known_slugs=known)
    assert [(q.provider, q.source, q.captured_at) for q in r.quotes] == [("acme", "src", NOW)]
    assert [(u.row, u.accelerator_name) for u in r.unmatched] == [(3, "nvidia-zz")]
    body = ('[{"gpu_slug": "nvidia-t4", "provider": "acme", "instance_type": "t", '
            '"pricing": "spot", "price_usd_per_hour": "x"}]')
    with pytest.raises(ImportFormatError, match="invalid value") as exc:
        parse_generic(body, is_json=True, provider=None, captured_at=NOW, source="s",
                      known_slugs=known)
    assert exc.value.errors[0][0] == "row 1.price_usd_per_hour"


def test_generic_duplicate_key_rejected() -> None:
    row = {"gpu_slug": "nvidia-t4", "provider": "a", "instance_type": "t", "pricing": "spot",
           "price_usd_per_hour": 1}
    import json

    with pytest.raises(ImportFormatError, match="invalid value") as exc:
        parse_generic(json.dumps([row, row]), is_json=True, provider=None, captured_at=NOW,
                      source="s", known_slugs={"nvidia-t4"})
    assert exc.value.errors[0][0] == "row 2.instance_type"


@pytest.mark.parametrize("text", [
    "[]", " [ ] ", '[{"a": 1}]', '[{"a": 1}, {"b": [1, 2, {"c": "x,]}"}]}]',
    '\n[\n {"a": "' + "y" * 300 + '"} ,\n {"n": 12345678901234567890}\n]\n',
    '[{"a": 1},]', '[{"a": 1}', '[{"a": 1}} ]', '[{"a": 1}] x', "[1]", '[{"a": 1}, 2]',
    '{"a": 1}', "", "nope", "[{bad}]", '[{"a": 1} {"b": 2}]', "[" * 5000 + "]" * 5000,
])
def test_json_list_is_read_item_by_item_with_json_loads_answers(
        monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    """The streamed JSON reader (tiny chunks here, so items cross chunk boundaries) accepts
    what json.loads accepts as a list of objects, item for item, and refuses the rest with a
    422 naming the body or the row."""
    import io
    import json

    from service.quotes import importers

    monkeypatch.setattr(importers, "JSON_CHUNK_CHARS", 7)
    try:
        data = json.loads(text)
        ok = isinstance(data, list) and all(isinstance(d, dict) for d in data)
    except (ValueError, RecursionError):
        ok = False
    if ok:
        assert [item for _, item in importers._json_records(io.StringIO(text))] == data
    else:
        with pytest.raises(ImportFormatError) as err:
            list(importers._json_records(io.StringIO(text)))
        assert err.value.errors[0][0] in ("body", "row 1", "row 2")
