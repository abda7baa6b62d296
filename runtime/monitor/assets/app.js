// The monitor's page: renders each snapshot of the live feed (server-sent events).
// Hand-written, no framework: it must work without internet.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const LABEL_W = 150, ROW_H = 26, AXIS_H = 22, BAR_PAD = 4;
let snap = null;          // the latest snapshot
let selected = null;      // the id of the clicked bar
let view = { follow: true, span: 30000, end: 0 }; // the time window (ms on the monitor's clock)

const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));

function dur(ms) {
  if (ms == null) return "";
  if (ms < 1000) return ms + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(1) + " s";
  const m = Math.floor(ms / 60000);
  return m + " min " + Math.round((ms % 60000) / 1000) + " s";
}

function cell(text, cls) {
  const td = document.createElement("td");
  if (cls) td.className = cls;
  td.textContent = text;
  return td;
}

function renderWorkers(s) {
  const body = $("workers").tBodies[0];
  body.replaceChildren();
  if (s.workers.length === 0) {
    const tr = document.createElement("tr");
    const td = cell("no workers yet", "note");
    td.colSpan = 8;
    tr.append(td);
    body.append(tr);
  }
  for (const w of s.workers) {
    const tr = document.createElement("tr");
    tr.dataset.worker = w.name;
    let current = "—";
    if (w.running) current = (w.running.job != null ? "job " + w.running.job + ": " : "") + w.running.transition;
    else if (w.in_flight > 0) current = w.in_flight + " queued";
    const load = document.createElement("td");
    const pct = Math.round((w.load || 0) * 100);
    load.innerHTML = '<span class="meter"><span style="width:' + pct + '%"></span></span>' + pct + "%";
    tr.append(
      cell(w.name),
      cell(w.host ?? "(not reported)", w.host ? "" : "note"),
      cell(w.capabilities.join(", ") || "—"),
      cell(w.state + (w.heartbeat_age_ms != null ? " (heard " + dur(w.heartbeat_age_ms) + " ago)" : ""), "state " + w.state.split(":")[0]),
      cell(current, "current"),
      cell(w.in_flight, "num"),
      cell(w.done, "num"),
      load,
    );
    body.append(tr);
  }
}

function renderJobs(s) {
  const body = $("jobs").tBodies[0];
  body.replaceChildren();
  if (s.jobs.length === 0) {
    const tr = document.createElement("tr");
    const td = cell("no jobs yet", "note");
    td.colSpan = 6;
    tr.append(td);
    body.append(tr);
  }
  for (const j of s.jobs) {
    const tr = document.createElement("tr");
    tr.dataset.job = j.id;
    const total = j.tasks_done + j.tasks_running + j.tasks_queued + (j.tasks_sent || 0);
    const pct = total ? Math.round((100 * j.tasks_done) / total) : (j.state === "running" ? 0 : 100);
    const prog = document.createElement("td");
    prog.innerHTML = '<span class="meter"><span style="width:' + pct + '%"></span></span>';
    prog.append(j.tasks_done + " done, " + j.tasks_running + " running, " +
      (j.tasks_sent ? j.tasks_sent + " sent to workers, " : "") + j.tasks_queued + " queued" +
      (j.firings != null ? ", " + j.firings + " firings" : ""));
    const why = j.error ? cell(j.error, "error") : cell(j.waiting ?? "", "note");
    tr.append(cell(j.id, "num"), cell(j.net), cell(j.state, "state " + j.state.split(" ")[0]), prog, cell(dur(j.elapsed_ms), "num"), why);
    body.append(tr);
  }
}

function window_() {
  const now = snap ? snap.now_ms : 0;
  if (view.follow) {
    // The last `span` ms, or the whole run while it is shorter.
    const span = Math.min(view.span, Math.max(2000, now * 1.03));
    return [Math.max(0, now * 1.03 - span), Math.max(now * 1.03, span)];
  }
  return [view.end - view.span, view.end];
}

function niceStep(span, px) {
  const raw = span / Math.max(1, px / 90);
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

function renderGantt(s) {
  const svg = $("gantt-svg");
  const width = Math.max(400, $("gantt").clientWidth);
  const names = s.workers.map((w) => w.name);
  for (const b of s.tasks) if (b.worker && !names.includes(b.worker)) names.push(b.worker);
  // Tasks that overlap on one worker (it runs several at once) go to lanes of their own.
  const lanes = new Map(), laneCount = names.map(() => 1);
  const byStart = [...s.tasks].sort((a, b) => a.start_ms - b.start_ms);
  const ends = names.map(() => []);
  for (const b of byStart) {
    const row = names.indexOf(b.worker);
    if (row < 0) continue;
    const e = ends[row];
    let lane = e.findIndex((end) => end <= b.start_ms);
    if (lane < 0) { lane = e.length; e.push(0); }
    e[lane] = b.end_ms ?? Infinity;
    lanes.set(b.id, lane);
    laneCount[row] = Math.max(laneCount[row], Math.min(lane + 1, 6));
  }
  const rowH = laneCount.map((n) => (n === 1 ? ROW_H : 8 + 14 * n));
  const rowY = [];
  rowH.reduce((y, h, i) => { rowY[i] = y; return y + h; }, AXIS_H);
  const height = AXIS_H + (rowH.reduce((a, b) => a + b, 0) || ROW_H) + 4;
  svg.setAttribute("viewBox", "0 0 " + width + " " + height);
  svg.setAttribute("height", height);
  // The axis and the rows are drawn anew; the bars are kept by id (a bar being clicked
  // stays the same element across updates).
  let bg = svg.querySelector("g.bg"), fg = svg.querySelector("g.bars");
  if (!bg) {
    bg = document.createElementNS(SVGNS, "g");
    bg.setAttribute("class", "bg");
    fg = document.createElementNS(SVGNS, "g");
    fg.setAttribute("class", "bars");
    svg.append(bg, fg);
  }
  bg.replaceChildren();
  const [t0, t1] = window_();
  const plotW = width - LABEL_W - 8;
  const x = (t) => LABEL_W + ((t - t0) / (t1 - t0)) * plotW;
  const el = (name, attrs, text, parent) => {
    const e = document.createElementNS(SVGNS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text;
    (parent || bg).append(e);
    return e;
  };
  const step = niceStep(t1 - t0, plotW);
  for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
    if (t < 0) continue;
    el("line", { class: "tick", x1: x(t), x2: x(t), y1: AXIS_H - 4, y2: height });
    el("text", { class: "tick-label", x: x(t) + 2, y: 14 }, dur(Math.round(t)));
  }
  names.forEach((n, i) => {
    const y = rowY[i];
    el("line", { class: "row-line", x1: 0, x2: width, y1: y + rowH[i], y2: y + rowH[i] });
    el("text", { class: "row-label", x: 6, y: y + rowH[i] / 2 + 4 }, n.length > 20 ? n.slice(0, 19) + "…" : n);
  });
  const old = new Map([...fg.querySelectorAll("rect.bar")].map((r) => [r.dataset.id, r]));
  fg.querySelectorAll("text").forEach((t) => t.remove());
  let shown = 0;
  for (const b of s.tasks) {
    const row = names.indexOf(b.worker);
    const end = b.end_ms ?? s.now_ms;
    if (row < 0 || end < t0 || b.start_ms > t1) continue;
    const x0 = Math.max(LABEL_W, x(b.start_ms)), x1 = Math.min(width, x(end));
    const lane = Math.min(lanes.get(b.id) ?? 0, 5);
    const single = laneCount[row] === 1;
    const h = single ? ROW_H - 2 * BAR_PAD : 12;
    const y = rowY[row] + (single ? BAR_PAD : 4 + 14 * lane);
    let r = old.get(b.id);
    old.delete(b.id);
    if (!r) {
      r = document.createElementNS(SVGNS, "rect");
      r.dataset.id = b.id;
      r.append(document.createElementNS(SVGNS, "title"));
      r.addEventListener("click", () => { selected = r.dataset.id; renderGantt(snap); renderDetails(snap); });
      fg.append(r);
    }
    r.setAttribute("class", "bar state-" + b.state + (b.id === selected ? " selected" : ""));
    r.setAttribute("x", x0);
    r.setAttribute("y", y);
    r.setAttribute("width", Math.max(4, x1 - x0));
    r.setAttribute("height", h);
    r.setAttribute("rx", 2);
    r.dataset.state = b.state;
    r.dataset.worker = b.worker;
    r.firstChild.textContent = b.transition + " (" + b.state + ", " + dur(end - b.start_ms) + ")";
    // A failed or selected task stays on top of its neighbours (a short one is a sliver).
    if (b.state === "failed" || b.id === selected) fg.append(r);
    if (x1 - x0 > 40) el("text", { class: "bar-label", x: x0 + 3, y: y + h / 2 + 4 }, b.transition.slice(0, Math.floor((x1 - x0 - 6) / 6.5)), fg);
    shown++;
  }
  old.forEach((r) => r.remove());
  if (snap.now_ms >= t0 && snap.now_ms <= t1) el("line", { class: "now", x1: x(snap.now_ms), x2: x(snap.now_ms), y1: AXIS_H - 4, y2: height });
  $("gantt-note").textContent = s.tasks.length + " tasks (" + shown + " in view" +
    (s.tasks_dropped ? ", " + s.tasks_dropped + " older ones left out" : "") + ")" +
    (s.tasks_sampled ? "; sampled every " + s.interval_ms + " ms from what the workers run (shorter tasks may be merged; no inputs or logs from this source)" : "");
}

function renderDetails(s) {
  const d = $("details");
  const b = selected && s.tasks.find((t) => t.id === selected);
  if (!b) { d.hidden = true; d.replaceChildren(); return; }
  d.hidden = false;
  const end = b.end_ms ?? s.now_ms;
  const rows = [
    ["job", b.job ?? "—"], ["worker", b.worker], ["state", b.state],
    ["sent", b.sent_ms != null ? dur(b.sent_ms) : "(not reported)"],
    ["started", dur(b.start_ms)], ["ended", b.end_ms != null ? dur(b.end_ms) : "(running)"],
    ["duration", dur(end - b.start_ms) + (b.end_ms == null ? " so far" : "")],
    ["queued", b.sent_ms != null ? dur(Math.max(0, b.start_ms - b.sent_ms)) : "(not reported)"],
    ["retries", b.retries],
  ];
  let html = "<h3>" + esc(b.transition) + '</h3><dl>' + rows.map(([k, v]) => "<dt>" + k + "</dt><dd>" + esc(v) + "</dd>").join("") + "</dl>";
  html += "<div>inputs</div>" + (b.inputs != null ? "<pre>" + esc(b.inputs) + "</pre>" : '<p class="note">not reported by this source</p>');
  let log;
  if (b.log != null) log = "<pre>" + esc(b.log) + "</pre>";
  else if (b.log_bytes > 0 && b.task != null) {
    const got = logs.get(b.id);
    if (got == null) fetchLog(b);
    log = '<pre id="details-log">' + esc(got ?? "(loading " + b.log_bytes + " bytes…)") + "</pre>";
  } else if (!s.tasks_sampled) log = '<p class="note">nothing logged' + (b.end_ms == null ? " yet" : "") + "</p>";
  else log = '<p class="note">not reported by this source</p>';
  html += "<div>log</div>" + log;
  if (b.error) html += '<div>error</div><pre class="error" id="details-error">' + esc(b.error) + "</pre>";
  d.innerHTML = html;
}

const logs = new Map(); // bar id -> log text (of ended tasks; running ones are asked again)
function fetchLog(b) {
  if (logs.has(b.id)) return;
  logs.set(b.id, null);
  fetch("log/" + b.job + "/" + b.task).then((r) => r.text()).then((t) => {
    if (b.end_ms != null) logs.set(b.id, t); else logs.delete(b.id);
    const pre = document.getElementById("details-log");
    if (pre && selected === b.id) pre.textContent = t;
  }, () => logs.delete(b.id));
}

function bytes(n) {
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + u[i];
}

function renderMemory(s) {
  const m = s.memory, d = $("memory");
  let html = "";
  if (s.memory_note) html += '<p class="note" id="memory-note">' + esc(s.memory_note) + "</p>";
  if (m) {
    html += "<p>" + m.segments + " segments, " + bytes(m.capacity) + " capacity, " + bytes(m.allocated) + " allocated in " +
      m.allocations + " allocations; transfers: " + bytes(m.bytes_got) + " got, " + bytes(m.bytes_put) + " put</p>";
    if (m.hosts.length) {
      html += "<table><thead><tr><th>host</th><th class=\"num\">segments</th><th class=\"num\">capacity</th><th class=\"num\">allocated</th><th>used</th></tr></thead><tbody>";
      for (const h of m.hosts) {
        const pct = h.capacity ? Math.round((100 * h.allocated) / h.capacity) : 0;
        html += "<tr><td>" + esc(h.host) + '</td><td class="num">' + h.segments + '</td><td class="num">' + bytes(h.capacity) +
          '</td><td class="num">' + bytes(h.allocated) + '</td><td><span class="meter"><span style="width:' + pct + '%"></span></span>' + pct + "%</td></tr>";
      }
      html += "</tbody></table>";
    }
  }
  d.innerHTML = html;
}

function render(s) {
  snap = s;
  $("title").textContent = s.title;
  $("clock").textContent = dur(s.now_ms);
  const c = $("conn");
  c.textContent = s.connected ? "live" : "not connected: " + (s.error || "");
  c.className = "conn " + (s.connected ? "ok" : "bad");
  renderWorkers(s);
  renderJobs(s);
  renderGantt(s);
  renderDetails(s);
  renderMemory(s);
  document.body.dataset.seq = s.seq;
}

function zoom(f, at) {
  const [t0, t1] = window_();
  const pivot = at ?? (view.follow ? t1 : (t0 + t1) / 2);
  const span = Math.min(7 * 24 * 3600e3, Math.max(200, (t1 - t0) * f));
  view.end = pivot + (t1 - pivot) * (span / (t1 - t0));
  view.span = span;
  if (snap) renderGantt(snap);
}

$("zoom-in").onclick = () => zoom(0.5);
$("zoom-out").onclick = () => zoom(2);
$("zoom-all").onclick = () => {
  if (!snap) return;
  view.span = 7 * 24 * 3600e3; // follow shows the whole run when it is shorter than the span
  view.follow = true;
  $("follow").checked = true;
  renderGantt(snap);
};
// Stops following the clock: the window shown stays where it is.
function freeze() {
  if (!view.follow) return;
  const [t0, t1] = window_();
  view.follow = false;
  view.end = t1;
  view.span = t1 - t0;
  $("follow").checked = false;
}
$("follow").onchange = (e) => {
  if (e.target.checked) view.follow = true; else { view.follow = true; freeze(); }
  if (snap) renderGantt(snap);
};
$("gantt").addEventListener("wheel", (e) => {
  e.preventDefault();
  const r = $("gantt").getBoundingClientRect();
  const [t0, t1] = window_();
  const px = e.clientX - r.left - LABEL_W;
  const at = t0 + (px / Math.max(1, r.width - LABEL_W - 8)) * (t1 - t0);
  if (e.shiftKey) { // pan
    freeze();
    view.end += (e.deltaY / 500) * view.span;
    renderGantt(snap);
    return;
  }
  if (px > 0) freeze();
  zoom(e.deltaY < 0 ? 0.8 : 1.25, px > 0 ? at : undefined);
}, { passive: false });
window.addEventListener("resize", () => snap && renderGantt(snap));

function connect() {
  const es = new EventSource("events");
  es.addEventListener("snapshot", (e) => render(JSON.parse(e.data)));
  es.onerror = () => {
    const c = $("conn");
    c.textContent = "reconnecting…";
    c.className = "conn wait";
  };
}
connect();
