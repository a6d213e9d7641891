"""Parse quote files (SkyPilot catalog CSV, our generic CSV/JSON) and match GPUs: no database.

Row numbers: in a CSV the header is row 1 and the first data row is row 2 (the line a
spreadsheet or editor shows, for files without quoted line breaks); in JSON, the position in
the list counted from 1. Errors name ``row N.Column``.

SkyPilot rules (catalog schema v7; see tests/data/skypilot/README.md for the quirks):

- Columns are found by header name; column order differs between clouds.
- One row per availability zone (AWS): the rows of one (region, instance type) collapse to one
  on-demand quote at the lowest ``Price`` and one spot quote at the lowest ``SpotPrice``.
  Empty prices are skipped, never read as 0; spot is not assumed cheaper than on-demand.
- Rows without ``AcceleratorName`` are CPU-only (ignored) or host machines (see below).
- ``GpuInfo`` is a Python literal (``ast.literal_eval``); ``MemoryInfo.SizeInMiB`` is per GPU.
- GPU matching: an instance type that is itself a catalog alias (``gpu_1x_h100_pcie``) names
  its GPU. Otherwise catalog aliases equal to the accelerator name (or GpuInfo's ``Name``), or
  starting with it followed by ``-``/space/``_`` (``A100`` -> ``A100-PCIE-40GB``), are the
  candidates; those whose memory is within ``MEMORY_TOLERANCE`` of the reported size survive
  (nearest first); an instance type containing ``pcie`` (or RunPod, whose bare names are the
  PCIe cards) prefers PCIe cards, ``nvl`` prefers NVL cards; then an exact alias beats a
  prefix one and a non-PCIe card beats a PCIe one (bare ``H100`` = SXM).
- Separately priced GPUs (GCP: a row with an accelerator and no instance type prices the GPUs
  alone) are added to a host row, a row with an instance type and no accelerator in the same
  region and zone: for accelerators with a dedicated machine family (``HOST_FAMILIES``) the
  host named by that family for the GPU count, otherwise the cheapest host of the default
  family (``DEFAULT_HOST_FAMILY``, GCP ``n1-``) with at least ``HOST_VCPUS_PER_GPU`` vCPUs per
  GPU. The quote's instance type is ``<host>+<count>x<accelerator>``; spot needs both spot
  prices.
"""

from __future__ import annotations

import ast
import codecs
import csv
import io
import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import IO, Any

from pydantic import ValidationError

from service.core.text import MESSAGE as CONTROL_CHARS_MESSAGE
from service.core.text import control_char_errors, nfc
from service.quotes.models import MAX_HOURLY_USD, QuoteCreate

MEMORY_TOLERANCE = 0.12
"""Relative gap allowed between reported and catalog memory: AWS reports 22888 MiB (22.4 GiB)
for 24 GB cards and 45776 MiB for the 48 GB L40S (7% low); A100 40 vs 80 GB stays apart."""
MIB_PER_GB = 1024.0
"""Catalog memory_gb is the marketing size, which is GiB (80 GB A100 = 81920 MiB)."""
HOST_VCPUS_PER_GPU = 4
DEFAULT_HOST_FAMILY: dict[str, str] = {"gcp": "n1-"}
HOST_FAMILIES: dict[tuple[str, str], str] = {
    ("gcp", "a100"): "a2-highgpu-{n}g",
    ("gcp", "a100-80gb"): "a2-ultragpu-{n}g",
    ("gcp", "h100"): "a3-highgpu-{n}g",
    ("gcp", "h100-mega"): "a3-megagpu-{n}g",
    ("gcp", "h200"): "a3-ultragpu-{n}g",
    ("gcp", "b200"): "a4-highgpu-{n}g",
}
"""GCP machine families sold with their GPUs (cloud.google.com/compute/docs/gpus)."""
PCIE_BY_DEFAULT = frozenset({"runpod"})
"""Providers whose bare accelerator names are PCIe cards (RunPod: H100 vs H100-SXM)."""
MAX_ERRORS = 50
MAX_GPUINFO_CHARS = 10_000
MAX_JSON_INT_DIGITS = 4_000
"""Longer JSON integers are read as floats (inf past ~308 digits), so the row's validation names
the field, instead of Python's int-from-string limit (4,300 digits) failing the whole file."""
SKYPILOT_REQUIRED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")
_SEPARATORS = ("-", " ", "_")


class ImportFormatError(ValueError):
    """The file is malformed; ``errors`` lists (field, message), field like ``row 17.Price``."""

    def __init__(self, message: str, errors: list[tuple[str, str]]) -> None:
        super().__init__(message)
        self.errors = errors


@dataclass(frozen=True)
class CatalogGpu:
    slug: str
    memory_gb: float
    form_factor: str
    aliases: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ParsedQuote:
    row: int
    gpu_slug: str
    provider: str
    region: str
    instance_type: str
    gpu_count: int
    pricing: str
    price_usd_per_hour: float | None
    purchase_price_usd: float | None = None
    source: str = "import"
    captured_at: datetime | None = None
    valid_until: datetime | None = None
    observed_at: date | None = None
    """None (SkyPilot rows: the file has no date): the import's observed_at."""

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.provider, self.region, self.instance_type, self.pricing)


@dataclass(frozen=True)
class Skipped:
    row: int
    reason: str


@dataclass(frozen=True)
class Unmatched:
    row: int
    accelerator_name: str
    instance_type: str
    reason: str


@dataclass
class ParseResult:
    rows_read: int = 0
    quotes: list[ParsedQuote] = field(default_factory=list)
    ignored_rows: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    unmatched: list[Unmatched] = field(default_factory=list)


# --- matching ------------------------------------------------------------------------------


class GpuMatcher:
    """Accelerator name (+ memory, instance type) -> catalog slug, memoized per distinct input."""

    def __init__(self, gpus: Iterable[CatalogGpu]) -> None:
        self.gpus = list(gpus)
        self._names: list[tuple[str, CatalogGpu]] = []
        self._by_name: dict[str, CatalogGpu] = {}
        for gpu in self.gpus:
            for name in {gpu.slug, *gpu.aliases}:
                self._names.append((name.lower(), gpu))
                self._by_name.setdefault(name.lower(), gpu)
        self._memo: dict[tuple[Any, ...], tuple[str | None, str]] = {}

    def _candidates(self, names: Iterable[str]) -> dict[str, tuple[CatalogGpu, bool]]:
        found: dict[str, tuple[CatalogGpu, bool]] = {}
        for raw in names:
            name = raw.lower()
            if not name:
                continue
            for alias, gpu in self._names:
                exact = alias == name
                if exact or (alias.startswith(name) and alias[len(name)] in _SEPARATORS):
                    prev = found.get(gpu.slug)
                    found[gpu.slug] = (gpu, exact or (prev is not None and prev[1]))
        return found

    def match(
        self, *, provider: str, accelerator: str, info_name: str = "",
        memory_mib: float | None = None, instance_type: str = "",
    ) -> tuple[str | None, str]:
        """(slug, "") or (None, reason)."""
        inst = instance_type.lower()
        by_instance = self._by_name.get(inst)
        if by_instance is not None:  # the catalog names this very instance type
            return by_instance.slug, ""
        pcie_hint = "pcie" in inst or (
            provider in PCIE_BY_DEFAULT and "sxm" not in accelerator.lower()
        )
        nvl_hint = "nvl" in inst
        memo_key = (accelerator, info_name, memory_mib, pcie_hint, nvl_hint)
        if memo_key not in self._memo:
            self._memo[memo_key] = self._match(accelerator, info_name, memory_mib,
                                               pcie_hint, nvl_hint)
        return self._memo[memo_key]

    def _match(self, accelerator: str, info_name: str, memory_mib: float | None,
               pcie_hint: bool, nvl_hint: bool) -> tuple[str | None, str]:
        names = [accelerator, info_name]
        if pcie_hint or nvl_hint:  # RunPod A100-80GB: the PCIe card is named A100-PCIE-80GB
            names += [re.split(r"[-_ ]", n, maxsplit=1)[0] for n in names]
        found = self._candidates(names)
        if not found:
            return None, f"no catalog GPU named '{accelerator}'"
        ranked: list[tuple[tuple[Any, ...], str]] = []
        memory_gb = memory_mib / MIB_PER_GB if memory_mib else None
        for slug, (gpu, exact) in found.items():
            gap = abs(memory_gb - gpu.memory_gb) / gpu.memory_gb if memory_gb else 0.0
            if gap > MEMORY_TOLERANCE:
                continue
            is_pcie = gpu.form_factor == "pcie"
            is_nvl = any("nvl" in a.lower() for a in gpu.aliases)
            rank = (
                not (pcie_hint and is_pcie),
                nvl_hint and not is_nvl,
                not exact,
                is_pcie and not pcie_hint,
                gap,
                slug,
            )
            ranked.append((rank, slug))
        if not ranked:
            size = f"{memory_gb:.1f} GiB" if memory_gb else "unknown size"
            near = ", ".join(sorted(found))
            return None, f"'{accelerator}' with {size} per GPU matches no catalog memory ({near})"
        return min(ranked)[1], ""


# --- field parsing -------------------------------------------------------------------------


class _Errors:
    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def add(self, row: int, column: str, message: str) -> None:
        self.items.append((f"row {row}.{column}", message))
        if len(self.items) >= MAX_ERRORS:
            self.raise_if_any()

    def raise_if_any(self) -> None:
        if self.items:
            n = len(self.items)
            more = "+" if n >= MAX_ERRORS else ""
            raise ImportFormatError(f"{n}{more} invalid value(s); nothing was imported",
                                    self.items)


def _number(value: str, row: int, column: str, errors: _Errors, *,
            maximum: float = math.inf) -> float | None:
    text = value.strip()
    if not text:
        return None
    try:
        number = float(text)
    except ValueError:
        errors.add(row, column, f"'{text[:40]}' is not a number")
        return None
    if not math.isfinite(number):
        errors.add(row, column, f"'{text[:40]}' is not a finite number")
    elif number < 0:
        errors.add(row, column, f"{text[:40]} is negative")
    elif number > maximum:
        errors.add(row, column, f"{text[:40]} is above {maximum:g}")
    else:
        return number
    return None


_GPUINFO_MEMO: dict[str, tuple[str, float | None]] = {}


def _gpu_info(text: str, row: int, errors: _Errors) -> tuple[str, float | None]:
    """(GpuInfo name, memory per GPU in MiB) from SkyPilot's Python-literal dict."""
    text = text.strip()
    if not text:
        return "", None
    if text in _GPUINFO_MEMO:
        return _GPUINFO_MEMO[text]
    try:
        if len(text) > MAX_GPUINFO_CHARS:
            raise ValueError("too long")
        info = ast.literal_eval(text)
        gpu = info["Gpus"][0]
        name = str(gpu.get("Name") or "")
        size = gpu.get("MemoryInfo", {}).get("SizeInMiB")
        memory = float(size) if isinstance(size, int | float) and size > 0 else None
    except OverflowError:  # a 4,000-digit SizeInMiB: an int too large for a float
        errors.add(row, "GpuInfo", "MemoryInfo.SizeInMiB is out of range")
        return "", None
    except (ValueError, SyntaxError, TypeError, KeyError, IndexError, AttributeError,
            MemoryError, RecursionError):
        errors.add(row, "GpuInfo", "not a SkyPilot GpuInfo literal ({'Gpus': [...]})")
        return "", None
    if memory is not None and not math.isfinite(memory):
        errors.add(row, "GpuInfo", "MemoryInfo.SizeInMiB is out of range")
        return "", None
    if len(_GPUINFO_MEMO) < 10_000:
        _GPUINFO_MEMO[text] = (name, memory)
    return name, memory


def decode(body: bytes) -> str:
    try:
        return body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportFormatError("The file is not UTF-8 text",
                                [("body", f"not UTF-8 at byte {exc.start}")]) from exc


UTF8_CHUNK_BYTES = 1 << 20


def check_utf8(stream: IO[bytes]) -> None:
    """Raise ImportFormatError naming the first byte that is not UTF-8, reading ``stream`` (a
    seekable binary file) a chunk at a time; leaves it at the start."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    stream.seek(0)
    try:
        while chunk := stream.read(UTF8_CHUNK_BYTES):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                raise ImportFormatError("The file is not UTF-8 text", [
                    ("body", f"not UTF-8 at byte {offset + exc.start}")]) from exc
            offset += len(chunk)
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as exc:
            raise ImportFormatError("The file is not UTF-8 text", [
                ("body", f"not UTF-8 at byte {offset + exc.start}")]) from exc
    finally:
        stream.seek(0)


def _lines(source: str | IO[str]) -> IO[str]:
    """Lines of a CSV as the csv module wants them (newline=""): of a string, or of a text
    stream read as the parser goes (a file of any size is never held whole)."""
    return io.StringIO(source, newline="") if isinstance(source, str) else source


_CSV_SEPARATORS = re.compile(r'[",]')
MAX_SEPARATORS_SCANNED = 100_000


def _long_field(raw: str, limit: int) -> int | None:
    """Index of the first field of the raw CSV record ``raw`` spanning more than ``limit``
    characters (quotes included), or None when not found within MAX_SEPARATORS_SCANNED."""
    index, start, quoted = 0, 0, False
    for count, sep in enumerate(_CSV_SEPARATORS.finditer(raw)):
        if count > MAX_SEPARATORS_SCANNED:
            return None
        if sep.group() == '"':
            quoted = not quoted
        elif not quoted:
            if sep.start() - start > limit:
                return index
            index, start = index + 1, sep.end()
    return index if len(raw) - start > limit else None


def _csv_records(text: str | IO[str]) -> Iterator[tuple[int, list[str]]]:
    """(row, values) of each CSV record, the header being row 1. A record the csv module
    refuses (a field over its 131,072-character limit) is an ImportFormatError naming the row
    and, when it can be found, the column."""
    pending: list[str] = []  # the lines of the record being read

    def lines() -> Iterator[str]:
        for line in _lines(text):
            pending.append(line)
            yield line

    reader = csv.reader(lines())
    header: list[str] = []
    n = 0
    while True:
        n += 1
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            limit = csv.field_size_limit()
            index = _long_field("".join(pending), limit)
            if n == 1:
                where = "header"
            elif index is None:
                where = f"row {n}"
            else:
                name = header[index] if index < len(header) else f"column {index + 1}"
                where = f"row {n}.{name}"
            message = (f"a field is longer than {limit:,} characters"
                       if "field limit" in str(exc) else f"not valid CSV: {exc}")
            raise ImportFormatError("The CSV cannot be read", [(where, message)]) from exc
        pending.clear()
        if n == 1:
            header = [h.strip() for h in values]
        yield n, values


def _csv_rows(text: str | IO[str]) -> tuple[list[str], Iterator[tuple[int, dict[str, str]]]]:
    records = _csv_records(text)
    first = next(records, None)
    header = [nfc(h.strip()) for h in first[1]] if first else []
    if not header or not any(header):
        raise ImportFormatError("The file is empty", [("body", "no header row")])
    seen: dict[str, int] = {}
    duplicates: list[tuple[str, str]] = []
    for index, name in enumerate(header, start=1):
        if name and name in seen:  # one value would silently win over the other
            duplicates.append((f"header.{name}", f"column '{name}' appears more than once "
                                                 f"(columns {seen[name]} and {index})"))
        seen.setdefault(name, index)
    if duplicates:
        raise ImportFormatError("The CSV header repeats a column", duplicates)

    def rows() -> Iterator[tuple[int, dict[str, str]]]:
        width = len(header)
        for n, values in records:
            if not values or not any(v.strip() for v in values):
                continue
            if len(values) < width:
                values = values + [""] * (width - len(values))
            yield n, dict(zip(header, values, strict=False))

    return header, rows()


# --- SkyPilot ------------------------------------------------------------------------------


@dataclass
class _Group:
    row: int
    gpu_slug: str
    gpu_count: int
    price: float | None = None
    spot: float | None = None


@dataclass(frozen=True)
class _Host:
    row: int
    instance_type: str
    zone: str
    vcpus: float
    price: float | None
    spot: float | None


@dataclass(frozen=True)
class _Accel:
    row: int
    name: str
    slug: str
    count: int
    zone: str
    region: str
    price: float | None
    spot: float | None


def _lower_min(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def parse_skypilot(text: str | IO[str], *, provider: str, matcher: GpuMatcher) -> ParseResult:
    """A SkyPilot catalog CSV (a string, or a text stream read row by row)."""
    header, rows = _csv_rows(text)
    missing = [c for c in SKYPILOT_REQUIRED if c not in header]
    if missing:
        raise ImportFormatError(
            "Not a SkyPilot catalog CSV",
            [("header", f"missing column {c}") for c in missing],
        )
    provider = provider.lower()
    errors = _Errors()
    result = ParseResult()
    groups: dict[tuple[str, str], _Group] = {}
    hosts: dict[str, list[_Host]] = {}
    accels: list[_Accel] = []
    for n, rec in rows:
        result.rows_read += 1
        bad = control_char_errors(rec)
        if bad:
            for column in bad:
                errors.add(n, column, CONTROL_CHARS_MESSAGE)
            continue
        price = _number(rec.get("Price", ""), n, "Price", errors, maximum=MAX_HOURLY_USD)
        spot = _number(rec.get("SpotPrice", ""), n, "SpotPrice", errors, maximum=MAX_HOURLY_USD)
        # NFC, as every identifier written through the API (service/core/text.py)
        name = nfc(rec.get("AcceleratorName", "").strip())
        inst = nfc(rec.get("InstanceType", "").strip())
        region = nfc(rec.get("Region", "").strip())
        zone = nfc(rec.get("AvailabilityZone", "").strip())
        if not name:
            if inst and region:
                vcpus = _number(rec.get("vCPUs", ""), n, "vCPUs", errors) or 0.0
                hosts.setdefault(region, []).append(_Host(n, inst, zone, vcpus, price, spot))
            result.ignored_rows += 1
            continue
        count_f = _number(rec.get("AcceleratorCount", ""), n, "AcceleratorCount", errors,
                          maximum=1024)
        info_name, memory = _gpu_info(rec.get("GpuInfo", ""), n, errors)
        if not region:
            errors.add(n, "Region", "required on accelerator rows")
            continue
        if count_f is None:
            if rec.get("AcceleratorCount", "").strip() == "":
                errors.add(n, "AcceleratorCount", "required when AcceleratorName is set")
            continue
        if count_f < 1 or count_f != int(count_f):
            result.skipped.append(Skipped(n, f"AcceleratorCount {count_f:g} is not a whole GPU"))
            continue
        count = int(count_f)
        if price is None and spot is None:
            result.skipped.append(Skipped(n, "no price (Price and SpotPrice empty)"))
            continue
        slug, reason = matcher.match(provider=provider, accelerator=name, info_name=info_name,
                                     memory_mib=memory, instance_type=inst)
        if slug is None:
            if not rec.get("GpuInfo", "").strip():
                reason = f"'{name}' is not a GPU (no GpuInfo) and not in the catalog"
            result.unmatched.append(Unmatched(n, name, inst, reason))
            continue
        if not inst:
            accels.append(_Accel(n, name, slug, count, zone, region, price, spot))
            continue
        group = groups.get((region, inst))
        if group is None:
            groups[(region, inst)] = _Group(n, slug, count, price, spot)
        elif (group.gpu_slug, group.gpu_count) != (slug, count):
            result.skipped.append(Skipped(
                n, f"{inst} in {region} is {group.gpu_count}x {group.gpu_slug} on row "
                   f"{group.row}, not {count}x {slug}"))
        else:
            group.price = _lower_min(group.price, price)
            group.spot = _lower_min(group.spot, spot)
    errors.raise_if_any()
    for acc in accels:
        host = _pick_host(provider, acc, hosts.get(acc.region, []))
        if host is None:
            result.unmatched.append(Unmatched(
                acc.row, acc.name, "", f"no host machine row for {acc.count}x {acc.name} "
                                       f"in {acc.region} {acc.zone}".rstrip()))
            continue
        inst = f"{host.instance_type}+{acc.count}x{acc.name}"
        price = acc.price + host.price if acc.price is not None and host.price is not None \
            else None
        spot = acc.spot + host.spot if acc.spot is not None and host.spot is not None else None
        if price is None and spot is None:
            result.skipped.append(Skipped(acc.row, f"no price for host row {host.row}"))
            continue
        group = groups.get((acc.region, inst))
        if group is None:
            groups[(acc.region, inst)] = _Group(acc.row, acc.slug, acc.count, price, spot)
        else:
            group.price = _lower_min(group.price, price)
            group.spot = _lower_min(group.spot, spot)
    for (region, inst), g in groups.items():
        for pricing, value in (("on_demand", g.price), ("spot", g.spot)):
            if value is not None:
                result.quotes.append(ParsedQuote(
                    row=g.row, gpu_slug=g.gpu_slug, provider=provider, region=region,
                    instance_type=inst, gpu_count=g.gpu_count, pricing=pricing,
                    price_usd_per_hour=round(value, 6)))
    return result


def _pick_host(provider: str, acc: _Accel, hosts: list[_Host]) -> _Host | None:
    """The host row for separately priced GPUs (rule in the module docstring)."""
    same_zone = [h for h in hosts if h.zone == acc.zone] if acc.zone else hosts
    family = HOST_FAMILIES.get((provider, acc.name.lower()))
    if family is not None:
        wanted = family.format(n=acc.count)
        named = [h for h in same_zone if h.instance_type == wanted]
        return min(named, key=_host_order, default=None)
    prefix = DEFAULT_HOST_FAMILY.get(provider, "")
    fits = [h for h in same_zone if h.instance_type.startswith(prefix)
            and h.vcpus >= HOST_VCPUS_PER_GPU * acc.count and h.price is not None]
    return min(fits, key=_host_order, default=None)


def _host_order(h: _Host) -> tuple[float, float, str]:
    return (h.price if h.price is not None else math.inf, h.vcpus, h.instance_type)


# --- generic -------------------------------------------------------------------------------

def parse_generic(
    text: str | IO[str], *, is_json: bool, provider: str | None, captured_at: datetime, source: str,
    known_slugs: set[str], observed_at: date | None = None,
) -> ParseResult:
    """Our own quote fields: a CSV with service/data/quotes.csv's header (read row by row from
    a text stream) or a JSON list of QuoteCreate objects (read whole). A row without
    captured_at / source gets the import's; one without observed_at gets the import's
    ``observed_at`` when given, else its captured_at's date."""
    records: Iterable[tuple[int, dict[str, Any]]]
    if is_json:
        records = _json_records(io.StringIO(text) if isinstance(text, str) else text)
    else:
        _, rows = _csv_rows(text)
        records = ((n, {k: v.strip() for k, v in rec.items() if k and v.strip() != ""})
                   for n, rec in rows)
    errors = _Errors()
    result = ParseResult()
    seen: dict[tuple[str, str, str, str], int] = {}
    wanted = provider.lower() if provider else None
    for n, rec in records:
        result.rows_read += 1
        defaults: dict[str, Any] = {"captured_at": captured_at, "source": source}
        if observed_at is not None:
            defaults["observed_at"] = observed_at
        rec = {**defaults, **rec}
        if wanted and "provider" not in rec:
            rec["provider"] = wanted
        try:
            q = QuoteCreate.model_validate(rec)
        except ValidationError as exc:
            for err in exc.errors():
                loc = ".".join(str(p) for p in err["loc"]) or "row"
                errors.add(n, loc, str(err["msg"]))
            continue
        if wanted and q.provider != wanted:
            errors.add(n, "provider", f"'{q.provider}' differs from provider={wanted}")
            continue
        parsed = ParsedQuote(
            row=n, gpu_slug=q.gpu_slug, provider=q.provider, region=q.region,
            instance_type=q.instance_type, gpu_count=q.gpu_count, pricing=q.pricing,
            price_usd_per_hour=q.price_usd_per_hour, purchase_price_usd=q.purchase_price_usd,
            source=q.source, captured_at=q.captured_at, valid_until=q.valid_until,
            observed_at=q.observed_at)
        if parsed.key in seen:
            errors.add(n, "instance_type", f"duplicate of row {seen[parsed.key]} (same provider, "
                                           "region, instance_type and pricing)")
            continue
        seen[parsed.key] = n
        if q.gpu_slug not in known_slugs:
            result.unmatched.append(Unmatched(n, q.gpu_slug, q.instance_type,
                                              f"no catalog GPU with slug '{q.gpu_slug}'"))
            continue
        result.quotes.append(parsed)
    errors.raise_if_any()
    return result


JSON_CHUNK_CHARS = 1 << 16
_WHITESPACE = " \t\n\r"


def _json_records(stream: IO[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row, object) of a JSON list of objects, decoded one item at a time from ``stream``
    (the list is never held whole: a 60 MB file is ~180,000 dicts). Errors as json.loads
    would give them: "Invalid JSON" naming the decoder's message, "must be a list", and
    "row N: must be an object"."""
    decoder = json.JSONDecoder(parse_int=_json_int)
    buf, pos, eof = "", 0, False

    def more() -> bool:
        nonlocal buf, pos, eof
        if eof:
            return False
        chunk = stream.read(max(JSON_CHUNK_CHARS, len(buf) - pos))  # doubles for long items
        eof = not chunk
        buf, pos = buf[pos:] + chunk, 0
        return not eof

    def next_char() -> str:
        nonlocal pos
        while True:
            while pos < len(buf) and buf[pos] in _WHITESPACE:
                pos += 1
            if pos < len(buf):
                return buf[pos]
            if not more():
                return ""

    def invalid(message: str) -> ImportFormatError:
        return ImportFormatError("Invalid JSON", [("body", message)])

    first = next_char()
    if first != "[":
        # not a list (or not JSON): read it whole for json.loads's own error or a 422 "list"
        rest = buf[pos:] + stream.read()
        try:
            json.loads(rest, parse_int=_json_int)
        except json.JSONDecodeError as exc:
            raise invalid(exc.msg) from exc
        except RecursionError as exc:
            raise invalid("nested too deeply") from exc
        raise ImportFormatError("Expected a JSON list of quotes", [("body", "must be a list")])
    pos += 1
    row = 0
    if next_char() == "]":
        pos += 1
    else:
        while True:
            while True:
                try:
                    item, end = decoder.raw_decode(buf, pos)
                    break
                except json.JSONDecodeError as exc:
                    if not more():  # the item ends past the buffer, or is invalid
                        raise invalid(exc.msg) from exc
                except RecursionError as exc:
                    raise invalid("nested too deeply") from exc
            pos = end
            row += 1
            if not isinstance(item, dict):
                raise ImportFormatError("Expected a JSON list of quotes",
                                        [(f"row {row}", "must be an object")])
            yield row, item
            sep = next_char()
            pos += 1
            if sep == "]":
                break
            if sep != ",":
                raise invalid("Expecting ',' delimiter" if sep else "Expecting value")
            if next_char() in ("]", ""):
                raise invalid("Expecting value")
    if next_char():
        raise invalid("Extra data")


def _json_int(text: str) -> int | float:
    """A JSON integer; past MAX_JSON_INT_DIGITS a float (inf), which validation rejects."""
    return int(text) if len(text) <= MAX_JSON_INT_DIGITS else float(text)


_JSON_START = re.compile(r"^\s*[\[{]")


def looks_like_json(text: str | bytes, content_type: str | None) -> bool:
    """By the content type, else by the first non-blank character (``text``: the file's start)."""
    if content_type and "json" in content_type.lower():
        return True
    if isinstance(text, bytes):
        text = text[:64].decode("utf-8-sig", errors="ignore")
    return bool(_JSON_START.match(text[:64]))
