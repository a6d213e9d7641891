// gpu-advisor comparison page: form -> POST /v1/recommendations -> table, cost-time scatter
// with its Pareto front, memory bar, rejected list; GPU comparison via /v1/gpus and
// /v1/estimates. Plain DOM and hand-written SVG: no library, nothing fetched from another host.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const $ = (sel, root) => (root || document).querySelector(sel);
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  const examples = JSON.parse($("#examples").textContent);
  const form = $("#workload-form");
  let lastResult = null;
  let catalog = [];

  // ---------- form <-> request body ----------
  function getPath(obj, path) {
    return path.split(".").reduce((o, k) => (o == null ? undefined : o[k]), obj);
  }
  function setPath(obj, path, value) {
    const keys = path.split(".");
    let o = obj;
    keys.slice(0, -1).forEach((k) => { o = o[k] = o[k] || {}; });
    o[keys[keys.length - 1]] = value;
  }

  function fillForm(body) {
    $$("[data-path]", form).forEach((el) => {
      const v = getPath(body, el.dataset.path);
      if (el.dataset.type === "bool") el.checked = Boolean(v);
      else if (el.tagName === "SELECT") {
        el.value = v == null ? "" : String(v);
        if (el.selectedIndex < 0) el.selectedIndex = 0;
      } else if (el.dataset.type === "list") el.value = Array.isArray(v) ? v.join(", ") : "";
      else el.value = v == null ? "" : String(v);
    });
    syncSections();
  }

  function readForm() {
    const kind = $("#f-kind").value;
    const body = { name: $("#example").value || "ui", objective: $("#f-objective").value };
    $$("[data-path]", form).forEach((el) => {
      const path = el.dataset.path;
      const section = path.split(".")[0];
      if (["training", "inference", "compute"].includes(section) && section !== kind) return;
      if (path === "objective") return;
      let value;
      if (el.dataset.type === "bool") value = el.checked;
      else if (el.value.trim() === "") return;
      else if (el.dataset.type === "int") value = parseInt(el.value, 10);
      else if (el.dataset.type === "float") value = Number(el.value);
      else if (el.dataset.type === "list") value = el.value.split(",").map((s) => s.trim()).filter(Boolean);
      else value = el.value;
      if (section === "model" && kind === "compute") return;
      if (section === "model" && path !== "model.preset" && $("#f-model-preset").value) return;
      setPath(body, path, value);
    });
    if (!body.constraints) body.constraints = {};
    return body;
  }

  function workloadOf(body) {
    const w = Object.assign({}, body);
    ["name", "objective", "constraints", "limit"].forEach((k) => delete w[k]);
    return w;
  }

  function syncSections() {
    const kind = $("#f-kind").value;
    $$("fieldset[data-kind]").forEach((fs) => { fs.hidden = fs.dataset.kind !== kind; });
    const custom = $("fieldset[data-when-preset]");
    custom.hidden = kind === "compute" || $("#f-model-preset").value !== "";
    $("#f-model-preset").closest(".field").hidden = kind === "compute";
    $("#body-preview").textContent = JSON.stringify(readForm(), null, 2);
  }

  // ---------- HTTP ----------
  function headers() {
    const h = { "Content-Type": "application/json", Accept: "application/json" };
    const key = $("#api-key").value.trim();
    if (key) h.Authorization = "Bearer " + key;
    return h;
  }
  async function call(method, url, body) {
    const resp = await fetch(url, { method, headers: headers(), body: body ? JSON.stringify(body) : undefined });
    const data = await resp.json().catch(() => null);
    if (!resp.ok) {
      const errs = (data && data.errors) || [];
      const detail = (data && (data.detail || data.title)) || resp.statusText;
      const err = new Error(detail + (errs.length ? ": " + errs.map((e) => e.field + " " + e.message).join("; ") : ""));
      err.status = resp.status;
      throw err;
    }
    return data;
  }

  // ---------- figures ----------
  function fmt(v, digits) {
    if (v == null || !isFinite(v)) return "-";
    if (Math.abs(v) >= 1000) return Math.round(v).toLocaleString("en-US");
    return Number(v.toPrecision(digits || 3)).toString();
  }
  function costOf(c) {
    const k = c.cost;
    if (k.total_usd != null) return { v: k.total_usd, unit: "USD to finish" };
    if (k.usd_per_million_output_tokens != null) return { v: k.usd_per_million_output_tokens, unit: "USD per million output tokens" };
    if (k.usd_per_1k_requests != null) return { v: k.usd_per_1k_requests, unit: "USD per 1,000 requests" };
    return { v: null, unit: "" };
  }
  function timeOf(c) {
    const e = c.estimate;
    if (e.time_to_complete_hours != null) return { v: e.time_to_complete_hours, unit: "hours to finish", short: "h" };
    if (e.latency_ms != null) return { v: e.latency_ms, unit: "latency per request [ms]", short: "ms" };
    return { v: null, unit: "", short: "" };
  }
  function offerOf(c) {
    const q = c.quote;
    return q ? `${q.provider} ${q.instance_type} (${q.pricing}, ${q.region})` : "no quote";
  }
  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => e.setAttribute(k, v));
    if (text != null) e.textContent = text;
    return e;
  }
  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    Object.entries(attrs || {}).forEach(([k, v]) => e.setAttribute(k, v));
    if (text != null) e.textContent = text;
    return e;
  }

  // ---------- table ----------
  function renderTable(result) {
    const tbody = $("#ranked tbody");
    tbody.replaceChildren();
    const first = result.recommendations.find((c) => costOf(c).v != null) || result.recommendations[0];
    $("#cost-h").textContent = first ? `Cost [${costOf(first).unit}]` : "Cost";
    $("#time-h").textContent = first ? `Time [${timeOf(first).unit}]` : "Time / latency";
    result.recommendations.forEach((c, i) => {
      const tr = el("tr", { "data-slug": c.gpu.slug });
      const cost = costOf(c), time = timeOf(c);
      tr.append(
        el("td", {}, String(c.rank)),
        el("th", { scope: "row" }, c.gpu.name),
        el("td", { title: `${c.replicas} x ${c.gpus_per_replica} GPU(s)` },
          c.replicas > 1 && c.gpus_per_replica > 1
            ? `${c.gpu_count} (${c.replicas} x ${c.gpus_per_replica})` : String(c.gpu_count)),
        el("td", {}, offerOf(c)),
        el("td", { class: "num" }, cost.v == null ? "-" : fmt(cost.v)),
        el("td", { class: "num" }, time.v == null ? "-" : fmt(time.v)),
        el("td", {}, c.estimate.bound || "-"),
        el("td", {}, c.pareto_optimal ? "yes" : "no"),
      );
      const td = el("td");
      const btn = el("button", { type: "button", class: "mem-btn", "aria-pressed": i === 0 ? "true" : "false",
        "aria-label": `Show memory of ${c.gpu.name} x ${c.gpu_count}` }, "Show");
      btn.addEventListener("click", () => {
        $$(".mem-btn").forEach((b) => b.setAttribute("aria-pressed", "false"));
        btn.setAttribute("aria-pressed", "true");
        renderMemory(c);
      });
      td.append(btn);
      tr.append(td);
      tbody.append(tr);
    });
  }

  // ---------- scatter ----------
  function scale(lo, hi, a, b, log) {
    if (log) {
      const l0 = Math.log10(lo), l1 = Math.log10(hi);
      return (v) => a + ((Math.log10(v) - l0) / (l1 - l0 || 1)) * (b - a);
    }
    return (v) => a + ((v - lo) / (hi - lo || 1)) * (b - a);
  }
  function domain(values) {
    let lo = Math.min(...values), hi = Math.max(...values);
    const log = lo > 0 && hi / lo > 20;
    if (log) { lo = lo / 1.3; hi = hi * 1.3; }
    else { const pad = (hi - lo) * 0.08 || Math.abs(hi) * 0.1 || 1; lo = Math.max(0, lo - pad); hi = hi + pad; }
    return { lo, hi, log };
  }
  function ticks(d) {
    const out = [];
    if (d.log) {
      for (let e = Math.floor(Math.log10(d.lo)); e <= Math.ceil(Math.log10(d.hi)); e++) {
        [1, 2, 5].forEach((m) => { const v = m * Math.pow(10, e); if (v >= d.lo && v <= d.hi) out.push(v); });
      }
      return out.length > 8 ? out.filter((v) => Math.abs(Math.log10(v) % 1) < 1e-9) : out;
    }
    const raw = (d.hi - d.lo) / 5, p = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw);
    for (let v = Math.ceil(d.lo / step) * step; v <= d.hi; v += step) out.push(v);
    return out;
  }
  // Points not beaten on both cost and time, sorted by time: the 2-D front drawn as a staircase.
  function paretoFront(points) {
    const sorted = points.slice().sort((a, b) => a.x - b.x || a.y - b.y);
    const front = [];
    let best = Infinity;
    sorted.forEach((p) => { if (p.y < best) { front.push(p); best = p.y; } });
    return front;
  }

  function renderPlot(result) {
    const box = $("#plot");
    box.replaceChildren();
    const pts = result.recommendations.map((c) => ({ c, x: timeOf(c).v, y: costOf(c).v }))
      .filter((p) => p.x != null && p.y != null && p.x > 0 && p.y > 0);
    if (!result.recommendations.length) { box.append(el("p", {}, "No feasible candidate to plot.")); $("#plot-caption").textContent = ""; return; }
    if (!pts.length) { box.append(el("p", {}, "No candidate has both a price and a time: nothing to plot.")); $("#plot-caption").textContent = ""; return; }
    const W = 720, H = 400, m = { l: 78, r: 24, t: 16, b: 52 };
    const dx = domain(pts.map((p) => p.x)), dy = domain(pts.map((p) => p.y));
    const sx = scale(dx.lo, dx.hi, m.l, W - m.r, dx.log), sy = scale(dy.lo, dy.hi, H - m.b, m.t, dy.log);
    const tUnit = timeOf(pts[0].c).unit, cUnit = costOf(pts[0].c).unit;
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "group", "aria-labelledby": "plot-h", class: "scatter" });
    const axes = svg("g", { class: "axes" });
    ticks(dx).forEach((v) => {
      axes.append(svg("line", { x1: sx(v), x2: sx(v), y1: m.t, y2: H - m.b, class: "grid" }));
      axes.append(svg("text", { x: sx(v), y: H - m.b + 16, "text-anchor": "middle" }, fmt(v, 2)));
    });
    ticks(dy).forEach((v) => {
      axes.append(svg("line", { x1: m.l, x2: W - m.r, y1: sy(v), y2: sy(v), class: "grid" }));
      axes.append(svg("text", { x: m.l - 6, y: sy(v) + 4, "text-anchor": "end" }, fmt(v, 2)));
    });
    axes.append(svg("line", { x1: m.l, x2: W - m.r, y1: H - m.b, y2: H - m.b, class: "axis" }));
    axes.append(svg("line", { x1: m.l, x2: m.l, y1: m.t, y2: H - m.b, class: "axis" }));
    axes.append(svg("text", { x: (m.l + W - m.r) / 2, y: H - 10, "text-anchor": "middle", class: "label" },
      `${tUnit}${dx.log ? " (log scale)" : ""}`));
    axes.append(svg("text", { x: 14, y: (m.t + H - m.b) / 2, "text-anchor": "middle", class: "label",
      transform: `rotate(-90 14 ${(m.t + H - m.b) / 2})` }, `${cUnit}${dy.log ? " (log)" : ""}`));
    root.append(axes);

    const front = paretoFront(pts);
    let d = `M ${sx(front[0].x)} ${m.t} L ${sx(front[0].x)} ${sy(front[0].y)}`;
    for (let i = 1; i < front.length; i++) d += ` L ${sx(front[i].x)} ${sy(front[i - 1].y)} L ${sx(front[i].x)} ${sy(front[i].y)}`;
    d += ` L ${W - m.r} ${sy(front[front.length - 1].y)}`;
    root.append(svg("path", { d, class: "pareto-line", "aria-hidden": "true" }));

    const onFront = new Set(front);
    pts.forEach((p) => {
      const c = p.c;
      const label = `${c.gpu.name} x ${c.gpu_count}, ${offerOf(c)}: ${fmt(p.y)} ${cUnit}, ${fmt(p.x)} ${timeOf(c).short}` +
        (onFront.has(p) ? " (on the cost-time Pareto front)" : "");
      const g = svg("g", { class: "point" + (onFront.has(p) ? " front" : ""), tabindex: "0", role: "img", "aria-label": label, "data-slug": c.gpu.slug });
      g.append(svg("title", {}, label));
      g.append(svg("circle", { cx: sx(p.x), cy: sy(p.y), r: onFront.has(p) ? 6 : 4.5 }));
      g.addEventListener("click", () => selectCandidate(c));
      g.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); selectCandidate(c); } });
      root.append(g);
    });
    // Label the front, skipping a label that would overlap one already placed.
    const placed = [];
    front.forEach((p) => {
      const text = `${p.c.gpu.slug} x${p.c.gpu_count}`;
      const w = text.length * 6.2, h = 13;
      let x = sx(p.x) + 8, y = sy(p.y) - 8;
      if (x + w > W - m.r) x = sx(p.x) - 8 - w;
      const box = { x0: x, x1: x + w, y0: y - h, y1: y };
      if (placed.some((b) => box.x0 < b.x1 && b.x0 < box.x1 && box.y0 < b.y1 && b.y0 < box.y1)) return;
      placed.push(box);
      root.append(svg("text", { x, y, class: "point-label", "aria-hidden": "true" }, text));
    });
    box.append(root);
    $("#plot-caption").textContent = `${pts.length} feasible priced candidates (one per GPU type, its best count and offer); ` +
      `${front.length} on the cost-time Pareto front (line: nothing below and to its left exists). ` +
      `Hover or focus a point for GPU x count and offer; press Enter to show its memory.`;
  }

  function selectCandidate(c) {
    $$(".mem-btn").forEach((b) => b.setAttribute("aria-pressed", "false"));
    const row = $(`#ranked tr[data-slug="${CSS.escape(c.gpu.slug)}"] .mem-btn`);
    if (row) row.setAttribute("aria-pressed", "true");
    renderMemory(c);
  }

  // ---------- memory bar ----------
  const PARTS = [["weights", "Weights"], ["gradients", "Gradients"], ["optimizer_states", "Optimizer states"],
    ["activations", "Activations"], ["kv_cache", "KV cache"], ["overhead", "Runtime overhead"]];
  function renderMemory(c) {
    const box = $("#memory");
    box.replaceChildren();
    if (!c) { box.append(el("p", {}, "No candidate selected.")); return; }
    const mem = c.estimate.memory, b = mem.breakdown_gb;
    const W = 720, H = 92, l = 10, r = 10, top = 22, h = 34;
    const max = Math.max(mem.available_gb, mem.per_gpu_gb) * 1.05;
    const sx = (v) => l + (v / max) * (W - l - r);
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "membar",
      "aria-label": `${c.gpu.name}: ${fmt(mem.per_gpu_gb)} GB needed per GPU of ${fmt(mem.available_gb)} GB` });
    root.append(svg("rect", { x: l, y: top, width: sx(mem.available_gb) - l, height: h, class: "capacity" }));
    let x = 0;
    PARTS.forEach(([k, name], i) => {
      const v = b[k] || 0;
      if (v <= 0) return;
      const seg = svg("rect", { x: sx(x), y: top, width: Math.max(sx(x + v) - sx(x), 1), height: h, class: `seg seg${i}` });
      seg.append(svg("title", {}, `${name}: ${fmt(v)} GB`));
      root.append(seg);
      x += v;
    });
    root.append(svg("line", { x1: sx(mem.available_gb), x2: sx(mem.available_gb), y1: top - 8, y2: top + h + 8, class: "limit" }));
    root.append(svg("text", { x: sx(mem.available_gb), y: top - 10, "text-anchor": "end" }, `GPU memory ${fmt(mem.available_gb)} GB`));
    root.append(svg("text", { x: l, y: top + h + 22 }, `needed per GPU: ${fmt(mem.per_gpu_gb)} GB (${c.gpu.name} x ${c.gpu_count})`));
    box.append(root);
    const legend = el("ul", { class: "legend" });
    PARTS.forEach(([k, name], i) => {
      const li = el("li");
      li.append(el("span", { class: `swatch seg${i}`, "aria-hidden": "true" }), document.createTextNode(`${name}: ${fmt(b[k] || 0)} GB`));
      legend.append(li);
    });
    box.append(legend);
  }

  // ---------- rejected ----------
  function renderRejected(result) {
    const box = $("#rejected");
    box.replaceChildren();
    if (!result.rejected.length) { box.append(el("p", { class: "none" }, "No GPU was rejected.")); return; }
    const table = el("table", { id: "rejected-table", "aria-labelledby": "rejected-h" });
    const head = el("tr");
    ["GPU", "Why", "Nearest fix"].forEach((t) => head.append(el("th", { scope: "col" }, t)));
    const thead = el("thead");
    thead.append(head);
    table.append(thead);
    const tb = el("tbody");
    result.rejected.forEach((r) => {
      const tr = el("tr");
      tr.append(el("th", { scope: "row" }, r.gpu.name), el("td", {}, r.reason),
        el("td", {}, [r.fix, ...(r.other_fixes || [])].map((f) => f.detail).join("; ")));
      tb.append(tr);
    });
    table.append(tb);
    const wrap = el("div", { class: "scroll" });
    wrap.append(table);
    box.append(wrap);
  }

  function renderWarnings(result) {
    const box = $("#warnings");
    box.replaceChildren();
    if (!result.warnings.length) return;
    box.append(el("h3", {}, "Warnings"));
    const ul = el("ul");
    result.warnings.forEach((w) => ul.append(el("li", {}, w)));
    box.append(ul);
  }

  async function recommend() {
    const body = Object.assign(readForm(), { limit: 100 });
    $("#status").textContent = "Ranking...";
    $("#submit").disabled = true;
    try {
      const result = await call("POST", "/v1/recommendations", body);
      lastResult = result;
      $("#results").hidden = false;
      renderTable(result);
      renderPlot(result);
      renderMemory(result.recommendations[0]);
      renderRejected(result);
      renderWarnings(result);
      const top = result.recommendations[0];
      $("#status").textContent = top
        ? `${result.recommendations.length} candidates, ${result.rejected.length} rejected; best (${result.objective}): ${top.gpu.name} x ${top.gpu_count}.`
        : `No GPU can run this workload; ${result.rejected.length} rejected.`;
    } catch (err) {
      lastResult = null;
      $("#results").hidden = true;
      $("#status").textContent = "Error: " + err.message;
    } finally {
      $("#submit").disabled = false;
    }
  }

  // ---------- GPU comparison ----------
  const SPEC_ROWS = [["vendor", "Vendor"], ["architecture", "Architecture"], ["form_factor", "Form factor"],
    ["memory_gb", "Memory [GB]"], ["memory_bandwidth_gb_s", "Memory bandwidth [GB/s]"],
    ["fp64_tflops", "FP64 vector [TFLOPS]"], ["fp64_tensor_tflops", "FP64 tensor [TFLOPS]"],
    ["fp32_tflops", "FP32 [TFLOPS]"], ["bf16_tflops", "BF16 dense [TFLOPS]"], ["fp16_tflops", "FP16 dense [TFLOPS]"],
    ["fp8_tflops", "FP8 dense [TFLOPS]"], ["int8_tops", "INT8 dense [TOPS]"], ["tdp_w", "Power [W]"],
    ["interconnect", "Interconnect"], ["interconnect_bandwidth_gb_s", "Interconnect [GB/s]"],
    ["max_gpus_per_node", "GPUs per node"]];
  const EST_ROWS = [["gpu_count", "GPUs estimated", (e) => e.gpu_count],
    ["fits", "Fits", (e) => (e.fits ? "yes" : "no")],
    ["mem", "Memory per GPU [GB]", (e) => `${fmt(e.memory.per_gpu_gb)} of ${fmt(e.memory.available_gb)}`],
    ["bound", "Bound", (e) => e.bound || "-"],
    ["time", "Time to finish [h]", (e) => fmt(e.time_to_complete_hours)],
    ["latency", "Latency [ms]", (e) => fmt(e.latency_ms)],
    ["ttft", "TTFT / TPOT [ms]", (e) => `${fmt(e.ttft_ms)} / ${fmt(e.tpot_ms)}`],
    ["tok", "Tokens/s", (e) => fmt(e.throughput.tokens_per_s)],
    ["rps", "Requests/s", (e) => fmt(e.throughput.requests_per_s)],
    ["power", "Power [W]", (e) => fmt(e.power_w)],
    ["why", "Why not / fixes", (e) => [...e.infeasible_reasons, ...e.fixes.map((f) => f.detail)].join("; ") || "-"]];

  async function loadCatalog() {
    const picker = $("#gpu-picker");
    try {
      const page = await call("GET", "/v1/gpus?limit=500");
      catalog = page.data;
      const legend = el("legend", {}, "GPUs (pick 2 to 4)");
      const grid = el("div", { class: "picker" });
      catalog.forEach((g) => {
        const id = "cmp-" + g.slug;
        const wrap = el("div", { class: "check" });
        const box = el("input", { type: "checkbox", id, value: g.slug, name: "compare" });
        wrap.append(box, el("label", { for: id }, g.name));
        grid.append(wrap);
      });
      picker.replaceChildren(legend, grid);
    } catch (err) {
      picker.replaceChildren(el("legend", {}, "GPUs"), el("p", {}, "Could not load the catalog: " + err.message));
    }
  }

  async function estimateFor(workload, slug) {
    const rec = lastResult && lastResult.recommendations.find((c) => c.gpu.slug === slug);
    let est = await call("POST", "/v1/estimates", { workload, gpu_slug: slug, gpu_count: rec ? rec.estimate.gpu_count : 1 });
    if (!est.fits && !rec && est.min_gpus_to_fit && est.min_gpus_to_fit > 1 && est.min_gpus_to_fit <= 4096) {
      est = await call("POST", "/v1/estimates", { workload, gpu_slug: slug, gpu_count: est.min_gpus_to_fit });
    }
    return est;
  }

  async function compare() {
    const slugs = $$("#gpu-picker input:checked").map((i) => i.value);
    const status = $("#compare-status"), box = $("#compare");
    if (slugs.length < 2 || slugs.length > 4) { status.textContent = `Pick 2 to 4 GPUs (${slugs.length} picked).`; return; }
    status.textContent = "Estimating...";
    try {
      const workload = workloadOf(readForm());
      const ests = await Promise.all(slugs.map((s) => estimateFor(workload, s)));
      const gpus = slugs.map((s) => catalog.find((g) => g.slug === s));
      const table = el("table", { id: "compare-table", "aria-labelledby": "compare-h" });
      const head = el("tr");
      head.append(el("th", { scope: "col" }, "Figure"));
      gpus.forEach((g) => head.append(el("th", { scope: "col" }, g.name)));
      const thead = el("thead");
      thead.append(head);
      table.append(thead);
      const tb = el("tbody");
      const section = (t) => { const tr = el("tr", { class: "section" }); tr.append(el("th", { scope: "rowgroup", colspan: String(gpus.length + 1) }, t)); tb.append(tr); };
      section("Datasheet");
      SPEC_ROWS.forEach(([k, label]) => {
        const tr = el("tr");
        tr.append(el("th", { scope: "row" }, label));
        gpus.forEach((g) => tr.append(el("td", {}, typeof g[k] === "number" ? fmt(g[k], 4) : g[k] == null ? "-" : String(g[k]))));
        tb.append(tr);
      });
      section("Estimate for this workload");
      EST_ROWS.forEach(([k, label, f]) => {
        const tr = el("tr", { "data-row": k });
        tr.append(el("th", { scope: "row" }, label));
        ests.forEach((e) => tr.append(el("td", {}, String(f(e)))));
        tb.append(tr);
      });
      table.append(tb);
      box.replaceChildren(table);
      status.textContent = `Compared ${gpus.length} GPUs.`;
    } catch (err) {
      status.textContent = "Error: " + err.message;
    }
  }

  // ---------- wiring ----------
  const exampleSelect = $("#example");
  exampleSelect.addEventListener("change", () => fillForm(examples[exampleSelect.value]));
  form.addEventListener("input", syncSections);
  form.addEventListener("change", syncSections);
  form.addEventListener("submit", (ev) => { ev.preventDefault(); recommend(); });
  $("#compare-btn").addEventListener("click", compare);
  const wanted = new URLSearchParams(location.search).get("example");
  if (wanted && examples[wanted]) exampleSelect.value = wanted;
  fillForm(examples[exampleSelect.value]);
  loadCatalog();
  if (wanted && examples[wanted]) recommend();
})();
