// gpu-advisor comparison page: form -> POST /v1/recommendations -> table, cost-time scatter
// with its Pareto front, memory bar, rejected list; GPU comparison via /v1/gpus and
// /v1/estimates. Plain DOM and hand-written SVG: no library, nothing fetched from another host.
// Changing the example clears the answer on screen and ranks the new example; an answer that
// arrives for an older request is dropped (`answerSeq`), so the page never shows one workload's
// form with another's answer.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const $ = (sel, root) => (root || document).querySelector(sel);
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  const examples = JSON.parse($("#examples").textContent);
  const form = $("#workload-form");
  let lastResult = null;
  let catalog = [];
  // Bumped by every request and by every clear: an answer whose number is not the latest is
  // dropped when it arrives.
  let answerSeq = 0;
  // The plot's scales: set from each answer's spread (see autoLog), changed by the checkboxes.
  const view = { logX: false, logY: false, clip: true };

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
    // The workload kinds, as the server rendered them from the request schema.
    const kinds = Array.from($("#f-kind").options, (o) => o.value);
    const body = { name: $("#example").value || "ui", objective: $("#f-objective").value };
    $$("[data-path]", form).forEach((el) => {
      const path = el.dataset.path;
      const section = path.split(".")[0];
      if (kinds.includes(section) && section !== kind) return;
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
  // name and unit apart, so a header or an axis reads "Latency per request [ms]", one bracket.
  function timeOf(c) {
    const e = c.estimate;
    if (e.time_to_complete_hours != null) return { v: e.time_to_complete_hours, name: "Time to finish", unit: "h" };
    if (e.latency_ms != null) return { v: e.latency_ms, name: "Latency per request", unit: "ms" };
    return { v: null, name: "Time", unit: "" };
  }
  function timeTitle(c) {
    const t = timeOf(c);
    return t.unit ? `${t.name} [${t.unit}]` : t.name;
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

  // ---------- the two Pareto fronts ----------
  // The plot's points: candidates with a price and a time (one per GPU type).
  function plotPoints(result) {
    return result.recommendations.map((c) => ({ c, x: timeOf(c).v, y: costOf(c).v }))
      .filter((p) => p.x != null && p.y != null && p.x > 0 && p.y > 0);
  }
  // Points not beaten on both cost and time, sorted by time: the 2-D front drawn as a staircase.
  // The API's pareto_optimal flag is the 3-D front (cost, time and energy): it holds every
  // point of this one and may add points that this one beats on cost and time but that use less
  // energy. A 3-D front has no staircase to draw on a cost-time plot, so the page shows both:
  // the staircase, the 3-D-only points ringed, and a column for each front in the table.
  function paretoFront(points) {
    const sorted = points.slice().sort((a, b) => a.x - b.x || a.y - b.y);
    const front = [];
    let best = Infinity;
    sorted.forEach((p) => { if (p.y < best) { front.push(p); best = p.y; } });
    return front;
  }
  function costTimeFront(result) {
    return new Set(paretoFront(plotPoints(result)).map((p) => p.c));
  }

  function renderParetoNote(result, front2) {
    const note = $("#pareto-note");
    const priced = plotPoints(result).map((p) => p.c);
    const front3 = priced.filter((c) => c.pareto_optimal);
    const only3 = front3.filter((c) => !front2.has(c));
    if (!priced.length) { note.textContent = ""; return; }
    let text = `Two Pareto columns. "Cost, time" is the plot's staircase: no candidate is both cheaper and faster ` +
      `(${front2.size} here). "Cost, time, energy" is the API's pareto_optimal: no candidate is cheaper, faster and ` +
      `lower-energy at once (${front3.length} here). Counting energy can only add candidates, those the staircase ` +
      `beats on cost and time but that use less energy`;
    text += only3.length
      ? `: here ${only3.map((c) => `${c.gpu.name} x ${c.gpu_count}`).join(", ")} (ringed in the plot).`
      : `; here it adds none.`;
    note.textContent = text + ` "-": no price or no time, so on neither.`;
  }

  // ---------- table ----------
  function renderTable(result, front2) {
    const tbody = $("#ranked tbody");
    tbody.replaceChildren();
    const first = result.recommendations.find((c) => costOf(c).v != null) || result.recommendations[0];
    $("#cost-h").textContent = first ? `Cost [${costOf(first).unit}]` : "Cost";
    $("#time-h").textContent = first ? timeTitle(first) : "Time / latency";
    const plotted = new Set(plotPoints(result).map((p) => p.c));
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
        el("td", { class: "pareto2" }, plotted.has(c) ? (front2.has(c) ? "yes" : "no") : "-"),
        el("td", { class: "pareto3" }, plotted.has(c) ? (c.pareto_optimal ? "yes" : "no") : "-"),
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
  // The default for each answer: log when the values span more than a factor of 20.
  function autoLog(values) {
    const lo = Math.min(...values), hi = Math.max(...values);
    return lo > 0 && hi / lo > 20;
  }
  // One axis: its domain and, with clipping on, the value above which points are "far
  // outliers" (beyond the upper quartile + 3 x the interquartile range, Tukey's far-out
  // fence, taken on the log scale when the axis is log). Clipping happens only when those
  // points would stretch the axis to more than 2.5x the span of the rest, and never hides a
  // point of the front or the top pick (`keep`). Clipped points are drawn at the axis's edge.
  function axisOf(values, log, clip, keep) {
    const t = log ? Math.log10 : (v) => v;
    let limit = Infinity;
    if (clip && values.length >= 5) {
      const s = values.map(t).sort((x, y) => x - y);
      const q = (f) => { const i = (s.length - 1) * f, j = Math.floor(i); return s[j] + (s[Math.min(j + 1, s.length - 1)] - s[j]) * (i - j); };
      const cut = Math.max(q(0.75) + 3 * (q(0.75) - q(0.25)), ...keep.map(t));
      const rest = s.filter((v) => v <= cut);
      const top = s[s.length - 1], low = s[0], restHi = rest[rest.length - 1];
      if (top > cut && top - low > 2.5 * (restHi - low)) limit = log ? Math.pow(10, restHi) : restHi;
    }
    const shown = values.filter((v) => v <= limit);
    let lo = Math.min(...shown), hi = Math.max(...shown);
    if (log) { lo = lo / 1.3; hi = hi * 1.3; }
    else { const pad = (hi - lo) * 0.08 || Math.abs(hi) * 0.1 || 1; lo = Math.max(0, lo - pad); hi = hi + pad; }
    return { lo, hi, log, limit, clipped: values.length - shown.length };
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

  // ---------- label placement ----------
  // Boxes are {x0, y0, x1, y1} in the SVG's user units.
  function overlap(a, b) {
    const w = Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0), h = Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0);
    return w > 0 && h > 0 ? w * h : 0;
  }
  // The staircase as thin boxes, one per segment, so a label can be kept off the line.
  function segmentBoxes(points, pad) {
    const out = [];
    for (let i = 1; i < points.length; i++) {
      const [x0, y0] = points[i - 1], [x1, y1] = points[i];
      out.push({ x0: Math.min(x0, x1) - pad, x1: Math.max(x0, x1) + pad, y0: Math.min(y0, y1) - pad, y1: Math.max(y0, y1) + pad });
    }
    return out;
  }
  // Greedy placement: each label (the top pick's first) tries spots around its point, nearest
  // first, and takes the first that stays inside the plot and clear of every point, the
  // staircase and the labels already placed. A label with no clear spot is left out (its point
  // still names itself on hover and focus), except the top pick's, which takes the spot with
  // the least overlap. A label set away from its point gets a leader line.
  function placeLabels(root, items, obstacles, area) {
    const placed = [];
    items.forEach((it) => {
      const text = svg("text", { x: 0, y: 0, class: "point-label" + (it.top ? " top" : ""), "data-slug": it.slug, "aria-hidden": "true" }, it.text);
      root.append(text);
      let bb;
      try { bb = text.getBBox(); } catch (e) { bb = null; }
      if (!bb || !bb.width) bb = { x: 0, y: -10, width: it.text.length * 6.2, height: 13 };
      const w = bb.width + 2, h = bb.height;
      // Spots at growing distances from the marker's edge, in 16 directions (east first); the
      // label hangs off the spot on the side away from the point.
      const spots = [];
      [3, 8, 15, 24, 36, 52, 72].forEach((d) => {
        for (let k = 0; k < 16; k++) {
          const a = (k % 2 ? -1 : 1) * Math.ceil(k / 2) * Math.PI / 8, cos = Math.cos(a), sin = Math.sin(a);
          const ax = it.x + (it.r + d) * cos, ay = it.y - (it.r + d) * sin;
          spots.push([cos > 0.3 ? ax : cos < -0.3 ? ax - w : ax - w / 2, sin > 0.3 ? ay - h : sin < -0.3 ? ay : ay - h / 2]);
        }
      });
      let best = null, bestCost = Infinity;
      for (const [x0, y0] of spots) {
        const box = { x0, y0, x1: x0 + w, y1: y0 + h };
        if (box.x0 < area.x0 || box.x1 > area.x1 || box.y0 < area.y0 || box.y1 > area.y1) continue;
        let cost = 0;
        obstacles.concat(placed).forEach((o) => { cost += overlap(box, o); });
        if (cost === 0) { best = box; bestCost = 0; break; }
        if (cost < bestCost) { best = box; bestCost = cost; }
      }
      if (!best || (bestCost > 0 && !it.top)) { text.remove(); return; }
      text.setAttribute("x", best.x0 + 1 - bb.x);
      text.setAttribute("y", best.y0 - bb.y);
      placed.push(best);
      const cx = Math.max(best.x0, Math.min(it.x, best.x1)), cy = Math.max(best.y0, Math.min(it.y, best.y1));
      const dist = Math.hypot(cx - it.x, cy - it.y);
      if (dist > it.r + 8) {
        const k = it.r / dist;
        root.insertBefore(svg("line", { x1: it.x + (cx - it.x) * k, y1: it.y + (cy - it.y) * k, x2: cx, y2: cy,
          class: "leader", "aria-hidden": "true" }), root.firstChild.nextSibling);
      }
    });
  }

  function renderPlot(result) {
    const box = $("#plot");
    box.replaceChildren();
    $("#plot-legend").replaceChildren();
    $("#plot-clipped").textContent = "";
    const pts = plotPoints(result);
    if (!result.recommendations.length) { box.append(el("p", {}, "No feasible candidate to plot.")); $("#plot-caption").textContent = ""; return; }
    if (!pts.length) { box.append(el("p", {}, "No candidate has both a price and a time: nothing to plot.")); $("#plot-caption").textContent = ""; return; }
    const W = 720, H = 400, m = { l: 78, r: 24, t: 16, b: 52 };
    const front = paretoFront(pts);
    const onFront = new Set(front);
    const topPick = result.recommendations[0];
    const keep = pts.filter((p) => onFront.has(p) || p.c === topPick);
    const dx = axisOf(pts.map((p) => p.x), view.logX, view.clip, keep.map((p) => p.x));
    const dy = axisOf(pts.map((p) => p.y), view.logY, view.clip, keep.map((p) => p.y));
    const fx = scale(dx.lo, dx.hi, m.l, W - m.r, dx.log), fy = scale(dy.lo, dy.hi, H - m.b, m.t, dy.log);
    // A clipped value sits just inside the plot's far edge.
    const sx = (v) => (v > dx.limit ? W - m.r - 7 : fx(v)), sy = (v) => (v > dy.limit ? m.t + 7 : fy(v));
    const tName = timeTitle(pts[0].c), tUnit = timeOf(pts[0].c).unit, cUnit = costOf(pts[0].c).unit;
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "group", "aria-labelledby": "plot-h", class: "scatter" });
    box.append(root);  // in the document from the start, so labels can be measured
    const axes = svg("g", { class: "axes" });
    ticks(dx).forEach((v) => {
      axes.append(svg("line", { x1: fx(v), x2: fx(v), y1: m.t, y2: H - m.b, class: "grid" }));
      axes.append(svg("text", { x: fx(v), y: H - m.b + 16, "text-anchor": "middle" }, fmt(v, 2)));
    });
    ticks(dy).forEach((v) => {
      axes.append(svg("line", { x1: m.l, x2: W - m.r, y1: fy(v), y2: fy(v), class: "grid" }));
      axes.append(svg("text", { x: m.l - 6, y: fy(v) + 4, "text-anchor": "end" }, fmt(v, 2)));
    });
    axes.append(svg("line", { x1: m.l, x2: W - m.r, y1: H - m.b, y2: H - m.b, class: "axis" }));
    axes.append(svg("line", { x1: m.l, x2: m.l, y1: m.t, y2: H - m.b, class: "axis" }));
    axes.append(svg("text", { x: (m.l + W - m.r) / 2, y: H - 10, "text-anchor": "middle", class: "label x-label" },
      `${tName}${dx.log ? " (log scale)" : ""}`));
    axes.append(svg("text", { x: 14, y: (m.t + H - m.b) / 2, "text-anchor": "middle", class: "label y-label",
      transform: `rotate(-90 14 ${(m.t + H - m.b) / 2})` }, `Cost [${cUnit}]${dy.log ? " (log scale)" : ""}`));
    root.append(axes);

    const corners = [[sx(front[0].x), m.t], [sx(front[0].x), sy(front[0].y)]];
    for (let i = 1; i < front.length; i++) corners.push([sx(front[i].x), sy(front[i - 1].y)], [sx(front[i].x), sy(front[i].y)]);
    corners.push([W - m.r, sy(front[front.length - 1].y)]);
    root.append(svg("path", { d: "M " + corners.map(([x, y]) => `${x} ${y}`).join(" L "), class: "pareto-line", "aria-hidden": "true" }));

    const obstacles = segmentBoxes(corners, 2);
    const clippedNames = [];
    pts.forEach((p) => {
      const c = p.c;
      const cx = sx(p.x), cy = sy(p.y);
      const offX = p.x > dx.limit, offY = p.y > dy.limit;
      const only3 = !onFront.has(p) && c.pareto_optimal;
      const kind = onFront.has(p) ? " (on the cost-time Pareto front)"
        : only3 ? " (on the cost-time-energy Pareto front only)" : "";
      const off = offX || offY ? ` (off the scale: drawn at the ${offY ? "top" : "right"} edge)` : "";
      const label = `${c === topPick ? "#1 pick: " : ""}${c.gpu.name} x ${c.gpu_count}, ${offerOf(c)}: ${fmt(p.y)} ${cUnit}, ${fmt(p.x)} ${tUnit}` + kind + off;
      const cls = ["point"];
      if (onFront.has(p)) cls.push("front");
      if (only3) cls.push("front3d");
      if (c === topPick) cls.push("top");
      if (off) cls.push("clipped");
      const g = svg("g", { class: cls.join(" "), tabindex: "0", role: "img", "aria-label": label, "data-slug": c.gpu.slug });
      g.append(svg("title", {}, label));
      const r = onFront.has(p) ? 6 : 4.5;
      if (off) {
        // a triangle pointing off the scale: up for cost, right for time
        const pts3 = offY ? [[cx, cy - 6], [cx - 6, cy + 5], [cx + 6, cy + 5]] : [[cx + 6, cy], [cx - 5, cy - 6], [cx - 5, cy + 6]];
        g.append(svg("polygon", { points: pts3.map((q) => q.join(",")).join(" "), class: "clip-mark" }));
        clippedNames.push(`${c.gpu.name} x ${c.gpu_count} (${fmt(p.y)} ${cUnit}, ${fmt(p.x)} ${tUnit})`);
      } else {
        g.append(svg("circle", { cx, cy, r }));
      }
      if (c === topPick) g.append(svg("circle", { cx, cy, r: r + 4, class: "top-ring" }));
      g.addEventListener("click", () => selectCandidate(c));
      g.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); selectCandidate(c); } });
      root.append(g);
      const rr = (c === topPick ? r + 4 : r) + 1.5;
      obstacles.push({ x0: cx - rr, x1: cx + rr, y0: cy - rr, y1: cy + rr });
    });
    // Labels: the top pick always, then the cost-time front from the fastest.
    const items = [];
    const item = (p, top) => ({ x: sx(p.x), y: sy(p.y), r: top ? 10 : 6, top, slug: p.c.gpu.slug,
      text: `${top ? "#1 " : ""}${p.c.gpu.slug} x${p.c.gpu_count}` });
    const topPoint = pts.find((p) => p.c === topPick);
    if (topPoint) items.push(item(topPoint, true));
    front.forEach((p) => { if (p !== topPoint) items.push(item(p, false)); });
    placeLabels(root, items, obstacles, { x0: m.l + 2, x1: W - m.r - 2, y0: m.t, y1: H - m.b - 2 });

    const legend = $("#plot-legend");
    [["front", "on the cost-time Pareto front (the dashed staircase)"],
      ...(pts.some((p) => !onFront.has(p) && p.c.pareto_optimal)
        ? [["ring", "on the cost-time-energy front only (the table's last Pareto column)"]] : []),
      ["top", "#1: the top pick for the chosen objective"]].forEach(([k, t]) => {
      const li = el("li");
      li.append(el("span", { class: `swatch mark-${k}`, "aria-hidden": "true" }), document.createTextNode(t));
      legend.append(li);
    });
    if (clippedNames.length) {
      const where = [dy.clipped ? `cost above ${fmt(dy.limit)} ${cUnit}` : "", dx.clipped ? `time above ${fmt(dx.limit)} ${tUnit}` : ""]
        .filter(Boolean).join(" or ");
      $("#plot-clipped").textContent = `${clippedNames.length} far outlier${clippedNames.length > 1 ? "s" : ""} ` +
        `(${where}) drawn as triangles at the plot's edge so the rest stay readable: ${clippedNames.join("; ")}. ` +
        `Untick "Clip far outliers" to plot them in place.`;
    }
    $("#plot-caption").textContent = `${pts.length} feasible priced candidates (one per GPU type, its best count and offer); ` +
      `${front.length} on the cost-time Pareto front (line: nothing below and to its left exists). ` +
      `Hover or focus a point for GPU x count and offer; press Enter to show its memory.`;
  }

  // Each answer starts from the default scales; the checkboxes then redraw the same answer.
  function resetView(result) {
    const pts = plotPoints(result);
    view.logX = pts.length > 0 && autoLog(pts.map((p) => p.x));
    view.logY = pts.length > 0 && autoLog(pts.map((p) => p.y));
    view.clip = true;
    $("#plot-log-x").checked = view.logX;
    $("#plot-log-y").checked = view.logY;
    $("#plot-clip").checked = view.clip;
  }
  function onViewChange() {
    view.logX = $("#plot-log-x").checked;
    view.logY = $("#plot-log-y").checked;
    view.clip = $("#plot-clip").checked;
    if (lastResult) renderPlot(lastResult);
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

  // Takes the answer off the screen (table, plot, memory, rejected, warnings, the side-by-side
  // table, any error), and makes an answer still on its way be dropped when it arrives.
  function clearAnswer(message) {
    answerSeq++;
    lastResult = null;
    $("#results").hidden = true;
    $("#results").classList.remove("stale");
    ["#ranked tbody", "#plot", "#plot-legend", "#memory", "#rejected", "#warnings"].forEach((s) => $(s).replaceChildren());
    ["#plot-caption", "#plot-clipped", "#pareto-note"].forEach((s) => { $(s).textContent = ""; });
    if ($("#compare-table")) {
      $("#compare").replaceChildren();
      $("#compare-status").textContent = "The workload changed: press Compare for the new one.";
    }
    $("#status").textContent = message;
    $("#submit").disabled = false;
  }

  // An edit to the form leaves the answer up but dims it and says it is out of date.
  function markStale(ev) {
    if (!lastResult || ["example", "api-key"].includes(ev.target.id)) return;
    if ($("#results").classList.contains("stale")) return;
    $("#results").classList.add("stale");
    $("#status").textContent = "The form has changed since this answer (dimmed below): press Recommend to update it.";
  }

  async function recommend() {
    const mine = ++answerSeq;
    const body = Object.assign(readForm(), { limit: 100 });
    $("#status").textContent = "Ranking...";
    $("#submit").disabled = true;
    try {
      const result = await call("POST", "/v1/recommendations?view=compact", body);  // the table, plot, memory bar and fixes read the whole answer
      if (mine !== answerSeq) return;  // the form changed meanwhile: a newer answer is coming
      lastResult = result;
      $("#results").hidden = false;
      $("#results").classList.remove("stale");
      const front2 = costTimeFront(result);
      renderTable(result, front2);
      renderParetoNote(result, front2);
      resetView(result);
      renderPlot(result);
      renderMemory(result.recommendations[0]);
      renderRejected(result);
      renderWarnings(result);
      const top = result.recommendations[0];
      $("#status").textContent = top
        ? `${result.recommendations.length} candidates, ${result.rejected.length} rejected; best (${result.objective}): ${top.gpu.name} x ${top.gpu_count}.`
        : `No GPU can run this workload; ${result.rejected.length} rejected.`;
    } catch (err) {
      if (mine !== answerSeq) return;
      lastResult = null;
      $("#results").hidden = true;
      $("#status").textContent = "Error: " + err.message;
    } finally {
      if (mine === answerSeq) $("#submit").disabled = false;
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
    const mine = answerSeq;
    try {
      const workload = workloadOf(readForm());
      const ests = await Promise.all(slugs.map((s) => estimateFor(workload, s)));
      if (mine !== answerSeq) return;  // the example changed meanwhile
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
      if (mine === answerSeq) status.textContent = "Error: " + err.message;
    }
  }

  // ---------- wiring ----------
  const exampleSelect = $("#example");
  exampleSelect.addEventListener("change", () => {
    fillForm(examples[exampleSelect.value]);
    clearAnswer("");
    recommend();
  });
  form.addEventListener("input", (ev) => { syncSections(); markStale(ev); });
  form.addEventListener("change", syncSections);
  form.addEventListener("submit", (ev) => { ev.preventDefault(); recommend(); });
  $("#compare-btn").addEventListener("click", compare);
  ["#plot-log-x", "#plot-log-y", "#plot-clip"].forEach((s) => $(s).addEventListener("change", onViewChange));
  const wanted = new URLSearchParams(location.search).get("example");
  if (wanted && examples[wanted]) exampleSelect.value = wanted;
  fillForm(examples[exampleSelect.value]);
  loadCatalog();
  if (wanted && examples[wanted]) recommend();
})();
