// gpu-advisor traffic-mix page: presets from GET /v1/traffic-presets into an editable
// histogram table -> POST /v1/recommendations with inference.traffic -> the fleet as one
// stacked bar per GPU type (requests/s served, one segment per bucket), the mixed fleet's and
// the best single type's $/h side by side, the pools and the routing. Plain DOM and
// hand-written SVG: nothing is fetched from another host.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const $ = (sel, root) => (root || document).querySelector(sel);
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  const SEGMENTS = 6;
  let presets = [];
  let seq = 0;

  function headers() {
    const h = { "Content-Type": "application/json", Accept: "application/json" };
    const key = $("#fl-api-key").value.trim();
    if (key) h.Authorization = "Bearer " + key;
    return h;
  }
  async function call(method, url, body) {
    const resp = await fetch(url, { method, headers: headers(),
                                    body: body ? JSON.stringify(body) : undefined });
    const data = await resp.json().catch(() => null);
    if (!resp.ok) {
      const errs = (data && data.errors) || [];
      const detail = (data && (data.detail || data.title)) || resp.statusText;
      throw new Error(detail + (errs.length ? ": " + errs.map((e) => e.field + " " + e.message).join("; ") : ""));
    }
    return data;
  }
  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => e.setAttribute(k, v));
    if (text != null) e.textContent = text;
    return e;
  }
  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    Object.entries(attrs || {}).forEach(([k, v]) => e.setAttribute(k, String(v)));
    if (text != null) e.textContent = text;
    return e;
  }
  function money(v) { return v == null ? "-" : "$" + Number(v).toFixed(2); }

  // ---------- the histogram table ----------
  function numberCell(value, label, step) {
    const td = el("td");
    const input = el("input", { type: "number", min: "0", step: step, "aria-label": label });
    input.value = value;
    input.addEventListener("input", showShareSum);
    td.appendChild(input);
    return td;
  }
  function addRow(b) {
    const tr = el("tr");
    const i = $$("#fl-buckets tbody tr").length;
    tr.appendChild(numberCell(b.prompt_tokens, "prompt tokens, bucket " + i, "1"));
    tr.appendChild(numberCell(b.output_tokens, "output tokens, bucket " + i, "1"));
    tr.appendChild(numberCell(b.share, "share, bucket " + i, "any"));
    const td = el("td");
    const rm = el("button", { type: "button", class: "mem-btn", "aria-label": "remove bucket " + i }, "x");
    rm.addEventListener("click", () => { tr.remove(); showShareSum(); });
    td.appendChild(rm);
    tr.appendChild(td);
    $("#fl-buckets tbody").appendChild(tr);
  }
  function readRows() {
    return $$("#fl-buckets tbody tr").map((tr) => {
      const v = $$("input", tr).map((i) => Number(i.value));
      return { prompt_tokens: Math.round(v[0]), output_tokens: Math.round(v[1]), share: v[2] };
    });
  }
  function showShareSum() {
    const sum = readRows().reduce((s, b) => s + (isFinite(b.share) ? b.share : 0), 0);
    $("#fl-share-sum").textContent = "Shares sum to " + sum.toFixed(6) +
      (Math.abs(sum - 1) > 1e-6 ? " (they must sum to 1)" : "");
  }
  function loadPreset(id) {
    const p = presets.find((x) => x.id === id);
    $("#fl-buckets tbody").textContent = "";
    if (!p) { $("#fl-preset-source").textContent = "Your own histogram."; showShareSum(); return; }
    p.buckets.forEach(addRow);
    $("#fl-preset-source").textContent = p.notes + " Source: " + p.source;
    showShareSum();
  }
  async function loadPresets() {
    presets = await call("GET", "/v1/traffic-presets");
    const sel = $("#fl-preset");
    sel.textContent = "";
    presets.forEach((p) => sel.appendChild(el("option", { value: p.id }, p.name)));
    sel.appendChild(el("option", { value: "" }, "(custom histogram)"));
    loadPreset(presets.length ? presets[0].id : "");
  }

  // ---------- the request ----------
  function body() {
    const inference = {
      target_requests_per_s: Number($("#fl-rate").value),
      max_ttft_ms: Number($("#fl-ttft").value) || undefined,
      max_tpot_ms: Number($("#fl-tpot").value) || undefined,
      traffic: readRows(),
    };
    const constraints = {};
    if ($("#fl-types").value) constraints.max_gpu_types = Number($("#fl-types").value);
    return { kind: "inference", model: { preset: $("#fl-model").value },
             precision: $("#fl-precision").value, objective: "cost", limit: 3,
             inference, constraints };
  }

  // ---------- drawing ----------
  function bar(root, rows, width, unit) {
    // rows: [{label, total, parts: [{value, seg, title}]}], one horizontal bar each
    const rowH = 30, left = 190, right = 120;
    const s = svg("svg", { class: "membar", viewBox: `0 0 ${width} ${rows.length * rowH + 10}`,
                           role: "img" });
    const max = Math.max(...rows.map((r) => r.total), 1e-9);
    rows.forEach((r, i) => {
      const y = 5 + i * rowH;
      s.appendChild(svg("text", { x: 4, y: y + 18 }, r.label));
      let x = left;
      r.parts.forEach((p) => {
        const w = (width - left - right) * p.value / max;
        const rect = svg("rect", { x, y: y + 4, width: Math.max(w, 0.5), height: rowH - 10,
                                   class: "seg" + p.seg });
        rect.appendChild(svg("title", {}, p.title));
        s.appendChild(rect);
        x += w;
      });
      s.appendChild(svg("text", { x: x + 6, y: y + 18 }, unit(r.total)));
    });
    root.appendChild(s);
    return s;
  }
  function render(fleet) {
    $("#fl-compare").textContent = "";
    $("#fl-bars").textContent = "";
    $("#fl-legend").textContent = "";
    $("#fl-pools tbody").textContent = "";
    $("#fl-routing").textContent = "";
    $("#fl-warnings").textContent = "";
    const single = fleet.best_single_type;
    const cmp = bar($("#fl-compare"), [
      { label: "Mixed fleet (" + fleet.gpu_count + " GPUs)", total: fleet.usd_per_hour || 0,
        parts: fleet.pools.map((p, i) => ({ value: p.usd_per_hour, seg: i % SEGMENTS,
                                            title: p.name + ": " + money(p.usd_per_hour) + "/h" })) },
      { label: "Single type: " + (single.gpu ? single.gpu.slug : "none") + " (" + single.gpu_count + ")",
        total: single.usd_per_hour || 0,
        parts: [{ value: single.usd_per_hour || 0, seg: 5, title: money(single.usd_per_hour) + "/h" }] },
    ], 760, (v) => money(v) + "/h");
    cmp.id = "fl-compare-svg";
    cmp.setAttribute("aria-label", "Mixed fleet " + money(fleet.usd_per_hour) + " per hour, best single type " +
                     money(single.usd_per_hour) + " per hour");
    // one stacked bar per GPU type: requests/s it serves, a segment per bucket
    const byType = new Map();
    fleet.pools.forEach((p) => {
      const t = byType.get(p.gpu.slug) || { gpus: 0, usd: 0, parts: new Map() };
      t.gpus += p.gpu_count; t.usd += p.usd_per_hour;
      p.buckets.forEach((b) => t.parts.set(b.bucket, (t.parts.get(b.bucket) || 0) + b.requests_per_s));
      byType.set(p.gpu.slug, t);
    });
    const buckets = new Map();
    const rows = Array.from(byType.entries()).map(([slug, t]) => ({
      label: slug + " x" + t.gpus,
      total: Array.from(t.parts.values()).reduce((a, b) => a + b, 0),
      parts: Array.from(t.parts.entries()).sort((a, b) => a[0] - b[0]).map(([b, rps]) => {
        buckets.set(b, true);
        return { value: rps, seg: b % SEGMENTS, title: "bucket " + b + ": " + rps.toFixed(2) + " req/s" };
      }),
    }));
    const bars = bar($("#fl-bars"), rows, 760, (v) => v.toFixed(1) + " req/s");
    bars.id = "fl-bars-svg";
    bars.setAttribute("aria-label", "Requests per second each GPU type serves, by bucket");
    const traffic = readRows();
    Array.from(buckets.keys()).sort((a, b) => a - b).forEach((b) => {
      const li = el("li");
      li.appendChild(el("span", { class: "swatch seg" + (b % SEGMENTS) }));
      const t = traffic[b];
      li.appendChild(document.createTextNode("bucket " + b + (t ? " (" + t.prompt_tokens + " in / " + t.output_tokens + " out)" : "")));
      $("#fl-legend").appendChild(li);
    });
    fleet.pools.forEach((p) => {
      const tr = el("tr");
      [p.name, p.gpu.slug, String(p.gpu_count),
       p.offer.provider + " " + p.offer.instance + " (" + p.offer.region + ")",
       "TP" + p.layout.tensor_parallel + " x PP" + p.layout.pipeline_parallel,
       money(p.usd_per_hour), Math.round(p.utilization * 100) + "%",
       p.buckets.map((b) => b.bucket + ": " + Math.round(b.share * 100) + "%").join(", ")]
        .forEach((v, i) => tr.appendChild(el(i === 0 ? "th" : "td", i === 0 ? { scope: "row" } : {}, v)));
      $("#fl-pools tbody").appendChild(tr);
    });
    fleet.routing.forEach((r) => $("#fl-routing").appendChild(el("li", {}, r)));
    fleet.warnings.forEach((w) => $("#fl-warnings").appendChild(el("p", { class: "note" }, w)));
  }

  async function submit(ev) {
    ev.preventDefault();
    const mine = ++seq;
    $("#fl-submit").disabled = true;
    $("#fl-status").textContent = "Finding the fleet...";
    try {
      const answer = await call("POST", "/v1/recommendations?view=compact", body());  // pools, routing, buckets, provisioning
      if (mine !== seq) return;
      const f = answer.fleet;
      if (!f || !f.pools.length) {
        $("#fl-results").hidden = true;
        $("#fl-status").textContent = "No fleet: " + (f ? f.warnings.join("; ") : "no traffic given");
        return;
      }
      render(f);
      $("#fl-results").hidden = false;
      const saving = f.saving_fraction == null ? "" : ", saving " + (f.saving_fraction * 100).toFixed(1) +
        "% (" + money(f.saving_usd_per_hour) + "/h)";
      $("#fl-status").textContent = "Fleet " + money(f.usd_per_hour) + "/h vs best single type " +
        money(f.best_single_type.usd_per_hour) + "/h" + saving + "; " + f.status +
        (f.mip_gap != null ? ", gap " + f.mip_gap : "") + ".";
    } catch (err) {
      if (mine !== seq) return;
      $("#fl-results").hidden = true;
      $("#fl-status").textContent = "Error: " + err.message;
    } finally {
      if (mine === seq) $("#fl-submit").disabled = false;
    }
  }

  $("#fl-preset").addEventListener("change", (ev) => loadPreset(ev.target.value));
  $("#fl-add").addEventListener("click", () => {
    addRow({ prompt_tokens: 512, output_tokens: 128, share: 0 });
    showShareSum();
  });
  $("#fleet-form").addEventListener("submit", submit);
  loadPresets().catch((err) => { $("#fl-status").textContent = "Error: " + err.message; });
})();
