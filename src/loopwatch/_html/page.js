"use strict";
// loopwatch report: reads the JSON blob, builds every element with textContent and
// setAttribute (never innerHTML), so nothing from a session can become markup.
(function () {
  const D = JSON.parse(document.getElementById("report-data").textContent);
  const S = D.sessions;
  S.forEach(function (s, i) { s.index = i; });
  const SVGNS = "http://www.w3.org/2000/svg";
  const F = {};
  D.call_fields.forEach(function (name, i) { F[name] = i; });

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const key in attrs || {}) {
      if (attrs[key] !== null && attrs[key] !== undefined && attrs[key] !== false) node.setAttribute(key, attrs[key]);
    }
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function sv(tag, attrs) {
    const node = document.createElementNS(SVGNS, tag);
    for (const key in attrs || {}) node.setAttribute(key, attrs[key]);
    return node;
  }
  function count(n) { return n === null || n === undefined ? "-" : Number(n).toLocaleString("en"); }
  function compact(n) {
    if (n === null || n === undefined) return "-";
    const units = [[1e9, "G"], [1e6, "M"], [1e3, "k"]];
    for (const [size, unit] of units) if (n >= size) return (n / size).toFixed(1) + unit;
    return String(n);
  }
  function money(c) { return c === null || c === undefined ? "-" : "$" + c.toFixed(2); }
  function dash(v) { return v === null || v === undefined || v === "" ? "-" : String(v); }

  // -- totals -------------------------------------------------------------------------
  function sums(rows) {
    const t = { sessions: 0, stopped: 0, nudged: 0, actions: 0, waste: 0, tokens: null, cost: null, estimated: false,
      errors: 0, succeededStopped: 0, missed: 0, falseStops: 0 };
    for (const s of rows) {
      if (s.error) t.errors += 1;
      if (s.format === null) continue;
      t.sessions += 1;
      t.actions += s.actions;
      if (s.verdict === "stop") {
        t.stopped += 1;
        t.waste += s.waste || 0;
        if (s.tokens_saved !== null) t.tokens = (t.tokens || 0) + s.tokens_saved;
        if (s.cost_saved !== null) t.cost = (t.cost || 0) + s.cost_saved;
        t.estimated = t.estimated || s.estimated;
        if (s.outcome === "succeeded") t.succeededStopped += 1;
      } else if (s.verdict === "nudge") t.nudged += 1;
      if (s.judgement === "missed") t.missed += 1;
      if (s.judgement === "false stop" || s.judgement === "early stop") t.falseStops += 1;
    }
    return t;
  }

  function showTotals() {
    const t = sums(S);
    const box = document.getElementById("totals");
    const approx = t.estimated ? "~" : "";
    const cards = [
      ["sessions", count(t.sessions), count(t.actions) + " actions"],
      ["stopped", count(t.stopped), "would have been ended"],
      ["nudged only", count(t.nudged), "told what they circled"],
      ["actions saved", count(t.waste), t.actions ? Math.round(100 * t.waste / t.actions) + "% of all" : ""],
      ["tokens saved", t.tokens === null ? "-" : approx + compact(t.tokens), t.tokens === null ? "not recorded" : ""],
      ["cost saved", t.cost === null ? "-" : approx + money(t.cost), t.cost === null ? "not recorded" : ""],
    ];
    if (D.outcomes) cards.push(["stops on succeeded", count(t.succeededStopped), "the worst outcome", t.succeededStopped ? "bad" : ""]);
    if (D.labels) cards.push(["missed loops", count(t.missed), count(t.falseStops) + (t.falseStops === 1 ? " false stop" : " false stops"), t.falseStops ? "bad" : ""]);
    if (t.errors) cards.push(["unreadable", count(t.errors), "files with an error", "bad"]);
    for (const [name, value, note, tone] of cards) {
      const card = el("div", { class: "card" + (tone ? " " + tone : ""), "data-total": name });
      card.appendChild(el("div", { class: "value" }, value));
      card.appendChild(el("div", { class: "name" }, name));
      if (note) card.appendChild(el("div", { class: "note" }, note));
      box.appendChild(card);
    }
    if (t.estimated) box.appendChild(el("p", { class: "note wide" }, "~: prorated from session totals where the file has no per-step figures (an underestimate)."));
  }

  // -- lists: what to look at first -----------------------------------------------------
  function showLists() {
    const box = document.getElementById("lists");
    const lists = [];
    if (D.outcomes) lists.push(["Stopped although they succeeded", S.filter(function (s) { return s.verdict === "stop" && s.outcome === "succeeded"; }), "stop-succeeded"]);
    if (D.labels) {
      lists.push(["Loops missed (labelled yes, not stopped)", S.filter(function (s) { return s.judgement === "missed"; }), "missed"]);
      lists.push(["False stops (labelled no, or stopped before the labelled onset)", S.filter(function (s) { return s.judgement === "false stop" || s.judgement === "early stop"; }), "false-stops"]);
    }
    for (const [title, rows, key] of lists) {
      const part = el("div", { class: "list", "data-list": key });
      part.appendChild(el("h2", {}, title + " (" + rows.length + ")"));
      if (!rows.length) part.appendChild(el("p", { class: "note" }, "none"));
      const ul = el("ul");
      for (const s of rows.slice(0, 200)) {
        const li = el("li");
        const b = el("button", { type: "button", class: "link", "data-open": s.index }, s.path);
        b.addEventListener("click", function () { openSession(s.index); });
        li.appendChild(b);
        const detail = [s.signal, s.label ? "label " + s.label + (s.label_onset ? " from step " + s.label_onset : "") : null,
          s.stop_step ? "stopped at step " + s.stop_step : null].filter(Boolean).join(", ");
        if (detail) li.appendChild(el("span", { class: "note" }, " " + detail));
        ul.appendChild(li);
      }
      if (rows.length > 200) ul.appendChild(el("li", { class: "note" }, "... and " + (rows.length - 200) + " more (filter the table)"));
      part.appendChild(ul);
      box.appendChild(part);
    }
  }

  // -- groups ---------------------------------------------------------------------------
  let group = null; // {key, value}: the table shows only this group

  function showGroups() {
    const box = document.getElementById("groups");
    const keys = ["agent", "model"].filter(function (k) { return S.some(function (s) { return s[k]; }); });
    if (!keys.length) keys.push("format");
    for (const key of keys) {
      const by = new Map();
      for (const s of S) {
        const name = s[key] || "(not listed)";
        if (!by.has(name)) by.set(name, []);
        by.get(name).push(s);
      }
      const part = el("div", { class: "group-table" });
      part.appendChild(el("h2", {}, "By " + key));
      const table = el("table", { "data-group": key });
      const head = el("tr");
      const cols = [key, "sessions", "stopped", "nudged", "actions", "actions saved", "tokens saved", "cost saved"];
      if (D.outcomes) cols.push("stops on succeeded");
      if (D.labels) cols.push("missed", "false stops");
      for (const c of cols) head.appendChild(el("th", { scope: "col" }, c));
      table.appendChild(el("thead")).appendChild(head);
      const body = el("tbody");
      const names = Array.from(by.keys()).sort(function (a, b) { return by.get(b).length - by.get(a).length || (a < b ? -1 : 1); });
      for (const name of names) {
        const t = sums(by.get(name));
        const tr = el("tr", { tabindex: 0, "data-group-value": name });
        const cells = [name, count(t.sessions), count(t.stopped), count(t.nudged), count(t.actions), count(t.waste),
          t.tokens === null ? "-" : compact(t.tokens), t.cost === null ? "-" : money(t.cost)];
        if (D.outcomes) cells.push(count(t.succeededStopped));
        if (D.labels) cells.push(count(t.missed), count(t.falseStops));
        cells.forEach(function (c, i) { tr.appendChild(el(i ? "td" : "th", i ? { class: "num" } : { scope: "row" }, c)); });
        const pick = function () { group = { key: key, value: name }; refresh(); document.getElementById("table-section").scrollIntoView(); };
        tr.addEventListener("click", pick);
        tr.addEventListener("keydown", function (e) { if (e.key === "Enter") pick(); });
        body.appendChild(tr);
      }
      table.appendChild(body);
      part.appendChild(el("div", { class: "table-wrap short" })).appendChild(table);
      box.appendChild(part);
    }
  }

  // -- the sessions table ---------------------------------------------------------------
  const COLUMNS = [
    { key: "path", title: "session" },
    { key: "format", title: "format" },
    { key: "agent", title: "agent" },
    { key: "model", title: "model" },
    { key: "actions", title: "actions", num: true },
    { key: "verdict", title: "verdict" },
    { key: "signal", title: "signal" },
    { key: "onset", title: "loop began", num: true },
    { key: "stop", title: "stopped at", num: true },
    { key: "waste", title: "wasted after stop", num: true },
  ];
  for (const key of ["agent", "model"]) {  // columns no session fills are left out
    if (!S.some(function (s) { return s[key]; })) COLUMNS.splice(COLUMNS.findIndex(function (c) { return c.key === key; }), 1);
  }
  if (D.outcomes) COLUMNS.push({ key: "outcome", title: "outcome" });
  if (D.labels) COLUMNS.push({ key: "judgement", title: "label" });
  const RANK = { stop: 0, nudge: 1, none: 2 };
  let sortKey = null;
  let sortDir = 1;
  let generation = 0;
  let observer = null;
  const EAGER = 1000;  // rows built at once; the rest as the table is scrolled

  function defaultOrder(a, b) {
    // Stops on successful sessions first (the worst outcome), then stops, nudges, the rest.
    const harm = function (s) { return s.verdict === "stop" && s.outcome === "succeeded" ? 0 : 1; };
    return harm(a) - harm(b) || RANK[a.verdict] - RANK[b.verdict] || (b.waste || 0) - (a.waste || 0) || a.index - b.index;
  }
  function compare(a, b) {
    if (sortKey === null) return defaultOrder(a, b);
    let x = a[sortKey];
    let y = b[sortKey];
    if (sortKey === "verdict") { x = RANK[x]; y = RANK[y]; }
    if (x === null || x === undefined) return y === null || y === undefined ? a.index - b.index : 1;
    if (y === null || y === undefined) return -1;
    return (x < y ? -1 : x > y ? 1 : 0) * sortDir || a.index - b.index;
  }

  function cell(s, key) {
    if (key === "verdict") return s.error ? "error" : s.verdict === "nudge" && s.blocked ? "nudge, block" : s.verdict;
    if (key === "judgement") return s.label ? s.label + ": " + s.judgement : "-";
    if (key === "path") return s.path + (s.multi ? " [" + s.id + "]" : "");
    return dash(s[key]);
  }

  function header() {
    const tr = document.querySelector("#sessions thead tr");
    for (const col of COLUMNS) {
      const th = el("th", { scope: "col", "aria-sort": "none", "data-key": col.key, class: col.num ? "num" : null });
      const button = el("button", { type: "button" }, col.title);
      button.addEventListener("click", function () {
        if (sortKey === col.key) sortDir = -sortDir; else { sortKey = col.key; sortDir = col.num ? -1 : 1; }
        for (const other of tr.children) other.setAttribute("aria-sort", "none");
        th.setAttribute("aria-sort", sortDir > 0 ? "ascending" : "descending");
        refresh();
      });
      th.appendChild(button);
      tr.appendChild(th);
    }
  }

  function matches(s, text, verdict, judgement, outcome) {
    if (verdict && s.verdict !== verdict) return false;
    if (judgement && s.judgement !== judgement) return false;
    if (outcome && s.outcome !== outcome) return false;
    if (group && (s[group.key] || "(not listed)") !== group.value) return false;
    if (!text) return true;
    return [s.path, s.id, s.agent, s.model, s.signal, s.format].some(function (v) { return v && v.toLowerCase().indexOf(text) >= 0; });
  }

  function row(s) {
    const tr = el("tr", { "data-session": s.id, "data-verdict": s.verdict, "data-index": s.index, tabindex: 0,
      class: "v-" + s.verdict + (s.error ? " error" : "") + (s.verdict === "stop" && s.outcome === "succeeded" ? " harm" : "") });
    for (const col of COLUMNS) {
      const text = cell(s, col.key);
      tr.appendChild(el("td", { class: col.num ? "num" : col.key, title: col.num ? null : text }, text));
    }
    return tr;
  }

  function refresh() {
    const text = document.getElementById("filter").value.trim().toLowerCase();
    const verdict = document.getElementById("verdict-filter").value;
    const judgement = document.getElementById("judgement-filter").value;
    const outcome = document.getElementById("outcome-filter").value;
    const shown = S.filter(function (s) { return matches(s, text, verdict, judgement, outcome); }).sort(compare);
    const body = document.querySelector("#sessions tbody");
    body.textContent = "";
    const status = document.getElementById("shown");
    status.textContent = shown.length + " of " + S.length + " sessions" + (group ? " (" + group.key + ": " + group.value + ")" : "");
    if (group) {
      const clear = el("button", { type: "button", class: "link" }, "show all");
      clear.addEventListener("click", function () { group = null; refresh(); });
      status.appendChild(document.createTextNode(" "));
      status.appendChild(clear);
    }
    // Rows are built in slices, one per frame: the first ones show at once. Past the
    // first EAGER rows, more are built only when the end of the table is scrolled to
    // (or asked for), so thousands of sessions never hold the page.
    const mine = ++generation;
    let next = 0;
    let limit = EAGER;
    const more = el("tr", { class: "more" });
    const moreButton = el("button", { type: "button", class: "link" });
    more.appendChild(el("td", { colspan: COLUMNS.length })).appendChild(moreButton);
    const grow = function () { if (mine === generation && next >= limit) { limit += EAGER; more.remove(); slice(500); } };
    moreButton.addEventListener("click", grow);
    if (observer) observer.disconnect();
    observer = "IntersectionObserver" in window ? new IntersectionObserver(function (entries) {
      if (entries.some(function (e) { return e.isIntersecting; })) grow();
    }, { root: document.querySelector("#table-section .table-wrap"), rootMargin: "400px" }) : null;
    function slice(size) {
      const part = document.createDocumentFragment();
      const end = Math.min(shown.length, limit, next + size);
      for (; next < end; next++) part.appendChild(row(shown[next]));
      body.appendChild(part);
      if (mine === 1 && !performance.getEntriesByName("rows-first").length) performance.mark("rows-first");
      if (next < Math.min(limit, shown.length)) {
        requestAnimationFrame(function () { if (mine === generation) slice(500); });
      } else if (next < shown.length) {
        moreButton.textContent = "show more (" + (shown.length - next).toLocaleString("en") + " not shown yet)";
        body.appendChild(more);
        if (observer) observer.observe(more);
      } else {
        body.setAttribute("data-complete", "true");
      }
      if (mine === 1 && next >= Math.min(limit, shown.length) && !performance.getEntriesByName("rows-shown").length) {
        performance.mark("rows-shown");  // bench/report.py reads this and rows-first
      }
    }
    body.removeAttribute("data-complete");
    slice(100);
  }

  function controls() {
    const judgements = Array.from(new Set(S.map(function (s) { return s.judgement; }).filter(Boolean))).sort();
    if (D.labels) {
      document.getElementById("judgement-control").hidden = false;
      const select = document.getElementById("judgement-filter");
      for (const j of judgements) select.appendChild(el("option", { value: j }, j));
    }
    if (D.outcomes) document.getElementById("outcome-control").hidden = false;
    let timer = null;
    document.getElementById("filter").addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(refresh, 120);
    });
    for (const id of ["verdict-filter", "judgement-filter", "outcome-filter"]) document.getElementById(id).addEventListener("change", refresh);
    const body = document.querySelector("#sessions tbody");
    body.addEventListener("click", function (e) {
      const tr = e.target.closest("tr[data-index]");
      if (tr) openSession(Number(tr.getAttribute("data-index")));
    });
    body.addEventListener("keydown", function (e) {
      const tr = e.target.closest("tr[data-index]");
      if (!tr) return;
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); openSession(Number(tr.getAttribute("data-index"))); }
      if (e.key === "ArrowDown" && tr.nextElementSibling) { e.preventDefault(); tr.nextElementSibling.focus(); }
      if (e.key === "ArrowUp" && tr.previousElementSibling) { e.preventDefault(); tr.previousElementSibling.focus(); }
    });
  }

  // -- one session ----------------------------------------------------------------------
  const tip = document.getElementById("tip");
  function showTip(target) {
    const lines = target.__tip;
    if (!lines) return;
    tip.textContent = "";
    lines.forEach(function (line, i) { tip.appendChild(el(i ? "div" : "strong", {}, line)); });
    tip.hidden = false;
    const box = target.getBoundingClientRect();
    const left = Math.min(window.innerWidth - tip.offsetWidth - 8, Math.max(8, box.left + box.width / 2 - tip.offsetWidth / 2));
    const top = box.top - tip.offsetHeight - 8 >= 0 ? box.top - tip.offsetHeight - 8 : box.bottom + 8;
    tip.style.left = left + window.scrollX + "px";
    tip.style.top = top + window.scrollY + "px";
  }
  function hideTip() { tip.hidden = true; }

  const KINDS = [
    ["text", "model text"], ["turn", "turns"], ["correction", "corrections"], ["retry", "retries"],
    ["output", "output lines"], ["user", "user messages"], ["attempt", "attempts"], ["exempt", "uncounted tools"],
  ];

  function hue(digest) { return parseInt(digest.slice(0, 6), 16) % 360; }

  function covering(s, step) {
    // the intervention whose stretch (its loop's onset to the intervention) holds this step
    let found = null;
    for (const iv of s.interventions) if (iv[2] && iv[2] <= step && step <= iv[1]) found = iv;
    return found;
  }

  // A session of more calls than this is drawn as an overview (a bar per stretch of
  // actions) and, below it, one stretch call by call: a mark per call of a session of
  // 300,000 calls froze the page for seconds.
  const DETAIL = 2000;
  const BINS = 500;

  function lastStep(s) {
    const calls = s.calls;
    return Math.max(1, s.actions, calls.length ? calls[calls.length - 1][F.step] : 1);
  }

  function firstIndex(items, step, at) {
    // the first item whose step (items[i][at]) is at least `step` (items are in step order)
    let lo = 0, hi = items.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (items[mid][at] < step) lo = mid + 1; else hi = mid; }
    return lo;
  }

  function firstOfCalls(s) {
    // the first action of each call: "same call as action 12" (kept with the session)
    if (!s.__firstOf) {
      const firstOf = new Map();
      for (const c of s.calls) if (!firstOf.has(c[F.call])) firstOf.set(c[F.call], c[F.step]);
      s.__firstOf = firstOf;
    }
    return s.__firstOf;
  }

  function timeline(s, box) {
    const n = lastStep(s);
    if (s.calls.length <= DETAIL && s.others.length <= DETAIL) {
      const scroller = el("div", { class: "scroller" });
      scroller.appendChild(stretch(s, box, 1, n));
      return scroller;
    }
    const wrap = el("div", { class: "long-timeline" });
    const per = Math.ceil(n / BINS);
    wrap.appendChild(el("p", { class: "note" }, count(s.calls.length) + " tool calls: each bar covers " + count(per) +
      " actions (the same call most often, the same colour). Select a bar to see its actions one by one below."));
    const holder = el("div");
    const heading = el("p", { class: "note stretch-heading" });
    const scroller = el("div", { class: "scroller" });
    holder.appendChild(heading);
    holder.appendChild(scroller);
    let shown = null;
    const show = function (from) {
      from = Math.max(1, Math.min(from, n - DETAIL + 1));
      const to = Math.min(n, from + DETAIL - 1);
      heading.textContent = "Actions " + count(from) + " to " + count(to) + " of " + count(n) + ", one by one:";
      scroller.textContent = "";
      scroller.appendChild(stretch(s, box, from, to));
      if (shown) {  // where the stretch is, on the overview
        shown.setAttribute("x", String(shown.__x(from)));
        shown.setAttribute("width", String(Math.max(2, shown.__x(to + 1) - shown.__x(from))));
      }
    };
    const pick = function (low, high) { show(low - Math.floor(Math.max(0, DETAIL - (high - low + 1)) / 2)); };
    const over = overview(s, box, per, pick);
    shown = over.__window;
    wrap.appendChild(el("div", { class: "scroller" })).appendChild(over);
    wrap.appendChild(holder);
    const first = s.interventions.length ? s.interventions[0][1] : 1;
    const at = s.stop || first;
    pick(at, at);
    return wrap;
  }

  function overview(s, box, per, pick) {
    // a bar per `per` actions: the call made most often in it (its colour), how many
    // failed (the red bar) and gave a result seen before (the dot), its tools on hover
    const n = lastStep(s);
    const bins = Math.ceil(n / per);
    const left = 118;
    const avail = Math.max(300, (box.clientWidth || 900) - left - 40);
    const px = Math.max(2, Math.min(12, avail / bins));
    const width = left + bins * px + 24;
    const stats = [];
    for (let b = 0; b < bins; b++) stats.push({ calls: 0, failed: 0, repeats: 0, after: 0, digests: new Map(), tools: new Map() });
    for (const c of s.calls) {
      const bin = stats[Math.min(bins - 1, Math.floor((c[F.step] - 1) / per))];
      bin.calls++;
      if (c[F.error]) bin.failed++;
      if (c[F.repeat]) bin.repeats++;
      if (c[F.after_stop]) bin.after++;
      bin.digests.set(c[F.call], (bin.digests.get(c[F.call]) || 0) + 1);
      bin.tools.set(c[F.tool], (bin.tools.get(c[F.tool]) || 0) + 1);
    }
    const lanes = laneRows(s);
    let y = 22;
    const callY = y; y += 34;
    const verdictY = y; y += 22;
    for (const lane of lanes) { lane[2] = y; y += 18; }
    const height = y + 24;
    const svg = sv("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "group",
      "aria-label": "overview of " + s.calls.length + " tool calls", class: "timeline overview" });
    const x = function (step) { return left + (step - 1) / per * px; };
    shadings(svg, s, x, 1, n, height);
    const window_ = sv("rect", { x: left, y: 2, width: px, height: height - 24, class: "window" });
    window_.__x = x;
    svg.__window = window_;
    svg.appendChild(window_);
    labels(svg, lanes, callY, verdictY);
    stats.forEach(function (bin, b) {
      const from = b * per + 1, to = Math.min(n, (b + 1) * per);
      const g = sv("g", { class: "mark bin" + (bin.after * 2 > bin.calls ? " after" : ""), "data-kind": "bin",
        "data-from": from, "data-to": to, tabindex: 0, role: "button" });
      if (bin.calls) {
        let top = null, most = 0;
        for (const [digest, times] of bin.digests) if (times > most) { top = digest; most = times; }
        g.appendChild(sv("rect", { x: x(from), y: callY, width: Math.max(1, px - 1), height: 26,
          fill: "hsl(" + hue(top) + ",62%," + (bin.after * 2 > bin.calls ? "78%" : "48%") + ")" }));
        if (bin.repeats) g.appendChild(sv("circle", { cx: x(from) + px / 2, cy: callY - 5, r: Math.min(3.2, px / 2),
          class: "repeat-dot", "fill-opacity": (0.25 + 0.75 * bin.repeats / bin.calls).toFixed(2) }));
        if (bin.failed) g.appendChild(sv("rect", { x: x(from), y: callY + 28, width: Math.max(1, px - 1), height: 3,
          class: "error-bar", "fill-opacity": (0.25 + 0.75 * bin.failed / bin.calls).toFixed(2) }));
      } else {
        g.appendChild(sv("rect", { x: x(from), y: callY, width: Math.max(1, px - 1), height: 26, class: "empty" }));
      }
      const tools = Array.from(bin.tools).sort(function (a, b) { return b[1] - a[1]; }).slice(0, 4)
        .map(function (t) { return t[0] + " " + count(t[1]); });
      const lines = ["actions " + count(from) + " to " + count(to) + ": " + count(bin.calls) + " tool calls"];
      if (tools.length) lines.push(tools.join(", ") + (bin.tools.size > 4 ? ", ..." : ""));
      if (bin.failed) lines.push(count(bin.failed) + " failed");
      if (bin.repeats) lines.push(count(bin.repeats) + " gave a result the same call gave before");
      if (bin.after) lines.push(count(bin.after) + " after the stop");
      lines.push("select to see them one by one");
      g.__tip = lines;
      g.setAttribute("aria-label", lines.join(". "));
      g.__pick = function () { pick(from, to); };
      svg.appendChild(g);
    });
    verdicts(svg, s, x, 1, n, verdictY);
    others(svg, s, lanes, function (step) { return x(step + 1); }, 1, n, true);
    axis(svg, x, 1, n, px / per, height);
    svg.addEventListener("click", function (e) { const g = e.target.closest("g.bin"); if (g) g.__pick(); });
    svg.addEventListener("keydown", function (e) {
      const g = e.target.closest && e.target.closest("g.bin");
      if (g && (e.key === "Enter" || e.key === " ")) { e.preventDefault(); g.__pick(); }
    });
    return svg;
  }

  function laneRows(s) {
    // [kind, title, y] for the kinds of events the session has besides its calls
    const present = new Set(s.others.map(function (o) { return o[0].split(":")[0]; }));
    return KINDS.filter(function (k) { return present.has(k[0]); }).map(function (k) { return [k[0], k[1], 0]; });
  }

  function labels(svg, lanes, callY, verdictY) {
    const label = function (text, yy) { const t = sv("text", { x: 4, y: yy, class: "lane" }); t.textContent = text; svg.appendChild(t); };
    label("tool calls", callY + 18);
    label("loopwatch", verdictY + 14);
    for (const [, title, yy] of lanes) label(title, yy + 11);
  }

  function shadings(svg, s, x, from, to, height) {
    // the loop's stretch, from where it began to the intervention; what came after the stop
    for (const iv of s.interventions) {
      if (!iv[2] || iv[1] < from || iv[2] > to) continue;
      const a = Math.max(iv[2], from), b = Math.min(iv[1], to);
      svg.appendChild(sv("rect", { x: x(a), y: 4, width: Math.max(2, x(b + 1) - x(a)), height: height - 28, class: "stretch " + iv[0] }));
    }
    if (s.stop && s.stop < to) {
      const a = Math.max(s.stop + 1, from);
      svg.appendChild(sv("rect", { x: x(a), y: 4, width: Math.max(0, x(to + 1) - x(a)), height: height - 28, class: "after-stop" }));
    }
  }

  function verdicts(svg, s, x, from, to, verdictY) {
    // nudges, blocks, the stop
    for (const iv of s.interventions) {
      const [kind, at, , signal, description, ref] = iv;
      if (at < from || at > to) continue;
      const g = sv("g", { class: "mark verdict " + kind, "data-step": at, "data-kind": kind, tabindex: 0, role: "img" });
      const cx = x(at + 1);  // after its action
      g.appendChild(sv("line", { x1: cx, x2: cx, y1: 4, y2: verdictY + 18, class: "verdict-line" }));
      g.appendChild(sv("path", { d: "M" + (cx - 6) + " " + (verdictY + 2) + " h12 l-6 12 z", class: "verdict-head" }));
      const lines = [kind + " after action " + at + " (" + signal + ")", description || ""];
      if (ref) lines.push("source: " + ref);
      g.__tip = lines;
      g.setAttribute("aria-label", lines.join(". "));
      svg.appendChild(g);
    }
  }

  function others(svg, s, lanes, cxOf, from, to, binned) {
    // everything else, on the same axis (between the calls it came between); on the
    // overview, one tick per kind and bar
    const drawn = new Set();
    for (let i = firstIndex(s.others, from - 1, 1); i < s.others.length; i++) {
      const [kindName, step, times] = s.others[i];
      if (step > to) break;
      const base = kindName.split(":")[0];
      const lane = lanes.find(function (l) { return l[0] === base; });
      if (!lane) continue;
      const cx = cxOf(step);
      if (binned) {
        const key = base + "@" + Math.round(cx);
        if (drawn.has(key)) continue;
        drawn.add(key);
      }
      const g = sv("g", { class: "mark other " + base, "data-kind": base, tabindex: -1 });
      g.appendChild(sv("rect", { x: cx - 1.5, y: lane[2], width: 3, height: 12, class: "tick" }));
      const name = kindName.indexOf(":") > 0 ? " (" + kindName.slice(kindName.indexOf(":") + 1) + ")" : "";
      g.__tip = [lane[1] + name + ": " + (binned ? "around" : times) + (step ? " action " + step : " before the first action")];
      svg.appendChild(g);
    }
  }

  function axis(svg, x, from, to, px, height) {
    // `px`: the width of one action
    const every = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000]
      .find(function (k) { return k * px >= 48; }) || 1000000;
    for (let step = Math.ceil(from / every) * every; step <= to; step += every) {
      const t = sv("text", { x: x(step) + px / 2, y: height - 6, class: "tick-label" });
      t.textContent = String(step);
      svg.appendChild(t);
    }
    const axisLabel = sv("text", { x: 4, y: height - 6, class: "lane" });
    axisLabel.textContent = "action";
    svg.appendChild(axisLabel);
  }

  function stretch(s, box, from, to) {
    // actions `from` to `to`, one mark per call
    const calls = s.calls;
    const count_ = to - from + 1;
    const left = 118;
    const avail = Math.max(300, (box.clientWidth || 900) - left - 40);
    const px = Math.max(6, Math.min(28, avail / count_));
    const width = left + count_ * px + 24;
    const lanes = laneRows(s);
    let y = 22;
    const callY = y; y += 34;
    const verdictY = y; y += 22;
    for (const lane of lanes) { lane[2] = y; y += 18; }
    const height = y + 24;
    const first = firstIndex(calls, from, F.step);
    let last = first;
    while (last < calls.length && calls[last][F.step] <= to) last++;
    const svg = sv("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "group",
      "aria-label": "timeline of " + (last - first) + " tool calls", class: "timeline" });
    const x = function (step) { return left + (step - from) * px; };
    shadings(svg, s, x, from, to, height);
    labels(svg, lanes, callY, verdictY);

    // one mark per call, the same call in the same colour
    const firstOf = firstOfCalls(s);
    for (let i = first; i < last; i++) {
      const c = calls[i];
      const step = c[F.step];
      const g = sv("g", { class: "mark call" + (c[F.after_stop] ? " after" : "") + (c[F.repeat] ? " repeat" : ""),
        "data-step": step, "data-kind": "call", tabindex: 0, role: "img" });
      const w = Math.max(2, px - 2);
      g.appendChild(sv("rect", { x: x(step) + (px - w) / 2, y: callY, width: w, height: 26, rx: Math.min(3, w / 3),
        fill: "hsl(" + hue(c[F.call]) + ",62%," + (c[F.after_stop] ? "78%" : "48%") + ")" }));
      if (c[F.repeat]) g.appendChild(sv("circle", { cx: x(step) + px / 2, cy: callY - 5, r: Math.min(3.2, px / 3), class: "repeat-dot" }));
      if (c[F.error]) g.appendChild(sv("rect", { x: x(step) + (px - w) / 2, y: callY + 28, width: w, height: 3, class: "error-bar" }));
      const iv = covering(s, step);
      const lines = ["action " + step + ": " + c[F.tool]];
      if (c[F.ref]) lines.push("source: " + c[F.ref]);
      const firstStep = firstOf.get(c[F.call]);
      lines.push(firstStep === step ? "first time this call was made" : "same call as action " + firstStep);
      if (c[F.repeat]) lines.push("repeated result: this call gave this result before");
      if (c[F.error]) lines.push("failed");
      if (c[F.at] !== null) lines.push("at +" + c[F.at] + "s");
      if (c[F.after_stop]) lines.push("after the stop: the run would have ended before this");
      if (iv) lines.push("in the loop (" + iv[3] + "): " + iv[4]);
      g.__tip = lines;
      g.setAttribute("aria-label", lines.join(". "));
      g.__call = c;
      svg.appendChild(g);
    }
    verdicts(svg, s, x, from, to, verdictY);
    others(svg, s, lanes, function (step) { return x(step + 1); }, from, to, false);
    axis(svg, x, from, to, px, height);
    return svg;
  }

  function openSession(index) {
    const s = S[index];
    const box = document.getElementById("session");
    box.hidden = false;
    box.textContent = "";
    box.setAttribute("data-session", s.id);
    box.setAttribute("data-index", index);
    const close = el("button", { type: "button", class: "close", "aria-label": "close the session" }, "close");
    close.addEventListener("click", function () { box.hidden = true; });
    box.appendChild(close);
    box.appendChild(el("h2", {}, s.path));
    const facts = [["session", s.id], ["format", s.format], ["agent", s.agent], ["model", s.model], ["actions", count(s.actions)],
      ["outcome", s.outcome], ["label", s.label ? s.label + (s.label_onset ? " (loop from step " + s.label_onset + " to " + s.label_end + ")" : "") + ": " + s.judgement : null]];
    const line = el("p", { class: "facts" });
    for (const [k, v] of facts) {
      if (v === null || v === undefined) continue;
      const fact = el("span", { class: "fact" }, k + ": ");
      fact.appendChild(el("b", {}, v));
      line.appendChild(fact);
    }
    box.appendChild(line);
    if (s.error) box.appendChild(el("p", { class: "bad" }, "could not be read: " + s.error));
    const verdictText = s.verdict === "stop"
      ? "Stopped after action " + s.stop + (s.stop_ref ? " (" + s.stop_ref + ")" : "") + " by " + s.signal + "; the loop began at action " +
        dash(s.onset) + (s.onset_ref ? " (" + s.onset_ref + ")" : "") + ". " + count(s.waste) + " of " + count(s.actions) + " actions came after the stop."
      : s.verdict === "nudge" ? "Nudged (" + s.signal + "), never stopped." : "loopwatch would not have intervened.";
    box.appendChild(el("p", { class: "verdict-text" }, verdictText));
    if (s.description) box.appendChild(el("p", { class: "description" }, s.description));

    const layout = el("div", { class: "session-layout" });
    const left = el("div", { class: "timeline-wrap" });
    layout.appendChild(left);
    const aside = el("aside", { class: "calibration" });
    aside.appendChild(el("h3", {}, "calibration figures"));
    const cal = el("dl");
    for (const key of Object.keys(s.calibration || {}).sort()) {
      const v = s.calibration[key];
      cal.appendChild(el("dt", {}, key));
      cal.appendChild(el("dd", {}, typeof v === "object" && v !== null ? JSON.stringify(v) : dash(v)));
    }
    if (!cal.children.length) cal.appendChild(el("dd", {}, "none"));
    aside.appendChild(cal);
    layout.appendChild(aside);
    box.appendChild(layout);
    const legend = el("p", { class: "legend note" },
      "One mark per tool call; the same call, the same colour. A dot above: the call gave the same result before. A red bar below: it failed. " +
      "Shaded: the loop, from where it began to the nudge (amber), block or stop (red). Pale: after the stop. Hover or focus a mark for details.");
    left.appendChild(legend);
    if (s.calls.length || s.others.length) left.appendChild(timeline(s, left));
    else left.appendChild(el("p", { class: "note" }, "no tool call recorded"));

    if (s.interventions.length) {
      const ul = el("ul", { class: "interventions" });
      for (const [kind, at, started, signal, description, ref] of s.interventions) {
        ul.appendChild(el("li", {}, kind + " after action " + at + (ref ? " (" + ref + ")" : "") + ", " + signal +
          (started ? ", from action " + started : "") + ": " + (description || "")));
      }
      left.appendChild(ul);
    }
    if (D.excerpts) {
      const pre = el("div", { class: "excerpt" });
      pre.appendChild(el("p", { class: "note" }, "Select a call to see its input and result (--excerpts)."));
      left.appendChild(pre);
      left.addEventListener("click", function (e) { const g = e.target.closest("g.call"); if (g) excerpt(g.__call, pre); });
      left.addEventListener("focusin", function (e) { const g = e.target.closest("g.call"); if (g) excerpt(g.__call, pre); });
    }
    box.scrollIntoView({ block: "start" });
  }

  function excerpt(c, box) {
    box.textContent = "";
    box.appendChild(el("h3", {}, "action " + c[F.step] + ": " + c[F.tool]));
    box.appendChild(el("h4", {}, "input"));
    box.appendChild(el("pre", {}, c[F.input] || ""));
    box.appendChild(el("h4", {}, "result"));
    box.appendChild(el("pre", {}, c[F.result] || ""));
  }

  document.addEventListener("mouseover", function (e) { const m = e.target.closest && e.target.closest(".mark"); if (m) showTip(m); });
  document.addEventListener("mouseout", function (e) { if (e.target.closest && e.target.closest(".mark")) hideTip(); });
  document.addEventListener("focusin", function (e) { const m = e.target.closest && e.target.closest(".mark"); if (m) showTip(m); else hideTip(); });
  document.addEventListener("keydown", function (e) {
    const m = e.target.closest && e.target.closest(".mark.call, .mark.verdict, .mark.bin");
    if (!m || (e.key !== "ArrowRight" && e.key !== "ArrowLeft")) return;
    const marks = Array.from(m.ownerSVGElement.querySelectorAll(".mark.call, .mark.verdict, .mark.bin"));
    const next = marks[marks.indexOf(m) + (e.key === "ArrowRight" ? 1 : -1)];
    if (next) { e.preventDefault(); next.focus(); }
  });

  showTotals();
  showLists();
  showGroups();
  header();
  controls();
  refresh();
  document.documentElement.setAttribute("data-ready", "true");
})();
