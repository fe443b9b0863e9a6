/* hpcbench results browser.
 *
 * One page, two data sources: served by `hpcbench view` it fetches api/index.json and
 * api/sub/<id>.json; written by `hpcbench report --format html` it reads data/index.js and
 * data/sub/<shard>.js through <script> tags (file:// pages may not fetch). Every text from a
 * campaign is set with textContent, never parsed as HTML: program output and agent source
 * are data. Clicking a number shows the `hpcbench explain` command that re-derives it. */
"use strict";
(function () {
  const HPCB = window.HPCB = window.HPCB || {};
  const MODE = window.HPCB_MODE || "static";
  const PAGE = 100;
  let INDEX = null;
  const details = {};
  const waiting = {};

  // ---------------------------------------------------------------- data
  HPCB.index = function (data) { INDEX = data; };
  HPCB.details = function (batch) {
    for (const id of Object.keys(batch)) {
      details[id] = batch[id];
      (waiting[id] || []).forEach(f => f(batch[id]));
      delete waiting[id];
    }
  };
  function loadIndex() {
    if (MODE === "server") return fetch("api/index.json").then(r => r.json()).then(d => (INDEX = d));
    return Promise.resolve(INDEX);
  }
  function loadDetail(id) {
    if (details[id]) return Promise.resolve(details[id]);
    if (MODE === "server") {
      return fetch("api/sub/" + id + ".json").then(r => {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.json();
      }).then(d => (details[id] = d));
    }
    if (INDEX.details !== "static" || id >= INDEX.details_written) {
      return Promise.reject(new Error("details of this submission are not in this static report (" +
        INDEX.details_note + "); open it with: hpcbench view " + INDEX.campaign_dir));
    }
    return new Promise((resolve, reject) => {
      (waiting[id] = waiting[id] || []).push(resolve);
      const s = document.createElement("script");
      s.src = "data/sub/" + Math.floor(id / INDEX.shard) + ".js";
      s.onerror = () => reject(new Error("cannot load " + s.src));
      document.head.appendChild(s);
    });
  }

  // ---------------------------------------------------------------- DOM helpers
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "onclick" || k === "onchange" || k === "oninput") e[k] = v;
      else if (k === "text") e.textContent = v;
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const kid of kids.flat()) {
      if (kid === null || kid === undefined || kid === false) continue;
      e.appendChild(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return e;
  }
  function fmt(x, nd) {
    if (x === null || x === undefined || (typeof x === "number" && isNaN(x))) return "–";
    if (typeof x === "number") return x.toFixed(nd === undefined ? 2 : nd);
    if (typeof x === "boolean") return x ? "yes" : "no";
    return String(x);
  }
  function explain(path) {
    const bar = document.getElementById("explain");
    bar.textContent = "re-derive: hpcbench explain " + INDEX.campaign_dir + " " + path;
    bar.className = "on";
  }
  function numCell(value, nd, source) {
    const td = el("td", {class: source ? "num src" : "num", text: fmt(value, nd)});
    if (source) {
      td.title = "source: " + source + "\nclick: the command that re-derives it";
      td.dataset.source = source;
      td.onclick = (ev) => { ev.stopPropagation(); explain(source); };
    }
    return td;
  }
  function tierCell(tier) { return el("td", {class: tier || "", text: tier || "–"}); }
  function table(head, rows, cls) {
    return el("div", {class: "wrap"}, el("table", {class: cls || ""},
      el("thead", {}, el("tr", {}, head.map(h => el("th", {text: h})))), el("tbody", {}, rows)));
  }

  // ---------------------------------------------------------------- summary page
  function col(name) { return INDEX.columns.indexOf(name); }
  function summary(root, query) {
    root.appendChild(el("h2", {text: "Campaign " + INDEX.campaign + ", scoring " + INDEX.scoring}));
    const prov = el("div", {class: "kv"});
    for (const [k, v] of Object.entries(INDEX.provenance)) prov.append(el("span", {class: "muted", text: k}), el("span", {text: String(v)}));
    root.appendChild(prov);
    if (INDEX.warning) root.appendChild(el("p", {class: "warn", text: INDEX.warning}));
    if (INDEX.errors && INDEX.errors.length) {
      root.appendChild(el("h2", {text: "Not generated: infrastructure errors (not scored)"}));
      root.appendChild(el("p", {class: "muted", text: "Never made or never came back (no key, outage, quota): on no leaderboard. " +
        "Fix the cause, then: hpcbench retry " + INDEX.campaign_dir}));
      root.appendChild(table(["agent", "problem", "attempt", "kind", "cause"], INDEX.errors.map(e =>
        el("tr", {}, ["agent", "problem", "attempt", "kind", "cause"].map(k => el("td", {text: e[k] || ""}))))));
    }
    root.appendChild(el("h2", {text: "How scores are made"}));
    root.appendChild(el("p", {class: "muted", text: "Composite = 100 x weighted sum of category scores (weights: " +
      Object.entries(INDEX.weights).map(([k, v]) => k + " " + v).join(", ") + "). Tiers: " +
      INDEX.tiers.map(t => t.tier + " >= " + t.min).join(", ") + ", only for programs that pass every gate and every hidden check."}));
    leaderboardSection(root);
    heatmap(root);
    const section = el("section", {id: "subs-section"});
    root.appendChild(section);
    submissionsTable(section, query);
  }

  const LB_SHOWN = 40;
  let showAllAgents = false;
  const LB_KNOWN = ["agent", "submissions", "composite_mean", "composite_std", "gate_pass_rate", "partial", "source", "explain"];
  function leaderboardSection(root) {
    const lb = INDEX.leaderboard || [];
    if (!lb.length) return;
    root.appendChild(el("h2", {text: "Leaderboard"}));
    const extra = [...new Set(lb.flatMap(r => Object.keys(r)))].filter(k => !LB_KNOWN.includes(k) &&
      !INDEX.categories.includes(k) && lb.every(r => r[k] === null || r[k] === undefined || typeof r[k] !== "object"));
    const head = ["agent", "n", "composite", "spread", "gate pass", ...INDEX.categories, ...extra];
    const shown = lb.length > LB_SHOWN && !showAllAgents ? lb.slice(0, LB_SHOWN) : lb;
    const rows = shown.map(r => el("tr", {},
      el("td", {text: r.agent}), numCell(r.submissions, 0, r.source), numCell(r.composite_mean, 1, r.source + "@composite_mean"),
      numCell(r.composite_std, 1, r.source + "@composite_std"), numCell(r.gate_pass_rate, 2, r.source + "@gate_pass_rate"),
      INDEX.categories.map(c => numCell(r[c], 2, r.source + "@" + c)),
      extra.map(k => numCell(r[k], 2, r.source + "@" + k))));
    root.appendChild(table(head, rows, "leaderboard"));
    if (shown.length < lb.length) {
      root.appendChild(el("p", {}, el("button", {text: "show all " + lb.length + " agents",
        onclick: () => { showAllAgents = true; route(true); }}), el("span", {class: "muted", text: " (the first " + LB_SHOWN + " by mean composite are shown)"})));
    }
    root.appendChild(leaderboardChart(shown));
  }
  function interval(r) {
    const lo = r.composite_ci_low ?? (Array.isArray(r.composite_ci) ? r.composite_ci[0] : null);
    const hi = r.composite_ci_high ?? (Array.isArray(r.composite_ci) ? r.composite_ci[1] : null);
    return (typeof lo === "number" && typeof hi === "number") ? [lo, hi] : null;
  }
  function svg(tag, attrs, ...kids) {
    const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    kids.forEach(k => e.appendChild(typeof k === "string" ? document.createTextNode(k) : k));
    return e;
  }
  function leaderboardChart(lb) {
    const W = 640, rowH = 22, left = 170, H = lb.length * rowH + 30, x = v => left + (W - left - 20) * v / 100;
    const g = svg("svg", {width: W, height: H, class: "chart", role: "img", "aria-label": "mean composite per agent"});
    for (let t = 0; t <= 100; t += 25) {
      g.appendChild(svg("line", {x1: x(t), x2: x(t), y1: 5, y2: H - 20, stroke: "#e3e8ee"}));
      g.appendChild(svg("text", {x: x(t) - 6, y: H - 6}, String(t)));
    }
    lb.forEach((r, i) => {
      const y = 15 + i * rowH, m = r.composite_mean, ci = interval(r);
      g.appendChild(svg("text", {x: 5, y: y + 4}, r.agent.slice(0, 24)));
      if (typeof m !== "number") { g.appendChild(svg("text", {x: left, y: y + 4, fill: "#888"}, "not scored")); return; }
      if (ci) g.appendChild(svg("line", {x1: x(ci[0]), x2: x(ci[1]), y1: y, y2: y, stroke: "#1f3350", "stroke-width": 2}));
      else g.appendChild(svg("rect", {x: left, y: y - 6, width: x(m) - left, height: 12, fill: "#b9cbe6"}));
      g.appendChild(svg("circle", {cx: x(m), cy: y, r: 4, fill: "#1f3350"}));
    });
    return g;
  }
  function heatmap(root) {
    const ia = col("agent"), ip = col("problem"), ic = col("composite");
    const agents = [...new Set(INDEX.rows.map(r => r[ia]))].sort();
    const problems = [...new Set(INDEX.rows.map(r => r[ip]))].sort();
    if (agents.length * problems.length > 4000) return;  // a table of that size says nothing at a glance
    const cell = {};
    for (const r of INDEX.rows) {
      const k = r[ia] + "\u0000" + r[ip];
      (cell[k] = cell[k] || []).push(r[ic]);
    }
    root.appendChild(el("h2", {text: "Mean composite per agent and problem"}));
    root.appendChild(el("p", {class: "muted", text: "Click a cell to list its submissions. Hatched: no scored attempt (refusal set, no reference) - not the same as 0."}));
    const rows = agents.map(a => el("tr", {}, el("th", {text: a}), problems.map(p => {
      const vals = (cell[a + "\u0000" + p] || []);
      const scored = vals.filter(v => typeof v === "number");
      if (!vals.length) return el("td", {class: "muted", text: ""});
      if (!scored.length) return el("td", {class: "muted", style: "background:repeating-linear-gradient(45deg,#eee,#eee 4px,#fff 4px,#fff 8px)", text: "n/s",
        title: vals.length + " attempt(s), none scored", onclick: () => go({agent: a, problem: p})});
      const m = scored.reduce((s, v) => s + v, 0) / scored.length;
      const hue = Math.round(m * 1.2);  // 0 red .. 120 green
      return el("td", {class: "num", style: "cursor:pointer;background:hsl(" + hue + ",70%,82%)", text: m.toFixed(0),
        title: a + " on " + p + ": mean of " + scored.length + " attempt(s)", onclick: () => go({agent: a, problem: p})});
    })));
    root.appendChild(table(["agent \\ problem", ...problems], rows, "heatmap"));
  }

  // ---------------------------------------------------------------- submissions table
  const FILTERS = ["agent", "problem", "tier", "stage"];
  function go(q) {
    const parts = Object.entries(q).filter(([, v]) => v !== "" && v !== undefined && v !== null)
      .map(([k, v]) => k + "=" + encodeURIComponent(v));
    location.hash = "#/?" + parts.join("&");
  }
  const SELECT_MAX = 300;
  const distinctCache = {}, datalists = {};
  function distinct(f) {
    if (!distinctCache[f]) distinctCache[f] = [...new Set(INDEX.rows.map(r => r[col(f)]))].filter(v => v !== null && v !== "").sort();
    return distinctCache[f];
  }
  function datalist(f, values) {
    if (!datalists[f]) datalists[f] = el("datalist", {id: "dl-" + f}, values.map(v => el("option", {value: v})));
    return datalists[f];
  }
  function filtered(query) {
    const text = (query.q || "").toLowerCase();
    let rows = INDEX.rows.filter(r => FILTERS.every(f => !query[f] || String(r[col(f)]) === query[f]));
    if (text) {
      const cols = ["agent", "problem", "stop_reason", "status", "failed_gate", "tier"].map(col);
      rows = rows.filter(r => cols.some(i => String(r[i] ?? "").toLowerCase().includes(text)));
    }
    if (query.sort) {
      const i = col(query.sort), dir = query.dir === "desc" ? -1 : 1;
      rows = rows.slice().sort((a, b) => {
        const x = a[i], y = b[i];
        if (x === y) return 0;
        if (x === null || x === undefined) return 1;
        if (y === null || y === undefined) return -1;
        return (x < y ? -1 : 1) * dir;
      });
    }
    return rows;
  }
  function submissionsTable(root, query) {
    root.appendChild(el("h2", {text: "Submissions"}));
    const bar = el("div", {class: "filters"});
    for (const f of FILTERS) {
      const values = distinct(f);
      if (values.length <= SELECT_MAX) {
        const sel = el("select", {id: "f-" + f, onchange: () => go({...current(), [f]: sel.value, page: 0})},
          el("option", {value: "", text: "all " + f + "s"}), values.map(v => el("option", {value: v, text: v})));
        sel.value = query[f] || "";
        bar.appendChild(sel);
      } else {  // thousands of agents: type a name (suggestions from a datalist), exact match
        const box = el("input", {id: "f-" + f, list: "dl-" + f, placeholder: "any " + f + " (" + values.length + ")",
          value: query[f] || "", size: 18});
        box.onchange = () => go({...current(), [f]: box.value, page: 0});
        bar.append(box, datalist(f, values));
      }
    }
    const search = el("input", {id: "f-q", type: "search", placeholder: "search reason, status, names", value: query.q || ""});
    search.onchange = () => go({...current(), q: search.value, page: 0});
    bar.appendChild(search);
    bar.appendChild(el("button", {text: "clear", onclick: () => go({})}));
    root.appendChild(bar);
    const rows = filtered(query);
    const last = Math.floor(Math.max(0, rows.length - 1) / PAGE);
    const page = Math.max(0, Math.min(+query.page || 0, last));
    const at = () => Math.max(0, Math.min(+current().page || 0, last));
    const shown = rows.slice(page * PAGE, page * PAGE + PAGE);
    const pager = el("div", {class: "pager"},
      el("span", {id: "count", text: rows.length + " of " + INDEX.rows.length + " submissions"}),
      el("button", {text: "< prev", disabled: page === 0 ? true : null, onclick: () => go({...current(), page: Math.max(0, at() - 1)})}),
      el("span", {text: "page " + (page + 1) + " of " + Math.max(1, Math.ceil(rows.length / PAGE))}),
      el("button", {text: "next >", disabled: (page + 1) * PAGE >= rows.length ? true : null, onclick: () => go({...current(), page: Math.min(last, at() + 1)})}));
    root.appendChild(pager);
    const cols = ["agent", "problem", "attempt", "tier", "composite", "stage", "stop_reason", "build_s", "run_s", ...INDEX.categories];
    const head = el("tr", {}, cols.map(c => {
      const th = el("th", {class: "sortable" + (query.sort === c ? " sorted-" + (query.dir || "asc") : ""), text: c.replace("_", " "),
        "data-col": c});
      th.onclick = () => {
        const now = current();
        go({...now, sort: c, dir: now.sort === c && now.dir !== "desc" ? "desc" : "asc", page: 0});
      };
      return th;
    }));
    const body = shown.map(r => {
      const tr = el("tr", {class: "row", "data-id": r[0], onclick: () => { location.hash = "#/sub/" + r[0]; }},
        cols.map(c => {
          const v = r[col(c)];
          if (c === "tier") return tierCell(v);
          if (c === "composite") return numCell(v, 1, r[col("source")]);
          if (typeof v === "number" || v === null) return numCell(v, c.endsWith("_s") ? 2 : 2);
          return el("td", {text: v === undefined ? "" : String(v)});
        }));
      return tr;
    });
    root.appendChild(el("div", {class: "wrap"}, el("table", {class: "subs", id: "subs"}, el("thead", {}, head), el("tbody", {}, body))));
  }

  // ---------------------------------------------------------------- one submission
  function submissionPage(root, id) {
    root.appendChild(el("p", {}, el("a", {href: "#/", text: "< all submissions"})));
    const holder = el("div", {id: "detail", text: "loading..."});
    root.appendChild(holder);
    loadDetail(id).then(d => { holder.textContent = ""; renderDetail(holder, d); },
      e => { holder.textContent = String(e.message || e); holder.className = "warn"; });
  }
  function renderDetail(root, d) {
    const s = d.score || {};
    root.appendChild(el("h2", {text: d.agent + " / " + d.problem + " / attempt " + d.attempt}));
    root.appendChild(el("div", {class: "cards"},
      el("div", {class: "card"}, "composite ", el("strong", {id: "composite", text: fmt(s.composite, 1)})),
      el("div", {class: "card"}, "tier ", el("strong", {class: s.tier || "", text: s.tier || "–"})),
      el("div", {class: "card"}, "status ", el("strong", {text: d.status || "–"})),
      s.failed_gate ? el("div", {class: "card fail"}, "failed gate: " + s.failed_gate) : null));
    evaluatorsSection(root, d);
    timingsSection(root, d);
    const rec = d.record;
    if (rec) {
      runsSection(root, rec);
      if (rec.build) {
        root.appendChild(el("h2", {text: "Build"}));
        root.appendChild(el("p", {}, el("code", {text: rec.build.command || ""}), " exit " + rec.build.exit_code +
          ", " + fmt(rec.build.wall_s, 2) + " s"));
        for (const st of ["stdout", "stderr"]) if (rec.build[st]) root.appendChild(el("details", {}, el("summary", {text: "build " + st}), el("pre", {text: rec.build[st]})));
      }
    } else {
      root.appendChild(el("p", {class: "muted", text: "No job record (" + (d.status || "not run") + ")."}));
    }
    root.appendChild(el("h2", {text: "Sources (as submitted; agent-written, shown as text)"}));
    for (const [name, text] of Object.entries(d.sources || {})) {
      const pre = el("pre", {class: "code"});
      text.split("\n").forEach(line => pre.appendChild(el("span", {class: "l", text: line})));
      root.appendChild(el("details", {open: Object.keys(d.sources).length === 1 ? true : null}, el("summary", {text: name}), pre));
    }
  }
  function evaluatorsSection(root, d) {
    root.appendChild(el("h2", {text: "Evaluators"}));
    const rows = (d.evaluators || []).map(e => el("tr", {},
      el("td", {text: e.name}), el("td", {text: e.stage + " / " + e.category}),
      numCell(e.score, 2, e.source + "@score"),
      numCell(e.status === "unscored" ? null : e.confidence, 2, e.source + "@confidence"),
      el("td", {class: e.status === "unscored" ? "muted" : "", text: e.status}),
      el("td", {}, el("div", {text: e.rationale || ""}),
        e.evidence ? el("details", {}, el("summary", {text: "evidence (" + (e.method || "") + ")"}), el("pre", {text: JSON.stringify(e.evidence, null, 1)})) : null)));
    root.appendChild(table(["evaluator", "stage / category", "score", "confidence", "status", "rationale and evidence"], rows, "evaluators"));
  }
  function timingsSection(root, d) {
    const mine = (d.record && d.record.timings) || [];
    if (!mine.length) return;
    root.appendChild(el("h2", {text: "Execution time against the reference (same campaign, same site)"}));
    const ref = {};
    for (const t of d.reference_timings || []) ref[t.case + "/" + t.ranks] = t;
    const rows = mine.map(t => {
      const r = ref[t.case + "/" + t.ranks];
      return el("tr", {}, el("td", {text: t.case}), numCell(t.ranks, 0), numCell(t.exec_s, 4), el("td", {text: t.exec_source || ""}),
        numCell(r ? r.exec_s : null, 4), numCell(r && r.exec_s > 0 ? t.exec_s / r.exec_s : null, 2), numCell(t.repeats, 0));
    });
    root.appendChild(table(["case", "ranks", "seconds", "clock", "reference s", "ratio", "repeats"], rows, "timings"));
    const W = 560, rowH = 30, H = mine.length * rowH + 20, left = 130;
    const max = Math.max(...mine.map(t => t.exec_s || 0), ...mine.map(t => (ref[t.case + "/" + t.ranks] || {}).exec_s || 0), 1e-9);
    const g = svg("svg", {width: W, height: H, class: "chart", role: "img", "aria-label": "seconds against the reference"});
    mine.forEach((t, i) => {
      const y = 10 + i * rowH, r = ref[t.case + "/" + t.ranks], w = v => (W - left - 60) * v / max;
      g.appendChild(svg("text", {x: 5, y: y + 12}, (t.case + " r" + t.ranks).slice(0, 20)));
      g.appendChild(svg("rect", {x: left, y: y, width: w(t.exec_s || 0), height: 10, fill: "#1f3350"}));
      g.appendChild(svg("text", {x: left + w(t.exec_s || 0) + 4, y: y + 9}, fmt(t.exec_s, 3) + " s"));
      if (r) {
        g.appendChild(svg("rect", {x: left, y: y + 12, width: w(r.exec_s || 0), height: 8, fill: "#b9cbe6"}));
        g.appendChild(svg("text", {x: left + w(r.exec_s || 0) + 4, y: y + 20, fill: "#555"}, "ref " + fmt(r.exec_s, 3)));
      }
    });
    root.appendChild(g);
  }
  function runsSection(root, rec) {
    root.appendChild(el("h2", {text: "Runs"}));
    root.appendChild(el("p", {class: "muted", text: "Program output below is what the program printed: evidence, shown as text."}));
    const rows = [];
    (rec.runs || []).forEach((r, i) => {
      const ok = r.exit_code === 0 && !r.timed_out;
      rows.push(el("tr", {},
        el("td", {text: r.kind + (r.kind === "timing" ? " #" + r.repeat : "")}), el("td", {text: r.case}), numCell(r.ranks, 0),
        el("td", {class: ok ? "pass" : "fail", text: (r.timed_out ? "timed out" : "exit " + r.exit_code) + (r.stopped_reason ? " (" + r.stopped_reason + ")" : "")}),
        numCell(r.wall_s, 3), numCell(r.log_view && r.log_view.total_time_s, 4),
        el("td", {}, runDetails(r, i))));
    });
    root.appendChild(table(["run", "case", "ranks", "exit", "wall s", "PETSc s", "command, output, events"], rows, "runs"));
  }
  function runDetails(r, i) {
    const box = el("details", {}, el("summary", {text: "run " + i}));
    box.appendChild(el("pre", {text: (r.command || []).join(" ")}));
    if (r.stdout) box.appendChild(el("details", {}, el("summary", {text: "stdout" + (r.stdout_cut_here || r.stdout_truncated ? " (cut)" : "")}), el("pre", {text: r.stdout})));
    if (r.stderr) box.appendChild(el("details", {}, el("summary", {text: "stderr" + (r.stderr_cut_here || r.stderr_truncated ? " (cut)" : "")}), el("pre", {text: r.stderr})));
    const ev = (r.log_view && r.log_view.events) || [];
    if (ev.length) {
      const rows = ev.map(e => el("tr", {}, el("td", {text: (e.path ? e.path + "/" : "") + e.name}), numCell(e.time_s, 4),
        numCell(e.time_pct, 1), numCell(e.time_max_ratio, 2), numCell(e.mflops, 0)));
      box.appendChild(el("details", {}, el("summary", {text: "-log_view: " + ev.length + " of " + (r.log_view.events_total || ev.length) + " events"}),
        table(["event", "s", "%", "max/min", "Mflop/s"], rows)));
    }
    return box;
  }

  // ---------------------------------------------------------------- routing
  // Every control of the table reads the hash as it is when clicked, not the query the table was
  // drawn with: a second click (two "next >", a sort then a filter) can come before the redraw,
  // and would have repeated the first instead of adding to it.
  function current() {
    return parseQuery((location.hash.split("?")[1]) || "");
  }
  function parseQuery(s) {
    const q = {};
    (s || "").split("&").filter(Boolean).forEach(kv => {
      const [k, v] = kv.split("=");
      q[decodeURIComponent(k)] = decodeURIComponent(v || "");
    });
    return q;
  }
  function route(full) {
    const root = document.getElementById("app");
    const h = location.hash || "#/";
    const m = h.match(/^#\/sub\/(\d+)/);
    const section = document.getElementById("subs-section");
    if (!m && section && full !== true) {  // same page, another filter, sort or page: the table alone
      section.textContent = "";
      submissionsTable(section, parseQuery(h.split("?")[1]));
      return;
    }
    root.textContent = "";
    if (m) submissionPage(root, +m[1]);
    else summary(root, parseQuery(h.split("?")[1]));
    document.getElementById("status").textContent = INDEX.rows.length + " submissions";
    window.scrollTo(0, 0);
  }
  window.addEventListener("hashchange", () => route(false));
  window.addEventListener("DOMContentLoaded", () => {
    loadIndex().then(() => {
      document.getElementById("title").textContent = "hpcbench: " + INDEX.campaign;
      document.title = "hpcbench: " + INDEX.campaign;
      route(true);
      document.body.dataset.ready = "1";
    }, e => { document.getElementById("app").textContent = "cannot load the campaign: " + e; });
  });
})();
