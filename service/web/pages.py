"""Server-rendered HTML for `/` and `/ui`. Plain strings, escaped; no template engine needed.

The comparison page's form is built here from the request schema's choices (the engine's
Literals, which the schema uses too) and the named examples; `static/ui.js` turns it into a
`POST /v1/recommendations` body and draws the answer.
"""

from __future__ import annotations

import json
from functools import cache
from html import escape
from typing import Any, get_args

from service import __version__
from service.engine.recommend_types import Deployment, Objective
from service.engine.types import (
    ComputePrecision,
    Fp64Units,
    Optimizer,
    ServingRuntime,
    TransformerModel,
    WeightPrecision,
    WorkloadKind,
)
from service.presets.catalog import PRESETS
from service.workloads.examples import EXAMPLES, submission_body
from service.workloads.schemas import ShardingChoice

_HEAD = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="icon" href="/static/vendor/favicon.png">
<link rel="stylesheet" href="/static/ui.css">
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header>
<p class="brand"><a href="/">gpu-advisor</a> <span class="version">v{version}</span></p>
<nav aria-label="Site">
<ul>
<li><a href="/ui">Compare GPUs</a></li>
<li><a href="/ui/fleet">Traffic mix</a></li>
<li><a href="/docs">API (Swagger UI)</a></li>
<li><a href="/redoc">API reference (ReDoc)</a></li>
<li><a href="/healthz">Health</a></li>
</ul>
</nav>
</header>
"""


def _page(title: str, body: str, script: str | None = None) -> str:
    tail = f'<script src="{script}"></script>\n' if script else ""
    return (_HEAD.format(title=escape(title), version=escape(__version__)) + body + tail
            + "</body>\n</html>\n")


@cache
def landing_page() -> str:
    items = "".join(
        f'<li><a href="/ui?example={escape(name)}">{escape(ex["summary"])}</a></li>'
        for name, ex in EXAMPLES.items()
    )
    body = f"""<main id="main">
<h1>For this workload, which GPU, how many, from which offer, and why?</h1>
<p>gpu-advisor keeps a GPU catalog with datasheet figures and price quotes, estimates what a
workload needs and how fast it runs, and returns ranked, explained recommendations.</p>
<ul class="cards">
<li><a href="/ui"><strong>Compare GPUs</strong></a>: describe a workload, see the ranked answer,
the cost&ndash;time trade-off, the memory it needs and why GPUs were ruled out.</li>
<li><a href="/ui/fleet"><strong>Traffic mix</strong></a>: a histogram of request sizes served by
the cheapest mix of GPU types, beside the best single type.</li>
<li><a href="/docs"><strong>Swagger UI</strong></a>: every route, with named examples to try.</li>
<li><a href="/redoc"><strong>ReDoc</strong></a>: the API reference, every field described.</li>
<li><a href="/openapi.json"><strong>OpenAPI document</strong></a> (JSON), for generated
clients.</li>
<li><a href="/healthz"><strong>Health</strong></a>, <a href="/readyz">readiness</a> and
<a href="/metrics">metrics</a>.</li>
</ul>
<h2>Start from an example</h2>
<ul>{items}</ul>
</main>
"""
    return _page("gpu-advisor", body)


def _select(path: str, label: str, options: list[tuple[str, str]], *, kind: str = "text",
            help_text: str = "") -> str:
    ident = "f-" + path.replace(".", "-")
    opts = "".join(f'<option value="{escape(v)}">{escape(t)}</option>' for v, t in options)
    hint = f'<small id="{ident}-h">{escape(help_text)}</small>' if help_text else ""
    described = f' aria-describedby="{ident}-h"' if help_text else ""
    return (f'<div class="field"><label for="{ident}">{escape(label)}</label>'
            f'<select id="{ident}" name="{escape(path)}" data-path="{escape(path)}" '
            f'data-type="{kind}"{described}>{opts}</select>{hint}</div>')


def _input(path: str, label: str, *, kind: str = "float", step: str = "any",
           help_text: str = "") -> str:
    ident = "f-" + path.replace(".", "-")
    if kind == "bool":
        return (f'<div class="field check"><input type="checkbox" id="{ident}" '
                f'name="{escape(path)}" data-path="{escape(path)}" data-type="bool">'
                f'<label for="{ident}">{escape(label)}</label></div>')
    typ = "text" if kind in ("list", "text") else "number"
    extra = f' step="{step}" min="0"' if typ == "number" else ""
    hint = f'<small id="{ident}-h">{escape(help_text)}</small>' if help_text else ""
    described = f' aria-describedby="{ident}-h"' if help_text else ""
    return (f'<div class="field"><label for="{ident}">{escape(label)}</label>'
            f'<input type="{typ}" id="{ident}" name="{escape(path)}" data-path="{escape(path)}" '
            f'data-type="{kind}"{extra}{described}>{hint}</div>')


_NONE = [("", "(not set)")]


def _choices(literal: Any, labels: dict[str, str] | None = None, *,
             first: str | None = None) -> list[tuple[str, str]]:
    """(value, text) options for every value of ``literal`` (a Literal type), in its order
    but with ``first`` moved to the top (the option shown before an example is chosen);
    ``labels`` gives the text for people where it is more than the value."""
    values = list(get_args(literal))
    if first is not None:
        values.remove(first)
        values.insert(0, first)
    return [(v, (labels or {}).get(v, v)) for v in values]


def _form() -> str:
    examples = [(name, ex["summary"]) for name, ex in EXAMPLES.items()]
    presets = [("", "(custom architecture below)")] + [
        (p.id, f"{p.name} ({p.family})") for p in PRESETS.values()
    ]
    workload = "".join([
        _select("kind", "Kind", _choices(WorkloadKind, {"compute": "compute (HPC, FP64)"},
                                         first="inference")),
        _select("model.preset", "Model preset", presets),
        _select("precision", "Precision (compute)", _choices(ComputePrecision)),
        _select("weight_precision", "Weight precision", _NONE + _choices(WeightPrecision)),
        _select("objective", "Objective (ranked on)",
                _choices(Objective, {"balanced": "balanced cost and time"}, first="balanced")),
    ])
    custom = "".join([
        _input("model.params", "Parameters [count]"),
        _input("model.layers", "Layers", kind="int", step="1"),
        _input("model.hidden_size", "Hidden size", kind="int", step="1"),
        _input("model.attention_heads", "Attention heads", kind="int", step="1"),
        _input("model.kv_heads", "KV heads", kind="int", step="1"),
        _input("model.vocab_size", "Vocabulary size", kind="int", step="1"),
        _input("model.gflops_per_sample", "Generic network: GFLOP per sample"),
        _input("model.activation_mb_per_sample", "Generic network: activations [MB/sample]"),
    ])
    training = "".join([
        _input("training.batch_size", "Global batch [sequences]", kind="int", step="1"),
        _input("training.seq_len", "Sequence length [tokens]", kind="int", step="1"),
        _input("training.tokens", "Tokens to train on"),
        _input("training.samples", "Samples to train on (non-LLM)"),
        _select("training.optimizer", "Optimizer",
                _choices(Optimizer, {"adamw": "AdamW", "sgd": "SGD", "adafactor": "Adafactor"})),
        _select("training.sharding", "Sharding", _choices(ShardingChoice)),
        _input("training.activation_checkpointing", "Activation checkpointing", kind="bool"),
    ])
    inference = "".join([
        _input("inference.prompt_tokens", "Prompt [tokens]", kind="int", step="1"),
        _input("inference.output_tokens", "Output [tokens]", kind="int", step="1"),
        _input("inference.batch_size", "Batch [requests]", kind="int", step="1"),
        _input("inference.max_ttft_ms", "Max time to first token [ms]"),
        _input("inference.max_tpot_ms", "Max time per output token [ms]"),
        _input("inference.max_latency_ms", "Max latency per request [ms]"),
        _input("inference.target_requests_per_s", "Target load [requests/s]"),
        _select("inference.runtime", "Serving runtime",
                _choices(ServingRuntime, {"batching-server": "vLLM / TensorRT-LLM / SGLang",
                                          "llama.cpp": "llama.cpp (one request at a time)"})),
    ])
    compute = "".join([
        _input("compute.total_tflop", "Work [TFLOP]"),
        _input("compute.total_gb_moved", "Memory traffic [GB]"),
        _input("compute.memory_gb", "Working set [GB]"),
        _select("compute.fp64_units", "FP64 units",
                _choices(Fp64Units, {"vector": "vector (stencils, CFD)",
                                     "matrix": "matrix (DGEMM, HPL)"})),
    ])
    constraints = "".join([
        _input("constraints.max_gpus", "Max GPUs", kind="int", step="1"),
        _input("constraints.max_power_w", "Max power per GPU [W]"),
        _input("constraints.budget_usd", "Budget [USD]"),
        _input("constraints.max_usd_per_hour", "Max price [USD/hour]"),
        _input("constraints.deadline_hours", "Deadline [hours]"),
        _select("constraints.deployment", "Deployment",
                _NONE + _choices(Deployment, {"on_prem": "on premises"})),
        _input("constraints.vendors", "Vendors (comma-separated)", kind="list",
               help_text="e.g. NVIDIA, AMD; empty = any"),
    ])
    return f"""<form id="workload-form" novalidate>
<div class="field"><label for="example">Start from an example</label>
<select id="example" name="example">{''.join(
        f'<option value="{escape(v)}">{escape(t)}</option>' for v, t in examples)}</select></div>
<fieldset><legend>Workload</legend>{workload}</fieldset>
<fieldset data-when-preset=""><legend>Custom architecture</legend>{custom}</fieldset>
<fieldset data-kind="training"><legend>Training amounts</legend>{training}</fieldset>
<fieldset data-kind="inference"><legend>Inference amounts and SLOs</legend>{inference}</fieldset>
<fieldset data-kind="compute"><legend>Compute job</legend>{compute}</fieldset>
<fieldset><legend>Constraints</legend>{constraints}</fieldset>
<div class="field"><label for="api-key">API key (only when reads need one)</label>
<input type="password" id="api-key" autocomplete="off"></div>
<button type="submit" id="submit">Recommend</button>
</form>"""


@cache
def comparison_page() -> str:
    examples: dict[str, Any] = {name: submission_body(name) for name in EXAMPLES}
    data = json.dumps(examples).replace("<", "\\u003c")
    body = f"""<main id="main">
<h1>Compare GPUs for a workload</h1>
<div class="layout">
<section aria-labelledby="form-h" class="panel">
<h2 id="form-h">Workload</h2>
{_form()}
<details><summary>Request body (what the API and <code>gpu-advisor recommend</code>
take)</summary><pre id="body-preview"></pre></details>
</section>
<section aria-labelledby="answer-h" class="panel wide">
<h2 id="answer-h">Answer</h2>
<p id="status" role="status" aria-live="polite">Choose an example or fill in the form, then
press Recommend.</p>
<div id="results" hidden>
<h3 id="plot-h">Cost vs time of every feasible candidate</h3>
<div class="plot-controls" role="group" aria-label="Plot scales">
<span class="check"><input type="checkbox" id="plot-log-x"><label for="plot-log-x">Log time
axis</label></span>
<span class="check"><input type="checkbox" id="plot-log-y"><label for="plot-log-y">Log cost
axis</label></span>
<span class="check"><input type="checkbox" id="plot-clip" checked><label for="plot-clip">Clip far
outliers (drawn as triangles at the edge)</label></span>
</div>
<figure><div id="plot"></div><ul class="legend" id="plot-legend"></ul>
<p id="plot-clipped" class="note"></p>
<figcaption id="plot-caption"></figcaption></figure>
<h3 id="table-h">Ranked GPUs</h3>
<p id="pareto-note" class="note"></p>
<div class="scroll"><table id="ranked" aria-labelledby="table-h" aria-describedby="pareto-note">
<thead><tr>
<th scope="col">#</th><th scope="col">GPU</th><th scope="col">GPUs</th>
<th scope="col">Offer</th><th scope="col" id="cost-h">Cost</th>
<th scope="col" id="time-h">Time / latency</th>
<th scope="col">Bound</th>
<th scope="col" id="pareto2-h"
 title="The plot's staircase: nothing is both cheaper and faster">Pareto: cost, time</th>
<th scope="col" id="pareto3-h"
 title="The API's pareto_optimal: nothing is cheaper, faster and lower-energy at once">Pareto:
cost, time, energy</th>
<th scope="col">Memory</th>
</tr></thead><tbody></tbody></table></div>
<h3 id="memory-h">Memory per GPU</h3>
<div id="memory"></div>
<h3 id="rejected-h">Rejected GPUs</h3>
<div id="rejected"></div>
<div id="warnings"></div>
</div>
</section>
</div>
<section aria-labelledby="compare-h" class="panel">
<h2 id="compare-h">Compare GPUs side by side</h2>
<p>Pick 2 to 4 GPUs: their datasheet figures and the estimate for the workload above.</p>
<fieldset id="gpu-picker"><legend>GPUs</legend><p>Loading the catalog&hellip;</p></fieldset>
<button type="button" id="compare-btn">Compare</button>
<p id="compare-status" role="status" aria-live="polite"></p>
<div class="scroll" id="compare"></div>
</section>
</main>
<script type="application/json" id="examples">{data}</script>
"""
    return _page("gpu-advisor - compare GPUs", body, script="/static/ui.js")


@cache
def fleet_page() -> str:
    """`/ui/fleet`: a traffic editor (presets from GET /v1/traffic-presets, a histogram
    table), then the mixed fleet as one stacked bar per GPU type and the best single type
    beside it (`static/fleet.js`)."""
    models = [(pid, f"{p.name} ({pid})") for pid, p in PRESETS.items()
              if isinstance(p.model, TransformerModel) and not p.model.encoder_only]
    first = "llama-3.1-8b"
    models.sort(key=lambda m: m[0] != first)
    opts = "".join(f'<option value="{escape(v)}">{escape(t)}</option>' for v, t in models)
    precisions = "".join(f'<option value="{escape(v)}">{escape(t)}</option>'
                         for v, t in _choices(ComputePrecision, first="bf16"))
    body = f"""<main id="main">
<h1>Serve a traffic mix with a mixed GPU fleet</h1>
<p class="note">Describe the requests by size (a published preset or your own histogram), the
total rate and the SLOs; the answer is the cheapest set of pools (GPU type, count, offer,
layout) serving every size, with the best single GPU type beside it. See docs/fleet.md.</p>
<div class="layout">
<section aria-labelledby="traffic-h" class="panel">
<h2 id="traffic-h">Traffic</h2>
<form id="fleet-form" novalidate>
<div class="field"><label for="fl-model">Model</label><select id="fl-model">{opts}</select></div>
<div class="field"><label for="fl-precision">Precision</label>
<select id="fl-precision">{precisions}</select></div>
<div class="field"><label for="fl-rate">Total rate [requests/s]</label>
<input type="number" id="fl-rate" min="0" step="any" value="10"></div>
<div class="field"><label for="fl-ttft">Max TTFT [ms]</label>
<input type="number" id="fl-ttft" min="0" step="any" value="1000"></div>
<div class="field"><label for="fl-tpot">Max TPOT [ms]</label>
<input type="number" id="fl-tpot" min="0" step="any" value="50"></div>
<div class="field"><label for="fl-types">Most GPU types (empty = any)</label>
<input type="number" id="fl-types" min="1" step="1"></div>
<div class="field"><label for="fl-preset">Preset</label>
<select id="fl-preset"><option value="">(loading presets&hellip;)</option></select>
<small id="fl-preset-source"></small></div>
<fieldset><legend>Histogram</legend>
<div class="scroll"><table id="fl-buckets" aria-describedby="fl-share-sum">
<thead><tr><th scope="col">Prompt tokens</th><th scope="col">Output tokens</th>
<th scope="col">Share</th><th scope="col">Remove</th></tr>
</thead><tbody></tbody></table></div>
<p id="fl-share-sum" class="note"></p>
<button type="button" id="fl-add">Add a bucket</button>
</fieldset>
<div class="field"><label for="fl-api-key">API key (if reads need one)</label>
<input type="password" id="fl-api-key" autocomplete="off"></div>
<button type="submit" id="fl-submit">Find the fleet</button>
</form>
</section>
<section aria-labelledby="fleet-h" class="panel wide">
<h2 id="fleet-h">Fleet</h2>
<p id="fl-status" role="status" aria-live="polite">Choose a preset or edit the histogram, then
find the fleet.</p>
<div id="fl-results" hidden>
<h3 id="fl-compare-h">Mixed fleet vs the best single GPU type</h3>
<div id="fl-compare"></div>
<h3 id="fl-bars-h">The fleet by GPU type (requests/s served, by bucket)</h3>
<div id="fl-bars"></div>
<ul class="legend" id="fl-legend"></ul>
<h3 id="fl-pools-h">Pools</h3>
<div class="scroll"><table id="fl-pools" aria-labelledby="fl-pools-h"><thead><tr>
<th scope="col">Pool</th><th scope="col">GPU</th><th scope="col">GPUs</th>
<th scope="col">Offer</th><th scope="col">Layout</th><th scope="col">$/h</th>
<th scope="col">Use</th><th scope="col">Buckets (share of each)</th></tr></thead>
<tbody></tbody></table></div>
<h3 id="fl-routing-h">Routing</h3>
<ul id="fl-routing"></ul>
<div id="fl-warnings"></div>
</div>
</section>
</div>
</main>
"""
    return _page("gpu-advisor - traffic mix", body, "/static/fleet.js")
