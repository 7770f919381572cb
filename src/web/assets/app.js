// The web view of git orchestra: one page, three views (runs, a run, a packet), redrawn from
// the server's JSON whenever the journal changes (server-sent events).
//
// Everything a run holds — packets, plans, logs, what agents and workers wrote — is hostile
// text: markup is built only through the `html` template tag below, which escapes every value
// put into it unless it is markup the tag built itself.
"use strict";

// The key that opened this session comes once, in the page that took the address's one-time
// code; the browser keeps it in this origin's storage (per port, unlike the cookie), where
// other tabs of the view find it too.
const given = document.querySelector('meta[name="orchestra-key"]').content;
if (given) localStorage.setItem("orchestra-key", given);
const KEY = localStorage.getItem("orchestra-key") || "";
if (location.search) history.replaceState(null, "", location.pathname);
const main = document.getElementById("main");
const path = location.pathname;
let refreshing = false, again = false, lastSeen = {};

function esc(s) {
  return String(s == null ? "" : s).replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}
// Markup built by `html`: the only thing `html` puts into markup unescaped.
class Html { constructor(s) { this.s = s; } toString() { return this.s; } }
function piece(v) {
  if (v instanceof Html) return v.s;
  if (Array.isArray(v)) return v.map(piece).join("");
  return esc(v);
}
function html(strings, ...values) {
  let out = strings[0];
  values.forEach((v, i) => { out += piece(v) + strings[i + 1]; });
  return new Html(out);
}
function state(s) { return html`<span class="state ${s}">${s || "–"}</span>`; }
function num(n) { return n == null ? "–" : Number(n).toLocaleString("en"); }
function cost(c) { return c == null ? "–" : Number(c).toFixed(4); }
// A duration as the terminal writes it ("79.2s"); a value that is not a number is shown as text.
function secs(ms) { return typeof ms === "number" ? `${(ms / 1000).toFixed(1)}s` : ms; }
function ago(ms) {
  if (!ms) return "–";
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  return s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m ${s % 60}s` : `${Math.floor(s / 3600)}h ${Math.floor(s / 60) % 60}m`;
}
async function getJSON(url) {
  const r = await fetch(url, {credentials: "same-origin", headers: {"X-Orchestra-Token": KEY}});
  if (r.status === 403) throw new Error(await r.text());
  return r.json();
}
async function post(url, body) {
  const r = await fetch(url, {method: "POST", credentials: "same-origin",
    headers: {"Content-Type": "application/json", "X-Orchestra-Token": KEY}, body: JSON.stringify(body || {})});
  let j = {};
  try { j = await r.json(); } catch (e) { j = {ok: false, error: `HTTP ${r.status}`}; }
  j.status = r.status;
  return j;
}
function say(text, bad) {
  const b = document.getElementById("banner");
  b.hidden = !text;
  b.textContent = text || "";
  b.className = bad ? "bad" : "";
}
// The page's own notification, and the desktop's where the browser may show one.
function notify(key, text) {
  if (lastSeen[key]) return;
  lastSeen[key] = true;
  say(text);
  if (window.Notification && Notification.permission === "granted") new Notification("git orchestra", {body: text});
}
if (window.Notification && Notification.permission === "default") {
  document.addEventListener("click", () => Notification.requestPermission(), {once: true});
}

// ---------- runs ----------
async function showRuns() {
  const data = await getJSON("/api/runs");
  const rows = (data.runs || []).map(r => html`<tr data-run="${r.id}">
    <td><a href="/run/${encodeURIComponent(r.id)}">${r.id}</a></td><td>${state(r.state)}</td>
    <td>${r.objective}</td><td>${r.done}/${r.packets}${r.failed ? html` <span class="state failed">${r.failed} failed</span>` : ""}</td>
    <td>${num(r.tokens)}</td><td>${cost(r.cost)}</td><td class="muted">${ago(r.created_ms)} ago</td></tr>`);
  main.innerHTML = html`<h1>Runs</h1><p><a href="/evals">Evals</a></p>${rows.length ? html`<table id="runs"><tr><th>run</th><th>state</th><th>objective</th>
    <th>packets done</th><th>tokens</th><th>cost</th><th>started</th></tr>${rows}</table>`
    : html`<p class="muted">No runs yet: <code>git orchestra start "…"</code> makes one.</p>`}`;
}

// ---------- evals ----------
function rate3(x) { return x == null ? "–" : Number(x).toFixed(3); }
async function showEvals() {
  const data = await getJSON("/api/evals");
  const rows = (data.evals || []).map(e => html`<tr data-eval="${e.eval}">
    <td><a href="/eval/${encodeURIComponent(e.eval)}">${e.eval}</a></td><td>${e.range}</td>
    <td>${e.done}/${e.total}${e.finished ? "" : " (unfinished)"}</td><td>${e.kept ? "yes" : "no"}</td>
    <td>${(e.arms || []).map(a => `${a.name} ${a.resolved}/${a.attempts}`).join(", ")}</td></tr>`);
  main.innerHTML = html`<p><a href="/">← runs</a></p><h1>Evals</h1>${rows.length ? html`<table id="evals"><tr><th>eval</th><th>tasks</th>
    <th>attempts ended</th><th>kept in git</th><th>resolved per arm</th></tr>${rows}</table>`
    : html`<p class="muted">No evals yet: <code>git orchestra eval run --from-history HEAD~20..HEAD --arm …</code> makes one.</p>`}`;
}
async function showEval(id) {
  const r = await getJSON(`/api/eval/${encodeURIComponent(id)}`);
  if (r.error) { main.innerHTML = html`<p><a href="/evals">← evals</a></p><p class="bad">${r.error}</p>`; return; }
  const k = r.repeat;
  const arms = r.arms.map(a => html`<tr><td title="${a.spec}">${a.name}</td><td>${a.attempts}</td><td>${a.resolved}</td>
    <td>${rate3(a.rate)}</td><td>[${rate3(a.interval[0])}, ${rate3(a.interval[1])}]</td><td>${rate3(a.pass_at_k)}</td>
    <td>${rate3(a.pass_hat_k)}</td><td>${num(a.tokens_in)}/${num(a.tokens_out)}</td><td>${cost(a.cost_per_resolved)}</td>
    <td>${a.wall_p50 == null ? "–" : a.wall_p50.toFixed(1) + "s"}</td><td>${a.wall_p90 == null ? "–" : a.wall_p90.toFixed(1) + "s"}</td>
    <td>${a.model_p50 == null ? "–" : a.model_p50.toFixed(1) + "s"}</td><td>${(a.model_total || 0).toFixed(1)}s</td>
    <td>${Object.entries(a.failures || {}).map(([f, n]) => `${n} ${f.replace(/_/g, " ")}`).join(", ")}</td></tr>`);
  const cell = (task, arm) => {
    const mine = r.attempts.filter(x => x.task === task && x.arm === arm);
    if (!mine.length) return html`<td class="muted">…</td>`;
    const ok = mine.every(x => x.resolved);
    return html`<td class="${ok ? "state succeeded" : "state failed"}">${mine.map(x => x.resolved ? "✓" : (x.failure || "not resolved").replace(/_/g, " ")).join(", ")}</td>`;
  };
  const grid = r.tasks.map(t => html`<tr><td><code>${t.commit.slice(0, 10)}</code> ${t.objective.split("\n")[0]}</td>
    ${r.arms.map(a => cell(t.commit, a.name))}</tr>`);
  main.innerHTML = html`<p><a href="/evals">← evals</a></p><h1>Eval ${r.eval}</h1>
    <p>Tasks from <code>${r.range}</code>, judged by <code>${r.test}</code>; ${r.done} of ${r.total} attempts ended${r.finished ? "" : " (unfinished)"}.</p>
    <table id="arms"><tr><th>arm</th><th>attempts</th><th>resolved</th><th>rate</th><th>95% interval</th><th>pass@${k}</th><th>pass^${k}</th>
    <th>tokens in/out</th><th>cost per resolved</th><th>wall p50</th><th>wall p90</th><th>model p50</th><th>model total</th><th>failures</th></tr>${arms}</table>
    <h2>Tasks × arms</h2><table id="grid"><tr><th>task</th>${r.arms.map(a => html`<th>${a.name}</th>`)}</tr>${grid}</table>`;
}

// ---------- a run ----------
function graphHtml(plan, cards) {
  if (!plan || !plan.packets) return "";
  const byId = {};
  (cards || []).forEach(c => byId[c.id] = c);
  const waves = plan.waves.map((w, i) => html`<div class="wave"><div class="label">wave ${i + 1}</div>${
    w.map(id => {
      const p = plan.packets.find(x => x.id === id) || {id};
      const c = byId[id] || {};
      return html`<div class="node ${c.state || ""}" data-node="${id}" title="${(p.files || []).join(", ")}">
        <b>${id}</b> ${state(c.state || "planned")}<div class="muted">${p.title || ""}</div></div>`;
    })}</div>`);
  const notes = (plan.serialized || []).map(([a, b, why]) => html`<li>${a} before ${b}: ${why}</li>`)
    .concat((plan.parallel || []).map(n => html`<li>${n}</li>`));
  return html`<h2>Plan</h2><div class="waves" id="graph">${waves}<svg class="edges"></svg></div>${
    notes.length ? html`<ul class="muted">${notes}</ul>` : ""}`;
}
function drawEdges(plan) {
  const g = document.getElementById("graph");
  if (!g || !plan) return;
  const svg = g.querySelector("svg"), box = g.getBoundingClientRect();
  svg.setAttribute("width", g.scrollWidth); svg.setAttribute("height", g.scrollHeight);
  const paths = [];
  for (const p of plan.packets) for (const d of p.depends_on || []) {
    const a = g.querySelector(`[data-node="${CSS.escape(d)}"]`), b = g.querySelector(`[data-node="${CSS.escape(p.id)}"]`);
    if (!a || !b) continue;
    const ra = a.getBoundingClientRect(), rb = b.getBoundingClientRect();
    const x1 = ra.right - box.left, y1 = ra.top + ra.height / 2 - box.top, x2 = rb.left - box.left, y2 = rb.top + rb.height / 2 - box.top;
    paths.push(html`<path d="M${x1},${y1} C${x1 + 30},${y1} ${x2 - 30},${y2} ${x2},${y2}"/>`);
  }
  svg.innerHTML = html`${paths}`;
}
function cardHtml(run, c) {
  const time = c.started_ms ? (["running", "pending"].includes(c.state) ? ago(c.started_ms) : ago(c.started_ms) + " ago") : "–";
  return html`<div class="card" data-packet="${c.id}" data-state="${c.state}">
    <h3><a href="/packet/${encodeURIComponent(run)}/${encodeURIComponent(c.id)}">${c.id}</a> ${state(c.state)}</h3>
    <div class="muted">${c.title}</div>
    <dl><dt>worker</dt><dd class="worker-state">${c.worker_state || "–"}</dd><dt>phase</dt><dd>${c.phase || "–"}</dd>
    <dt>attempt</dt><dd>${c.attempt}</dd><dt>role</dt><dd>${c.role}</dd><dt>model</dt><dd>${c.model || "–"}</dd>
    <dt>started</dt><dd>${time}</dd><dt>tokens</dt><dd>${num(c.tokens)}</dd></dl>
    ${c.reason && c.state === "failed" ? html`<div class="muted">${String(c.reason).split("\n")[0]}</div>` : ""}</div>`;
}
function approvalHtml(a) {
  if (!a) return "";
  const problems = (a.problems || []).map(p => html`<li>${p}</li>`);
  const f = a.forecast;
  const forecast = f ? html`<div id="plan-forecast"><h3>Forecast</h3><p class="forecast-total">${f.total}</p>
    <ul>${Object.entries(f.packets || {}).map(([id, t]) => html`<li><b>${id}</b>: ${t}</li>`)}</ul></div>` : "";
  return html`<div class="panel attention" id="approval"><h2>The plan waits for approval</h2>${forecast}
    <textarea id="plan-text" rows="18" spellcheck="false">${a.plan}</textarea>
    <ul class="problems" id="plan-problems">${problems}</ul>
    <div class="toolbar"><button class="primary" id="approve">Approve</button>
    <button id="approve-edited">Approve as edited</button><button class="danger" id="reject">Reject</button></div>
    <div class="toolbar"><input type="text" id="plan-feedback" placeholder="what should the planner change?">
    <button id="revise">Send back to the planner</button></div></div>`;
}
function questionsHtml(status) {
  const qs = (status && status.questions) || [];
  return qs.map(q => html`<div class="panel attention question" data-question="${q.packet}">
    <b>${q.packet} asks:</b> ${q.question}
    <div class="toolbar"><input type="text" class="answer-text" placeholder="your answer">
    <button class="answer" data-packet="${q.packet}">Answer</button></div></div>`);
}
// The model calls the run waits for, of every role: who waits, since when, how big a prompt.
function callsHtml(start) {
  const calls = (start && start.model_calls) || [];
  if (!calls.length) return "";
  const now = Date.now();
  return html`<div class="panel model-calls" id="model-calls">${calls.map(c => html`<div>${c.role} waiting for the model (${c.model}) for ${Math.max(0, Math.round((now - c.since_ms) / 1000))}s, prompt ~${num(c.prompt_tokens)} tokens${c.unreachable_retry_secs != null ? html`; model server unreachable, retrying in ${c.unreachable_retry_secs} s` : ""}</div>`)}</div>`;
}
function routingHtml(start) {
  const lines = (start && start.routing) || [];
  if (!lines.length) return "";
  return html`<h2>Routing</h2><ul class="routing" id="routing">${lines.map(l => html`<li>${l}</li>`)}</ul>`;
}
let planTimer = null;
function wireRun(run, data) {
  const act = async (what, body) => {
    const r = await post(`/api/run/${encodeURIComponent(run)}/${what}`, body);
    if (r.problems) document.getElementById("plan-problems").innerHTML = html`${r.problems.map(p => html`<li>${p}</li>`)}`;
    say(r.ok ? r.message : (r.error || (r.problems ? "the edited plan has problems" : "refused")), !r.ok);
    refresh();
  };
  main.querySelectorAll("[data-act]").forEach(b => b.onclick = () => act(b.dataset.act));
  const approve = document.getElementById("approve");
  if (approve) {
    approve.onclick = () => act("approve");
    document.getElementById("reject").onclick = () => act("reject");
    document.getElementById("revise").onclick = () => act("revise", {feedback: document.getElementById("plan-feedback").value});
    document.getElementById("approve-edited").onclick = () => act("edit", {plan: document.getElementById("plan-text").value});
    document.getElementById("plan-text").oninput = e => {
      clearTimeout(planTimer);
      planTimer = setTimeout(async () => {
        const r = await post("/api/check", {plan: e.target.value});
        document.getElementById("plan-problems").innerHTML = html`${(r.problems || []).map(p => html`<li>${p}</li>`)}`;
      }, 350);
    };
  }
  main.querySelectorAll("button.answer").forEach(b => b.onclick = () => {
    const text = b.parentElement.querySelector(".answer-text").value;
    act("answer", {packet: b.dataset.packet, text});
  });
}
// Only the controls the library says apply to the run in its state now.
const CONTROLS = {pause: ["Pause", ""], resume: ["Resume", ""], retry: ["Retry failed", ""], cancel: ["Cancel", "danger"]};
function controlsHtml(controls) {
  const shown = [].concat(controls || []).filter(c => CONTROLS[c]);
  if (!shown.length) return "";
  return html`<div class="toolbar" id="controls">${shown.map(c => html`<button class="${CONTROLS[c][1]}" data-act="${c}">${CONTROLS[c][0]}</button>`)}</div>`;
}
// The clarifier's requirements and the planner's rounds, while no packet runs yet.
function progressHtml(p, cards) {
  if (!p || (cards || []).length) return "";
  const list = v => [].concat(v || []);
  const rounds = list(p.rounds).map(r => html`<li>round ${r.round}: ${list(r.packets).length ? list(r.packets).join(", ") : "no packets"}
    ${list(r.issues).length ? html`, <b>${list(r.issues).length} problems</b><ul>${list(r.issues).map(i => html`<li>${i}</li>`)}</ul>` : ", valid"}
    ${r.approved === true ? " · approved by the plan reviewer" : r.approved === false ? html` · <b>sent back by the plan reviewer</b><ul>${list(r.findings).map(f => html`<li>${f}</li>`)}</ul>` : ""}</li>`);
  return html`<div id="progress">
    <h2>Requirements</h2>${list(p.requirements).length ? html`<ul>${list(p.requirements).map(r => html`<li>${r}</li>`)}</ul>` : html`<p class="muted">The clarifier is still working.</p>`}
    ${list(p.assumptions).length ? html`<h3>Assumptions</h3><ul>${list(p.assumptions).map(a => html`<li>${a}</li>`)}</ul>` : ""}
    <h2>Planning</h2>${rounds.length ? html`<ul>${rounds}</ul>` : html`<p class="muted">No plan proposed yet.</p>`}
    ${list(p.feedback).length ? html`<h3>Sent back with</h3><ul>${list(p.feedback).map(f => html`<li>${f}</li>`)}</ul>` : ""}</div>`;
}
async function showRun(run) {
  // An edit in progress is not redrawn away.
  const editing = document.activeElement && ["plan-text"].includes(document.activeElement.id);
  if (editing || (document.activeElement && document.activeElement.classList.contains("answer-text"))) return;
  const data = await getJSON(`/api/run/${encodeURIComponent(run)}`);
  if (data.error) { main.innerHTML = html`<p>${data.error}</p>`; return; }
  const s = data.status || {};
  const r = s.run || (s.planning || {});
  // The library's label first: it says "interrupted while …" when no process drives the run.
  const shown = (s.start && !s.start.parent_of_phase && s.start.state) || (s.planning && s.planning.state) || data.phase || r.state;
  if (data.approval) notify(`approval-${run}`, `The plan of ${run} waits for approval.`);
  (s.questions || []).forEach(q => notify(`q-${run}-${q.packet}-${q.question}`, `${q.packet} asks: ${q.question}`));
  if (["completed", "failed", "cancelled"].includes(shown)) notify(`end-${run}-${shown}`, `Run ${run} is ${shown}.`);
  // The one accounting: a `start` run's every role, or a `run`/`agent` run's agents.
  const spend = (s.start && s.start.spend) || s.spend;
  // Why the run stopped and the command that continues it, as `status` says them.
  const failure = (s.start && s.start.failure) || s.failure;
  main.innerHTML = html`<h1>${r.objective || (data.plan && data.plan.objective) || run}</h1>
    <div>${state(shown)} <span class="muted">${run}</span>
    ${spend ? html`<span class="muted"> · ${num(spend.input_tokens + spend.output_tokens)} tokens · cost ${cost(spend.cost)}</span>` : ""}</div>
    ${failure ? html`<div class="panel attention" id="failure"><b>Why it stopped:</b> ${failure.reason}
      <div>Continue with <code>${failure.next}</code></div></div>` : ""}
    ${controlsHtml(data.controls)}
    ${approvalHtml(data.approval)}${questionsHtml(s.start || s)}${callsHtml(s.start)}${progressHtml(data.progress, data.cards)}
    ${graphHtml(data.plan, data.cards)}
    <h2>Packets</h2><div class="cards" id="cards">${(data.cards || []).length ? data.cards.map(c => cardHtml(run, c)) : html`<p class="muted">No packets yet.</p>`}</div>
    ${(s.notes || []).length ? html`<h2>Notes</h2><ul>${s.notes.map(n => html`<li>${n.note || `${n.packet} changed ${n.file} ${n.lines} outside ${[].concat(n.declared || []).join(", ")}`}</li>`)}</ul>` : ""}
    ${landingHtml(s.landing)}${routingHtml(s.start)}${gatesHtml(data.gates)}${data.report ? html`<h2>Report</h2><div class="panel report" id="report">${markdown(String(data.report))}</div>` : ""}`;
  wireRun(run, data);
  drawEdges(data.plan);
}

// ---------- gates, merge, spend and the report ----------
function gatesHtml(g) {
  if (!g) return "";
  const reviews = (g.reviews || []).map(({event: e}) => html`<li>${e.packet} round ${e.round}: ${e.approved ? "approved" : html`<b>rejected</b>, ${e.blocking} blocking`} by ${e.reviewer}
    ${(e.findings || []).length ? html`<ul>${e.findings.map(f => html`<li>${f}</li>`)}</ul>` : ""}</li>`);
  const list = v => [].concat(v || []).join(", ");
  const merge = (g.merge || []).map(({event: e}) => {
    switch (e.type) {
      case "merge_started": return [].concat(e.packets || []).length
        ? html`<li>batch ${list(e.packets)} into ${e.integration} for ${e.target}</li>`
        : html`<li>nothing ${[].concat(e.already || []).length ? html`new to merge: ${list(e.already)} already in ${e.integration}` : "to merge: no packet succeeded"}</li>`;
      case "packet_conflicted": return html`<li>${e.packet} conflicts in ${list(e.paths)}</li>`;
      case "merge_validation_finished": return html`<li>${e.exit_code === 0 ? "passed" : html`<b>failed</b>`}: <code>${e.command}</code> on ${list(e.packets)}</li>`;
      case "packet_integrated": return html`<li>${e.packet} integrated</li>`;
      case "packet_sent_back": return html`<li><b>${e.packet} sent back</b>: ${e.reason}</li>`;
      case "merge_finished": return html`<li>merge finished: ${[].concat(e.integrated || []).length} integrated, ${[].concat(e.sent_back || []).length} sent back${!e.target_advanced ? (e.target_note ? html`, target not advanced: ${e.target_note}` : "") : e.target_moved === false ? ", target unchanged" : ", target advanced"}</li>`;
      default: return "";
    }
  });
  // A cost stays null (shown as –) while no call had a price: never $0 beside unpriced models.
  const spend = (g.spend || []).map(([t, tok, c]) => [Number(t) || 0, Number(tok) || 0, c == null ? null : Number(c)]);
  let chart = "";
  if (spend.length > 1) {
    const t0 = spend[0][0], t1 = spend[spend.length - 1][0] || t0 + 1, max = spend[spend.length - 1][1] || 1;
    const pts = spend.map(([t, tok]) => `${(400 * (t - t0) / Math.max(1, t1 - t0)).toFixed(1)},${(60 - 56 * tok / max).toFixed(1)}`).join(" ");
    const last = spend[spend.length - 1];
    chart = html`<h2>Tokens over time</h2><svg id="spend" width="400" height="64" class="spend"><polyline fill="none" stroke="currentColor" points="${pts}"/></svg>
      <div class="muted">${num(last[1])} tokens · cost ${cost(last[2])} over ${spend.length} model calls</div>`;
  }
  return html`${reviews.length ? html`<h2>Reviews</h2><ul id="reviews">${reviews}</ul>` : ""}${merge.some(m => m) ? html`<h2>Merge</h2><ul id="merge">${merge}</ul>` : ""}${chart}`;
}
// Renders the report's Markdown: headings, lists, bold and code. Each piece of text is
// escaped by `html`; only the markup the patterns name is made here.
function markdown(text) {
  const inline = s => {
    const parts = [];
    const re = /`([^`]+)`|\*\*([^*]+)\*\*/g;
    let at = 0, m;
    while ((m = re.exec(s))) {
      parts.push(s.slice(at, m.index), m[1] != null ? html`<code>${m[1]}</code>` : html`<b>${m[2]}</b>`);
      at = re.lastIndex;
    }
    parts.push(s.slice(at));
    return parts;
  };
  const out = [];
  let items = null;
  for (const line of text.split("\n")) {
    const h = line.match(/^(#{1,4}) (.*)$/), li = line.match(/^\s*[-*] (.*)$/);
    if (items && !li) { out.push(html`<ul>${items}</ul>`); items = null; }
    if (h) out.push(new Html(`<h${h[1].length + 2}>${html`${inline(h[2])}`}</h${h[1].length + 2}>`));
    else if (li) { items = items || []; items.push(html`<li>${inline(li[1])}</li>`); }
    else if (line.trim()) out.push(html`<p>${inline(line)}</p>`);
  }
  if (items) out.push(html`<ul>${items}</ul>`);
  return out;
}

// ---------- a packet ----------
let comments = [];      // {file, line, code, text}
let diffShown = "";
// The icon of how an agent's run ended: only a completed one gets the tick.
const OUTCOME_ICON = {completed: "✔", error: "✘", cancelled: "⏹", blocked: "⚠", waiting_for_input: "?"};
// One activity item; a line whose fields do not fit its type is shown as the line itself.
function activityItem(e) {
  switch (e.type) {
    case "tool_call": return html`<div class="${e.ok ? "" : "err"}">⚙ ${e.name} <code>${e.target || ""}</code> ${e.ok ? "" : "failed "}${e.summary} <span class="muted">${secs(e.ms)}</span>${e.args ? html`<details><summary class="muted">arguments</summary><pre>${JSON.stringify(e.args, null, 1)}</pre></details>` : ""}${e.output_tail ? html`<details><summary class="muted">output</summary><pre>${e.output_tail}</pre></details>` : ""}</div>`;
    case "model_text": return html`<div class="said">“${e.text}”</div>`;
    case "model_waiting": return html`<div class="muted">… turn ${e.turn}: waiting for the model</div>`;
    case "model_call": return html`<div class="muted">◆ turn ${e.turn} ${e.model}: ${num(e.input_tokens)} in / ${num(e.output_tokens)} out, ${secs(e.ms)}</div>`;
    case "retry": return html`<div class="err">↻ ${e.model} failed: ${e.error}; retry ${e.attempt} in ${secs(e.delay_ms)}</div>`;
    case "fallback": return html`<div class="err">↪ model ${e.from} keeps failing (${e.error}); falling back to ${e.to}</div>`;
    case "context_trimmed": return html`<div class="muted">✂ context trimmed: ${num(e.dropped_outputs)} old tool outputs dropped</div>`;
    case "context_summarised": return html`<div class="muted">✂ ${num(e.replaced_messages)} older messages replaced by a summary${e.by_model ? " the model wrote" : ""}</div>`;
    case "subtask": return html`<div>⑂ subtask: ${e.title} <span class="muted">${[].concat(e.files || []).join(", ")}</span></div>`;
    case "answer_requested": return html`<div class="muted">… asked for its answer without tools after: ${e.after}</div>`;
    case "state": return html`<div>▸ ${e.from} → ${e.to} <span class="muted">${e.reason}</span></div>`;
    case "question": return html`<div>? ${e.question}</div>`;
    case "outcome": {
      const o = e.outcome, ok = o.state === "completed";
      return html`<div class="outcome ${ok ? "" : "err"}" data-outcome="${o.state}"><b>${OUTCOME_ICON[o.state] || "•"} ${o.state}</b> ${(ok ? o.summary : o.reason) || o.summary || o.reason || ""}</div>`;
    }
    case "output": return html`<div class="muted">${e.text}</div>`;
    // An event this page does not know: its fields as words, not its JSON.
    default: return html`<div class="muted">${e.type}: ${Object.entries(e).filter(([k]) => k !== "type")
      .map(([k, v]) => `${k.replace(/_/g, " ")} ${typeof v === "object" ? JSON.stringify(v) : v}`).join(", ")}</div>`;
  }
}
// The run's pull requests while `git orchestra land` follows them: state, checks, reviews,
// whether the forge would merge each, fix rounds used, and what landing waits for since when.
function landingHtml(list, title) {
  const prs = [].concat(list || []);
  if (!prs.length) return "";
  const word = c => ({success: "passing", neutral: "passing", failure: "failing", error: "failing"}[c] || c);
  const checks = p => [].concat(p.checks || []).map(c => html`<span class="check ${word(c.conclusion)}" data-check="${c.name}">${c.name} ${word(c.conclusion)}</span> `);
  const reviews = p => [].concat(p.reviews || []).map(r => html`<span data-reviewer="${r.author}">${r.author} ${String(r.verdict).replace("_", " ")}${r.counted ? "" : " (not counted)"}</span> `);
  const merges = p => p.state !== "open" ? "–" : p.mergeable === true ? "yes" : p.mergeable === false ? html`<b>no (conflicts)</b>` : "unknown";
  const since = p => p.waiting ? html`${p.waiting} <span class="muted">since ${new Date(p.since_ms).toLocaleTimeString()} (${ago(p.since_ms)})</span>` : "–";
  // Its address is shown as text, as every string of run data is.
  const link = p => html`#${p.number}${p.url ? html` <span class="muted">${p.url}</span>` : ""}`;
  const followed = prs.some(p => p.followed);
  return html`<h2>${title || "Pull requests"}</h2>${followed ? "" : html`<p class="muted">git orchestra land is not following them now.</p>`}
    <table class="landing" id="landing"><tr><th>Packet</th><th>Pull request</th><th>State</th><th>Checks</th><th>Reviews</th><th>Mergeable</th><th>Fix rounds</th><th>Waiting for</th></tr>
    ${prs.map(p => html`<tr data-landing="${p.packet}" data-state="${p.state}"><td>${p.packet}</td><td>${link(p)}</td><td>${state(p.state)}</td>
      <td>${checks(p)}</td><td>${reviews(p)}</td><td>${merges(p)}</td><td>${p.rounds}</td><td>${since(p)}</td></tr>`)}</table>`;
}
// A best-of-N packet's candidates: each one's result, the winner marked, and why it won.
function candidatesHtml(c) {
  if (!c || !(c.candidates || []).length) return "";
  const items = c.candidates.map(k => html`<li data-candidate="${k.candidate}">${k.candidate === c.winner ? html`<b>candidate ${k.candidate} (chosen)</b>` : `candidate ${k.candidate}`}:
    ${k.passed ? `passed, ${k.changed_lines} changed lines` : html`<span class="err">${String(k.reason || "failed").split("\n")[0]}</span>`}
    <span class="muted">${k.commit ? String(k.commit).slice(0, 12) : "no commit"}</span></li>`);
  return html`<h2>Candidates</h2><ul class="candidates">${items}</ul>${c.reasons ? html`<p class="muted">${String(c.reasons).split("\n")[0]}</p>` : ""}`;
}
// How many review rounds a packet had, apart from its attempts.
function reviewRounds(reviews) {
  const n = (reviews || []).length;
  return n === 0 ? "not reviewed yet" : n === 1 ? "1 review round" : `${n} review rounds`;
}
// One review of a packet as the terminal says it, with the icon of its verdict.
function reviewHtml(e) {
  const round = e.round > 0 ? ` (fix round ${e.round})` : "";
  const verdict = e.approved ? "approved" : `rejected (${e.blocking} blocking finding${e.blocking === 1 ? "" : "s"})`;
  return html`<li class="review ${e.approved ? "" : "err"}" data-approved="${e.approved}">${e.approved ? "✔" : "✘"} review by ${e.reviewer}${round}: ${verdict}${
    [].concat(e.findings || []).length ? html`<ul>${e.findings.map(f => html`<li>${f}</li>`)}</ul>` : ""}</li>`;
}
// The activity, each transcript (an attempt, a fix round, a validation command) under its
// own heading.
function activityHtml(items) {
  let shown = null;
  return html`${(items || []).map(({log, section, event: e}) => {
    const head = log !== shown ? html`<div class="section">${section || log}</div>` : "";
    shown = log;
    try { return html`${head}${activityItem(e || {})}`; } catch (err) { return html`${head}<div class="muted">${JSON.stringify(e)}</div>`; }
  })}`;
}
function parsePatch(patch) {
  const files = [];
  let f = null, oldNo = 0, newNo = 0;
  for (const line of patch.split("\n")) {
    if (line.startsWith("diff --git ")) { f = {name: line.replace(/^diff --git a\/.* b\//, ""), lines: []}; files.push(f); continue; }
    if (!f) continue;
    if (line.startsWith("+++ ") || line.startsWith("--- ") || line.startsWith("index ") || /^(new|deleted) file mode/.test(line)) continue;
    const h = line.match(/^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/);
    if (h) { oldNo = +h[1]; newNo = +h[2]; f.lines.push({kind: "hunk", text: line}); continue; }
    if (line.startsWith("+")) f.lines.push({kind: "add", no: newNo++, text: line});
    else if (line.startsWith("-")) f.lines.push({kind: "del", no: oldNo++, old: true, text: line});
    else if (line.startsWith(" ")) { f.lines.push({kind: "ctx", no: newNo++, text: line}); oldNo++; }
  }
  return files;
}
function diffHtml(files) {
  return files.map((f, fi) => html`<div class="file" data-file="${f.name}"><div class="name">${f.name}</div><div class="diff">${
    f.lines.map((l, li) => html`<div class="line ${l.kind}" data-fi="${fi}" data-li="${li}" ${l.kind === "hunk" ? "" : html`data-line="${l.no}"`}>
      <span class="no">${l.kind === "hunk" ? "" : l.no}</span><span>${l.text}</span></div>${
      comments.filter(c => c.fi === fi && c.li === li).map(c => html`<div class="comment">💬 ${c.text}</div>`)}`)
  }</div></div>`);
}
async function showPacket(run, id) {
  const data = await getJSON(`/api/packet/${encodeURIComponent(run)}/${encodeURIComponent(id)}`);
  if (data.error) { main.innerHTML = html`<p>${data.error}</p>`; return; }
  const p = data.packet;
  const act = document.getElementById("activity");
  // A comment being written, or an answer being typed, is never redrawn away: only the
  // activity and the state follow then.
  const busy = document.querySelector(".composer") || (document.activeElement && document.activeElement.id === "answer-text");
  if (busy && act) {
    act.innerHTML = activityHtml(data.activity);
    const st = document.querySelector(".packet-state");
    if (st) { st.dataset.state = p.state; st.querySelector(".state").outerHTML = state(p.state); }
    return;
  }
  const files = parsePatch(String((data.diff && data.diff.patch) || ""));
  const shownActivity = activityHtml(data.activity);
  main.innerHTML = html`<p><a href="/run/${encodeURIComponent(run)}">← ${run}</a></p>
    <h1>${p.id}: ${p.title}</h1><div class="packet-state" data-state="${p.state}">${state(p.state)}
    <span class="muted">attempt ${p.attempt} · ${reviewRounds(data.reviews)} · ${p.role} · ${p.branch} · ${p.commit ? String(p.commit).slice(0, 12) : "no commit yet"}</span></div>
    ${(data.reviews || []).length ? html`<h2>Reviews</h2><ul class="reviews">${data.reviews.map(({event: e}) => reviewHtml(e))}</ul>` : ""}
    ${candidatesHtml(data.candidates)}${landingHtml(data.landing ? [data.landing] : [], "Pull request")}
    ${data.question ? html`<div class="panel attention question"><b>The agent asks:</b> ${data.question}
      <div class="toolbar"><input type="text" class="answer-text" id="answer-text" placeholder="your answer"><button id="answer">Answer</button></div></div>` : ""}
    <h2>Activity</h2><div class="activity" id="activity">${shownActivity.s ? shownActivity : html`<span class="muted">nothing yet</span>`}</div>
    <h2>Changes against its start</h2><p class="muted">Click a line to comment on it; "Send to agent" makes the comments required fixes for the packet's next fix round.</p>
    <div id="diff">${files.length ? diffHtml(files) : html`<p class="muted">${(data.diff && data.diff.note) || "no changes"}</p>`}</div>
    <div class="pending-bar" id="pending" ${comments.length ? "" : html`hidden`}><span id="pending-count">${comments.length} comment(s)</span>
    <button class="primary" id="send-comments">Send to agent</button></div>`;
  diffShown = files;
  const actEl = document.getElementById("activity"); actEl.scrollTop = actEl.scrollHeight;
  if (data.question) notify(`q-${run}-${id}-${data.question}`, `${id} asks: ${data.question}`);
  const answer = document.getElementById("answer");
  if (answer) answer.onclick = async () => {
    const r = await post(`/api/run/${encodeURIComponent(run)}/answer`, {packet: id, text: document.getElementById("answer-text").value});
    say(r.ok ? r.message : r.error, !r.ok); refresh();
  };
  document.querySelectorAll(".diff .line[data-line]").forEach(el => el.onclick = () => openComposer(el));
  document.getElementById("send-comments").onclick = async () => {
    const r = await post(`/api/run/${encodeURIComponent(run)}/comments`, {packet: id,
      comments: comments.map(c => ({file: c.file, line: c.line, code: c.code, text: c.text}))});
    say(r.ok ? r.message : r.error, !r.ok);
    if (r.ok) { comments = []; refresh(); }
  };
}
function openComposer(el) {
  document.querySelectorAll(".composer").forEach(c => c.remove());
  document.querySelectorAll(".line.selected").forEach(c => c.classList.remove("selected"));
  el.classList.add("selected");
  const fi = +el.dataset.fi, li = +el.dataset.li, f = diffShown[fi], l = f.lines[li];
  const box = document.createElement("div");
  box.className = "composer";
  box.innerHTML = `<textarea id="comment-text" rows="3" placeholder="what should change here?"></textarea>
    <div class="toolbar"><button class="primary" id="add-comment">Add comment</button><button id="cancel-comment">Cancel</button></div>`;
  el.after(box);
  document.getElementById("comment-text").focus();
  document.getElementById("cancel-comment").onclick = () => box.remove();
  document.getElementById("add-comment").onclick = () => {
    const text = document.getElementById("comment-text").value.trim();
    if (!text) return;
    comments.push({fi, li, file: f.name, line: l.old ? null : l.no, code: l.text.slice(1), text});
    box.remove();
    const c = document.createElement("div");
    c.className = "comment"; c.textContent = "💬 " + text;
    el.after(c);
    document.getElementById("pending").hidden = false;
    document.getElementById("pending-count").textContent = `${comments.length} comment(s)`;
  };
}

// ---------- routing and live updates ----------
function view() {
  const m = path.match(/^\/run\/([^/]+)$/), k = path.match(/^\/packet\/([^/]+)\/([^/]+)$/);
  if (m) return {key: decodeURIComponent(m[1]), show: () => showRun(decodeURIComponent(m[1]))};
  if (k) return {key: decodeURIComponent(k[1]), show: () => showPacket(decodeURIComponent(k[1]), decodeURIComponent(k[2]))};
  const e = path.match(/^\/eval\/([^/]+)$/);
  if (e) return {key: "", show: () => showEval(decodeURIComponent(e[1]))};
  if (path === "/evals") return {key: "", show: showEvals};
  return {key: "", show: showRuns};
}
const current = view();
async function refresh() {
  if (refreshing) { again = true; return; }
  refreshing = true;
  try { await current.show(); } catch (e) { say(`cannot update: ${e}`, true); }
  refreshing = false;
  if (again) { again = false; refresh(); }
}
// The server's events, read from a fetch (an EventSource cannot send the key), again half a
// second after the stream ends.
async function listen() {
  const live = document.getElementById("live");
  try {
    const r = await fetch(`/api/events/${encodeURIComponent(current.key)}`,
      {credentials: "same-origin", headers: {"X-Orchestra-Token": KEY}});
    if (!r.ok || !r.body) throw new Error(`HTTP ${r.status}`);
    live.classList.add("on");
    const reader = r.body.getReader(), decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const {done, value} = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, {stream: true});
      const frames = buffer.split("\n\n");
      buffer = frames.pop();
      if (frames.some(f => f.split("\n").some(l => l.startsWith("data:")))) refresh();
    }
  } catch (e) { /* the stream ended; follow it again below */ }
  live.classList.remove("on");
  setTimeout(listen, 500);
}
refresh();
listen();
// Elapsed times keep moving between events.
setInterval(() => { if (!document.activeElement || document.activeElement === document.body) refresh(); }, 5000);
