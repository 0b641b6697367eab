// squall ui: renders the cluster, topology and component pages from the JSON API
// (/api/v1/...), refreshing every few seconds with fetch() and keeping the scroll position.
"use strict";

const REFRESH_MS = 5000;
const WINDOWS = [["600", "10m"], ["10800", "3h"], ["86400", "1d"], [":all-time", "all time"]];
const NUM = new Intl.NumberFormat("en-US");
const LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR", "RESET"];
const state = { window: new URLSearchParams(location.search).get("window") || ":all-time",
                charts: {}, graph: null, timer: null };

function esc(value) {
  return String(value === null || value === undefined ? "" : value)
    .replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}
function num(value) { return NUM.format(Number(value || 0)); }
function ms(value) { return NUM.format(Number(Number(value || 0).toFixed(3))); }
// a latency percentile; null where its window has too few samples for one (a p99 under 100)
function pct(value) {
  if (value === undefined) return "";
  return value === null ? `<span class="muted" title="too few samples">n<100</span>` : ms(value);
}
// the samples a component's percentiles come from (blank where none are counted)
function samples(value) { return value === undefined ? "" : num(value); }
function when(secs) { return secs ? new Date(secs * 1000).toLocaleString() : ""; }
function link(href, text) {
  return href ? `<a href="${esc(href)}">${esc(text)}</a>` : esc(text);
}
function logLink(href) { return href ? `<a class="log" href="${esc(href)}">log</a>` : ""; }
function table(headers, rows, id) {
  const head = headers.map(h => `<th class="${h[1] || ""}">${esc(h[0])}</th>`).join("");
  const body = rows.map(r => "<tr>" + r.map((c, i) =>
    `<td class="${(headers[i] || [])[1] || ""}">${c}</td>`).join("") + "</tr>").join("");
  return `<table${id ? ` id="${id}"` : ""}><thead><tr>${head}</tr></thead>` +
         `<tbody>${body}</tbody></table>`;
}

// -- the API, with the bearer token when the cluster needs one --------------------------------
class AuthNeeded extends Error {}

async function api(path, options) {
  const headers = { "Accept": "application/json" };
  const token = sessionStorage.getItem("squall.token");
  if (token) headers["Authorization"] = "Bearer " + token;
  const response = await fetch("/api/v1/" + path, { ...(options || {}), headers:
                                 { ...headers, ...((options || {}).headers || {}) } });
  if (response.status === 401) throw new AuthNeeded((await response.json()).error);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function showLogin(message) {
  const form = document.getElementById("login");
  form.hidden = false;
  document.getElementById("login-error").textContent = message || "";
  form.onsubmit = event => {
    event.preventDefault();
    sessionStorage.setItem("squall.token", document.getElementById("token").value);
    form.hidden = true;
    refresh();
  };
}

// -- pages ------------------------------------------------------------------------------------
function route() {
  const parts = location.pathname.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "topology" && parts.length === 2) return { page: "topology", id: parts[1] };
  if (parts[0] === "topology" && parts[2] === "component" && parts.length === 4)
    return { page: "component", id: parts[1], component: parts[3] };
  return { page: "cluster" };
}

function windowButtons() {
  return `<p class="windows">window: ` + WINDOWS.map(([w, label]) =>
    `<button data-window="${w}" class="${w === state.window ? "on" : ""}">${label}</button>`)
    .join(" ") + `</p>`;
}

async function clusterPage(main) {
  const [cluster, nimbuses, topologies, supervisors, drpc] = await Promise.all([
    api("cluster/summary"), api("nimbus/summary"), api("topology/summary"),
    api("supervisor/summary"), api("drpc/summary")]);
  document.getElementById("crumbs").textContent = "cluster";
  main.innerHTML =
    "<h2>Cluster</h2>" +
    table([["version"], ["supervisors"], ["slots"], ["used"], ["free"], ["executors"],
           ["tasks"], ["topologies"]],
          [[esc(cluster.stormVersion), num(cluster.supervisors), num(cluster.slotsTotal),
            num(cluster.slotsUsed), num(cluster.slotsFree), num(cluster.executorsTotal),
            num(cluster.tasksTotal), num(cluster.topologies)]], "cluster-summary") +
    "<h2>Nimbus</h2>" +
    table([["host", "l"], ["port"], ["status", "l"]],
          nimbuses.nimbuses.map(n => [esc(n.host), esc(n.port), esc(n.status)])) +
    "<h2>Topologies</h2>" +
    table([["name", "l"], ["id", "l"], ["owner", "l"], ["status", "l"], ["uptime"],
           ["workers"], ["executors"], ["tasks"]],
          topologies.topologies.map(t => [
            link("/topology/" + encodeURIComponent(t.id), t.name), esc(t.id), esc(t.owner),
            esc(t.status) + (t.statusReason ? ` <span class="muted">(${esc(t.statusReason)})` +
                             "</span>" : ""),
            esc(t.uptime), num(t.workersTotal), num(t.executorsTotal), num(t.tasksTotal)]),
          "topologies") +
    "<h2>Supervisors</h2>" +
    table([["id", "l"], ["host", "l"], ["uptime"], ["slots"], ["used"]],
          supervisors.supervisors.map(s => [esc(s.id), esc(s.host), esc(s.uptime),
                                            num(s.slotsTotal), num(s.slotsUsed)]),
          "supervisors") +
    (drpc.functions.length ? "<h2>DRPC functions</h2>" +
      table([["server", "l"], ["function", "l"], ["waiting"], ["in flight"],
             ["last fetch (s ago)"]],
            drpc.functions.map(f => f.error
              ? [esc(f.server), `<span class="muted">${esc(f.error)}</span>`, "", "", ""]
              : [esc(f.server), esc(f.function), num(f.waiting), num(f.inFlight),
                 f.lastFetchSecsAgo < 0 ? "never" : ms(f.lastFetchSecsAgo)]),
            "drpc") : "");
}

function errorRows(errors, component, href) {
  return errors.map(e => [
    ...(component ? [link(href, component)] : []), esc(when(e.errorTime)),
    esc(e.errorHost) + (e.errorPort ? ":" + esc(e.errorPort) : ""), esc(e.task),
    logLink(e.errorWorkerLogLink), `<pre class="trace">${esc(e.error)}</pre>`]);
}

function statsRows(rows) {
  return rows.map(s => [esc(s.windowPretty), num(s.emitted), num(s.transferred),
                        ms(s.completeLatency), num(s.acked), num(s.failed)]);
}
function spoutStatsRows(rows) {
  return rows.map(s => [esc(s.windowPretty), num(s.emitted), num(s.transferred),
                        ms(s.completeLatency), pct(s.completeLatencyP50),
                        pct(s.completeLatencyP99), samples(s.completeLatencySamples),
                        num(s.acked), num(s.failed)]);
}

async function topologyPage(main, id) {
  const w = encodeURIComponent(state.window);
  const path = "topology/" + encodeURIComponent(id);
  const [t, viz, history] = await Promise.all([
    api(`${path}?window=${w}`), api(`${path}/visualization?window=${w}`),
    api(`${path}/history`)]);
  document.getElementById("crumbs").innerHTML = "/ topology " + esc(t.name);
  const topo = "/topology/" + encodeURIComponent(t.id);
  const errors = [];
  for (const [comp, list] of Object.entries(t.errors || {}))      // system components' too
    for (const row of errorRows(list, comp, `${topo}/component/${encodeURIComponent(comp)}`))
      errors.push([row, list]);
  if (!main.querySelector("#graph")) {
    main.innerHTML =
      `<div id="summary"></div><div class="actions" id="actions">` +
      `<button data-action="activate">activate</button> ` +
      `<button data-action="deactivate">deactivate</button> ` +
      `<form id="rebalance">rebalance: workers <input name="workers" type="number" min="1">` +
      ` executors <input name="executors" placeholder="comp=N,..." style="width:10em">` +
      ` wait s <input name="wait" type="number" min="0" value="0">` +
      ` <button type="submit">rebalance</button></form>` +
      `<form id="kill">kill, wait s <input name="wait" type="number" min="0" value="0">` +
      ` <button type="submit">kill</button></form>` +
      `<form id="debug">debug: component <input name="component" placeholder="all"` +
      ` style="width:7em"> sampling % <input name="pct" type="number" min="0.01" max="100"` +
      ` step="any" value="10"> <button type="submit" name="on">on</button>` +
      ` <button type="button" id="debug-off">off</button></form>` +
      `<form id="loglevel">log level: logger <input name="logger" value="ROOT"` +
      ` style="width:9em"> <select name="level">` +
      LEVELS.map(l => `<option>${l}</option>`).join("") + `</select> for s` +
      ` <input name="timeout" type="number" min="0" value="60">` +
      ` <button type="submit">set</button></form> <span id="action-result"></span></div>` +
      `<div id="windows"></div><h2>Topology stats</h2><div id="stats"></div>` +
      `<h2>Topology</h2><div id="graph"></div>` +
      `<h2>Throughput and latency</h2><div class="charts"><div class="chart">` +
      `<canvas id="chart-throughput"></canvas></div><div class="chart">` +
      `<canvas id="chart-latency"></canvas></div></div>` +
      `<h2>Spouts</h2><div id="spouts"></div><h2>Bolts</h2><div id="bolts"></div>` +
      `<h2>Workers</h2><div id="workers"></div><h2>Errors</h2><div id="errors"></div>` +
      `<h2>Configuration</h2><div id="configuration"></div>`;
    bindActions(main, t.id);
  }
  main.querySelector("#summary").innerHTML = table(
    [["name", "l"], ["id", "l"], ["owner", "l"], ["status", "l"], ["uptime"], ["workers"],
     ["executors"], ["tasks"], ["message timeout s"]],
    [[esc(t.name), esc(t.id), esc(t.owner), esc(t.status) + (t.statusReason ?
       ` <span class="muted">(${esc(t.statusReason)})</span>` : ""), esc(t.uptime),
      num(t.workersTotal), num(t.executorsTotal), num(t.tasksTotal), esc(t.msgTimeout)]],
    "topology-summary");
  main.querySelector("#windows").innerHTML = windowButtons();
  main.querySelector("#stats").innerHTML = table(
    [["window", "l"], ["emitted"], ["transferred"], ["complete latency ms"], ["acked"],
     ["failed"]], statsRows(t.topologyStats));
  main.querySelector("#spouts").innerHTML = table(
    [["id", "l"], ["executors"], ["tasks"], ["emitted"], ["transferred"],
     ["complete latency ms"], ["p50"], ["p99"], ["samples"], ["acked"], ["failed"],
     ["last error", "l"]],
    t.spouts.map(s => [link(`${topo}/component/${encodeURIComponent(s.spoutId)}`, s.spoutId),
                       num(s.executors), num(s.tasks), num(s.emitted), num(s.transferred),
                       ms(s.completeLatency), pct(s.completeLatencyP50),
                       pct(s.completeLatencyP99), samples(s.completeLatencySamples),
                       num(s.acked), num(s.failed),
                       esc((s.lastError || "").split("\n").pop())]), "spouts-table");
  main.querySelector("#bolts").innerHTML = table(
    [["id", "l"], ["executors"], ["tasks"], ["emitted"], ["transferred"], ["capacity"],
     ["execute latency ms"], ["p50"], ["p99"], ["samples"], ["executed"],
     ["process latency ms"], ["acked"], ["failed"], ["last error", "l"]],
    t.bolts.map(b => [link(`${topo}/component/${encodeURIComponent(b.boltId)}`, b.boltId),
                      num(b.executors), num(b.tasks), num(b.emitted), num(b.transferred),
                      `<span class="${Number(b.capacity) > 0.8 ? "hot" : ""}">` +
                      `${esc(b.capacity)}</span>`, ms(b.executeLatency),
                      pct(b.executeLatencyP50), pct(b.executeLatencyP99),
                      samples(b.executeLatencySamples), num(b.executed),
                      ms(b.processLatency), num(b.acked), num(b.failed),
                      esc((b.lastError || "").split("\n").pop())]), "bolts-table");
  main.querySelector("#workers").innerHTML = table(
    [["host", "l"], ["port"], ["supervisor", "l"], ["uptime"], ["executors"],
     ["components", "l"], ["log", "l"]],
    t.workers.map(x => [esc(x.host), esc(x.port), esc(x.supervisorId), esc(x.uptime),
                        num(x.executorsTotal), esc(Object.entries(x.componentNumTasks)
                          .map(([c, n]) => `${c}: ${n}`).join(", ")),
                        logLink(x.workerLogLink) + (x.workerLogLink ? " " +
                          `<a class="events" href="${esc(x.workerLogLink)}&file=events">` +
                          "events</a>" : "")]), "workers-table");
  main.querySelector("#errors").innerHTML = errors.length ? table(
    [["component", "l"], ["time", "l"], ["worker", "l"], ["task"], ["log", "l"],
     ["error", "l"]], errors.map(e => e[0]), "errors-table") : "<p class=muted>none</p>";
  main.querySelector("#configuration").innerHTML = table(
    [["key", "l"], ["value", "l"]],
    Object.keys(t.configuration).sort().map(k => [esc(k),
      esc(JSON.stringify(t.configuration[k]))]), "configuration-table");
  drawGraph(viz);
  drawCharts(history.topology, [["emitted", "emitted/s"], ["acked", "acked/s"],
                                ["failed", "failed/s"]],
             [["completeLatency", "complete latency ms (mean)"],
              ["completeLatencyP99", "complete latency ms (p99)"]]);
}

async function componentPage(main, id, component) {
  const w = encodeURIComponent(state.window);
  const path = `topology/${encodeURIComponent(id)}`;
  const [c, history] = await Promise.all([
    api(`${path}/component/${encodeURIComponent(component)}?window=${w}`),
    api(`${path}/history`)]);
  document.getElementById("crumbs").innerHTML =
    `/ topology ${link("/topology/" + encodeURIComponent(c.topologyId), c.name)}` +
    ` / ${esc(c.componentType)} ${esc(c.id)}`;
  if (!main.querySelector("#executors")) {
    main.innerHTML = `<div id="summary"></div><div id="windows"></div>` +
      `<h2>Stats</h2><div id="stats"></div>` +
      `<h2>Throughput and latency</h2><div class="charts"><div class="chart">` +
      `<canvas id="chart-throughput"></canvas></div><div class="chart">` +
      `<canvas id="chart-latency"></canvas></div></div>` +
      `<h2>Executors</h2><div id="executors"></div><h2>Errors</h2><div id="errors"></div>`;
  }
  const spout = c.componentType === "spout";
  main.querySelector("#summary").innerHTML = table(
    [["component", "l"], ["type", "l"], ["topology", "l"], ["status", "l"], ["executors"],
     ["tasks"]],
    [[esc(c.id), esc(c.componentType), esc(c.name), esc(c.topologyStatus), num(c.executors),
      num(c.tasks)]], "component-summary");
  main.querySelector("#windows").innerHTML = windowButtons();
  const perWindow = spout ? c.spoutSummary : c.boltStats;
  main.querySelector("#stats").innerHTML = spout ? table(
    [["window", "l"], ["emitted"], ["transferred"], ["complete latency ms"], ["p50"], ["p99"],
     ["samples"], ["acked"], ["failed"]], spoutStatsRows(perWindow)) : table(
    [["window", "l"], ["emitted"], ["transferred"], ["capacity"], ["execute latency ms"],
     ["p50"], ["p99"], ["samples"], ["executed"], ["process latency ms"], ["acked"],
     ["failed"]],
    perWindow.map(s => [esc(s.windowPretty), num(s.emitted), num(s.transferred),
                        esc(s.capacity), ms(s.executeLatency), pct(s.executeLatencyP50),
                        pct(s.executeLatencyP99), samples(s.executeLatencySamples),
                        num(s.executed),
                        ms(s.processLatency), num(s.acked), num(s.failed)]));
  main.querySelector("#executors").innerHTML = table(
    [["executor", "l"], ["host", "l"], ["port"], ["uptime"], ["emitted"], ["transferred"],
     ...(spout ? [["complete latency ms"], ["p99"], ["samples"]]
              : [["capacity"], ["execute latency ms"], ["p99"], ["samples"], ["executed"],
                 ["process latency ms"]]),
     ["acked"], ["failed"], ["log", "l"]],
    c.executorStats.map(x => [esc(x.id), esc(x.host), esc(x.port), esc(x.uptime),
                              num(x.emitted), num(x.transferred),
                              ...(spout ? [ms(x.completeLatency),
                                           pct(x.completeLatencyP99),
                                           samples(x.completeLatencySamples)]
                                        : [esc(x.capacity), ms(x.executeLatency),
                                           pct(x.executeLatencyP99),
                                           samples(x.executeLatencySamples), num(x.executed),
                                           ms(x.processLatency)]),
                              num(x.acked), num(x.failed), logLink(x.workerLogLink)]),
    "executors-table");
  main.querySelector("#errors").innerHTML = c.componentErrors.length ? table(
    [["time", "l"], ["worker", "l"], ["task"], ["log", "l"], ["error", "l"]],
    errorRows(c.componentErrors, null), "errors-table") : "<p class=muted>none</p>";
  const series = (history.components || {})[c.id] || [];
  drawCharts(series, spout ? [["emitted", "emitted/s"], ["acked", "acked/s"],
                              ["failed", "failed/s"]]
                           : [["executed", "executed/s"], ["emitted", "emitted/s"]],
             spout ? [["complete_latency_ms", "complete latency ms (mean)"],
                      ["complete_latency_p99_ms", "complete latency ms (p99)"]]
                   : [["execute_latency_ms", "execute latency ms (mean)"],
                      ["execute_latency_p99_ms", "execute latency ms (p99)"],
                      ["process_latency_ms", "process latency ms (mean)"]]);
}

// -- the picture of the topology -------------------------------------------------------------
// A component shows what it emits per second (all its streams); an edge its grouping, its
// stream unless "default", and tuples per second where the API counts that edge alone (its
// ":rate"; null where no counter holds the edge's tuples apart from others).
function drawGraph(viz) {
  const elements = [];
  for (const [id, node] of Object.entries(viz)) {
    elements.push({ data: { id: "n:" + id, label: `${id}\n${node[":type"]} ×` +
                            `${node[":executors"]}\ncapacity ${node[":capacity"].toFixed(3)}` +
                            `\nemits ${NUM.format(node[":rate"].toFixed(1))}/s`,
                            kind: node[":type"] } });
  }
  for (const [id, node] of Object.entries(viz)) {
    for (const input of node[":inputs"]) {
      if (!viz[input[":component"]]) continue;
      const rate = input[":rate"];
      const stream = input[":stream"] === "default" ? "" : ` ${input[":stream"]}`;
      elements.push({ data: { id: `e:${input[":component"]}:${input[":stream"]}:${id}`,
                              source: "n:" + input[":component"], target: "n:" + id,
                              label: `${input[":grouping"]}${stream}` +
                                (typeof rate === "number" ?
                                  ` · ${NUM.format(rate.toFixed(1))}/s` : "") } });
    }
  }
  const key = elements.map(e => e.data.id).join("|");
  if (state.graph && state.graph.key === key) {      // same shape: new labels only
    for (const e of elements) state.graph.cy.getElementById(e.data.id).data("label", e.data.label);
    return;
  }
  if (state.graph) state.graph.cy.destroy();
  const cy = cytoscape({
    container: document.getElementById("graph"), elements,
    userZoomingEnabled: false, boxSelectionEnabled: false,
    layout: { name: "breadthfirst", directed: true, spacingFactor: 1.2, padding: 20 },
    style: [
      { selector: "node", style: { "label": "data(label)", "text-wrap": "wrap",
          "text-valign": "center", "shape": "round-rectangle", "width": 150, "height": 72,
          "background-color": "#dbe7f5", "border-width": 1, "border-color": "#1f3a5f",
          "font-size": 11 } },
      { selector: "node[kind = 'spout']", style: { "background-color": "#c9f0d0" } },
      { selector: "edge", style: { "label": "data(label)", "curve-style": "bezier",
          "target-arrow-shape": "triangle", "width": 2, "line-color": "#7a8ca3",
          "target-arrow-color": "#7a8ca3", "font-size": 10, "text-background-color": "#fff",
          "text-background-opacity": 1 } }]});
  cy.on("tap", "node", evt => {
    location.href = location.pathname.replace(/\/$/, "") + "/component/" +
      encodeURIComponent(evt.target.id().slice(2));
  });
  state.graph = { cy, key };
}

// -- charts of the UI's history --------------------------------------------------------------
function drawCharts(points, rates, latencies) {
  const labels = points.map(p => new Date(p.time * 1000).toLocaleTimeString());
  const colors = ["#1f77b4", "#2ca02c", "#d62728", "#9467bd"];
  for (const [name, series] of [["throughput", rates], ["latency", latencies]]) {
    const datasets = series.map(([key, label], i) => ({
      // a null percentile (too few samples) is a gap, not a zero
      label, data: points.map(p => p[key] === null ? null : p[key] || 0), borderColor: colors[i],
      backgroundColor: colors[i], pointRadius: 0, tension: 0.2 }));
    const chart = state.charts[name];
    if (chart) {
      chart.data.labels = labels;
      chart.data.datasets = datasets;
      chart.update("none");
      continue;
    }
    state.charts[name] = new Chart(document.getElementById("chart-" + name), {
      type: "line", data: { labels, datasets },
      options: { animation: false, maintainAspectRatio: false,
                 scales: { y: { beginAtZero: true } },
                 plugins: { title: { display: true,
                   text: name === "throughput" ? "tuples per second" : "latency (ms)" } } } });
  }
}

// -- actions ---------------------------------------------------------------------------------
// the rebalance form's executors, "split=4, count=2" -> {split: 4, count: 2}: each item ends
// in "=N", so a component id with "," or "=" is named too ("a,b=2, a=b=3"); Error naming what
// is not COMPONENT=N
function parseExecutors(text) {
  const executors = Object.create(null);
  const item = /[\s,]*(.+?)\s*=\s*(\d+)\s*(?:,|$)/y;
  let at = 0;
  while (/[^\s,]/.test(text.slice(at))) {
    item.lastIndex = at;
    const match = item.exec(text);
    if (match === null)
      throw new Error(`bad executors entry ${text.slice(at).replace(/^[\s,]+/, "")}: ` +
                      "expected comp=N,...");
    if (match[1] in executors) throw new Error(`executors names ${match[1]} twice`);
    executors[match[1]] = Number(match[2]);
    at = item.lastIndex;
  }
  return executors;
}

function bindActions(main, id) {
  const path = "topology/" + encodeURIComponent(id);
  const result = main.querySelector("#action-result");
  async function post(action, body) {
    try {
      const reply = await api(`${path}/${action}`, { method: "POST", body: body ?
        JSON.stringify(body) : "", headers: { "Content-Type": "application/json" } });
      result.textContent = [`${reply.topologyOperation}: ${reply.status}`,
                            ...(reply.notes || []).map(note => `note: ${note}`)].join("; ");
      result.className = "";
      if (action.startsWith("kill")) location.href = "/";
      else refresh();
    } catch (err) {
      result.textContent = err.message;
      result.className = "err";
    }
  }
  for (const button of main.querySelectorAll("button[data-action]"))
    button.onclick = () => post(button.dataset.action);
  main.querySelector("#rebalance").onsubmit = event => {
    event.preventDefault();
    const form = event.target;
    let executors;
    try {
      executors = parseExecutors(form.executors.value);
    } catch (err) {
      result.textContent = err.message;
      result.className = "err";
      return;
    }
    const options = { executors };
    if (form.workers.value) options.numWorkers = Number(form.workers.value);
    post(`rebalance/${Number(form.wait.value || 0)}`, { rebalanceOptions: options });
  };
  function debugPath(form, action) {
    const comp = form.component.value.trim();
    return (comp ? `component/${encodeURIComponent(comp)}/` : "") +
           `debug/${action}/${Number(form.pct.value || 100)}`;
  }
  main.querySelector("#debug").onsubmit = event => {
    event.preventDefault();
    post(debugPath(event.target, "enable"));
  };
  main.querySelector("#debug-off").onclick = () =>
    post(debugPath(main.querySelector("#debug"), "disable"));
  main.querySelector("#loglevel").onsubmit = event => {
    event.preventDefault();
    const form = event.target;
    post("logconfig", { namedLoggerLevels: { [form.logger.value.trim() || "ROOT"]: {
      target_level: form.level.value, timeout: Number(form.timeout.value || 0) } } });
  };
  main.querySelector("#kill").onsubmit = event => {
    event.preventDefault();
    if (confirm(`Kill topology ${id}?`)) post(`kill/${Number(event.target.wait.value || 0)}`);
  };
}

// -- the refresh loop ------------------------------------------------------------------------
let refreshing = false;
async function refresh() {
  if (refreshing) return;
  refreshing = true;
  const main = document.getElementById("main");
  const scroll = [window.scrollX, window.scrollY];
  const status = document.getElementById("status");
  try {
    const r = route();
    if (r.page === "topology") await topologyPage(main, r.id);
    else if (r.page === "component") await componentPage(main, r.id, r.component);
    else await clusterPage(main);
    status.textContent = "updated " + new Date().toLocaleTimeString();
    status.className = "muted";
    main.dataset.loaded = "1";
  } catch (err) {
    if (err instanceof AuthNeeded) showLogin(err.message);
    else { status.textContent = err.message; status.className = "err"; }
  } finally {
    window.scrollTo(scroll[0], scroll[1]);
    refreshing = false;
  }
}

document.addEventListener("click", event => {
  const button = event.target.closest("button[data-window]");
  if (!button) return;
  state.window = button.dataset.window;
  const url = new URL(location.href);
  url.searchParams.set("window", state.window);
  history.replaceState(null, "", url);
  refresh();
});

refresh();
state.timer = setInterval(refresh, REFRESH_MS);
