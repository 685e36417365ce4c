//! The live page: one HTML document with its style and script inline, which asks for
//! `/state.json` every second and draws it with text nodes only (a key or an error is
//! never read as markup).

/// The page.
pub(crate) const PAGE: &str = r##"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>pgsurge live</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em;margin:0 0 .3em}
table{border-collapse:collapse;margin:.5em 0 1em}
td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}
.ok{color:#161}.failed{color:#a11}.running{color:#14c}.planned{color:#777}
#plan span{margin-right:1.2em}
svg{border:1px solid #ddd;background:#fafafa}
</style></head><body>
<h1 id="title">pgsurge live</h1>
<div id="note"></div>
<div id="plan"></div>
<h2>Running: <span id="running">-</span></h2>
<div id="doing"></div>
<div id="attempt"></div>
<svg id="chart" width="600" height="120" viewBox="0 0 600 120"><polyline id="line" fill="none" stroke="#14c" stroke-width="1.5" points=""/></svg>
<table id="seconds"><thead><tr><th>second</th><th>tps</th><th>mean ms</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>failed</th></tr></thead><tbody></tbody></table>
<h2>Server waits <small>(sessions)</small></h2>
<table id="waits"><thead><tr><th>wait event</th><th>sessions</th></tr></thead><tbody></tbody></table>
<h2>Server host</h2>
<p id="host_note"></p>
<table id="host"><thead><tr><th>metric</th><th>value</th></tr></thead><tbody></tbody></table>
<h2>Verdicts <small id="sides"></small></h2>
<table id="verdicts"><thead><tr><th>cell</th><th>tps</th><th>change</th><th>95% interval</th><th>p99</th></tr></thead><tbody></tbody></table>
<h2>Tests</h2>
<table id="tests"><thead><tr><th>test</th><th>status</th><th>tps</th><th>mean ms</th><th>p99 ms</th><th>error</th></tr></thead><tbody></tbody></table>
<h2>Targets</h2><ul id="targets"></ul>
<h2>Outages</h2><ul id="outages"></ul>
<h2>Said</h2><ul id="lines"></ul>
<script>
"use strict";
const $ = id => document.getElementById(id);
const f = (v, d) => v === null || v === undefined ? "" : Number(v).toFixed(d);
function row(cells, cls) {
  const tr = document.createElement("tr");
  if (cls) tr.className = cls;
  for (const c of cells) { const td = document.createElement("td"); td.textContent = c; tr.appendChild(td); }
  return tr;
}
function list(id, items) {
  const ul = $(id); ul.replaceChildren();
  for (const t of items) { const li = document.createElement("li"); li.textContent = t; ul.appendChild(li); }
}
function span(text) { const s = document.createElement("span"); s.textContent = text; return s; }
function mins(s) { return s >= 60 ? Math.floor(s / 60) + "m" + String(s % 60).padStart(2, "0") + "s" : s + "s"; }
function draw(s) {
  $("title").textContent = "pgsurge live: " + (s.set_name || "…") + (s.set_id ? " (set " + s.set_id + ")" : "");
  $("note").textContent = s.note || "";
  const plan = $("plan"); plan.replaceChildren(
    span("done " + s.done + " / " + s.tests.length), span("running " + (s.running ? 1 : 0)),
    span("left " + s.left), span("time left " + mins(s.time_left_s)),
    span(s.already_stored ? "stored earlier " + s.already_stored : ""),
    span(s.ended ? "ended: " + s.ended : ""));
  $("running").textContent = s.running || "-";
  $("doing").textContent = s.doing || "";
  $("attempt").textContent = s.attempt > 1 ? "attempt " + s.attempt + ", run again after an outage: " +
    "the seconds below are this attempt's, from 0" + s.cut_short.map(c => "; attempt " + c.attempt +
    " was cut short after " + f(c.elapsed_s, 1) + " s (" + c.seconds + " seconds, not shown)").join("") : "";
  const body = $("seconds").tBodies[0]; body.replaceChildren();
  for (const x of s.seconds.slice(-10).reverse()) {
    const p = r => { const q = x.percentiles.find(y => y[0] === r); return q ? f(q[1], 3) : ""; };
    body.appendChild(row([f(x.elapsed_s, 1) + (x.warmup ? " (warm-up)" : ""), f(x.tps, 1), f(x.latency_mean_ms, 3),
      p(50), p(90), p(95), p(99), x.failures]));
  }
  const max = Math.max(1, ...s.seconds.map(x => x.tps));
  $("line").setAttribute("points", s.seconds.map((x, i) =>
    (i * 600 / Math.max(1, s.seconds.length - 1)).toFixed(1) + "," + (115 - x.tps * 110 / max).toFixed(1)).join(" "));
  const pairs = (id, items, d) => { const b = $(id).tBodies[0]; b.replaceChildren();
    for (const [n, v] of items) b.appendChild(row([n, f(v, d)])); };
  pairs("waits", s.waits, 2);
  pairs("host", s.host, 1);
  $("host_note").textContent = s.host_note || "";
  const pct = v => v === null || v === undefined ? "" : (v >= 0 ? "+" : "") + (v * 100).toFixed(1) + "%";
  const verdicts = $("verdicts").tBodies[0]; verdicts.replaceChildren();
  $("sides").textContent = s.verdicts.length ? "(" + s.verdicts[0].b + " against " + s.verdicts[0].a + ")" : "";
  for (const v of s.verdicts) verdicts.appendChild(row([v.cell, v.tps, pct(v.tps_change),
    v.tps_interval ? pct(v.tps_interval[0]) + " … " + pct(v.tps_interval[1]) : "", v.p99 || ""], v.tps));
  const tests = $("tests").tBodies[0]; tests.replaceChildren();
  for (const t of s.tests) tests.appendChild(row([t.key, t.status, f(t.tps, 1), f(t.latency_mean_ms, 3),
    f(t.latency_p99_ms, 3), t.error || ""], t.status));
  list("targets", s.targets.map(t => t[0] + ": " + t[1]));
  list("outages", s.outages);
  list("lines", s.lines);
}
async function tick() {
  try { const r = await fetch("/state.json", {cache: "no-store"}); if (r.ok) draw(await r.json()); }
  catch (e) { $("doing").textContent = "the campaign's process does not answer"; }
  setTimeout(tick, 1000);
}
tick();
</script></body></html>
"##;
