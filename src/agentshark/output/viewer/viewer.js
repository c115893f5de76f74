// agentshark viewer: the front-end of the HTML report and of `agentshark serve`.
//
// Data comes from a source with two operations (src/agentshark/output/viewer_data.py):
// index() -> summary, trace rows, call rows, incidents; trace(i) -> one trace's spans, calls,
// exchanges, raw bodies, incidents and idle gaps. The inline source parses the page's JSON
// blocks lazily; the HTTP source fetches /api/... from `agentshark serve`.
//
// Everything shown comes from captured traffic and is untrusted: it is only ever set as text
// (textContent, createTextNode). No innerHTML, no data in attributes that a browser acts on
// (href, src, style, event handlers). Lists are virtualized: only visible rows exist.
"use strict";
(function () {
  // ---------------------------------------------------------------- data sources
  function parseBlock(id) {
    const el = document.getElementById(id);
    if (!el) throw new Error("no data block " + id);
    return JSON.parse(el.textContent);
  }

  function inlineSource() {
    const cache = new Map();
    return {
      index: () => Promise.resolve(parseBlock("agentshark-index")),
      trace: (i) => {
        if (!cache.has(i)) cache.set(i, parseBlock("agentshark-trace-" + i));
        return Promise.resolve(cache.get(i));
      },
      forget: () => cache.clear(),
    };
  }

  function getJson(url) {
    return fetch(url, { headers: { Accept: "application/json" } }).then((r) => {
      if (!r.ok) throw new Error(url + ": HTTP " + r.status);
      return r.json();
    });
  }

  function httpSource(base) {
    const cache = new Map();
    return {
      index: () => getJson(base + "/index"),
      trace: (i) => {
        if (!cache.has(i)) cache.set(i, getJson(base + "/trace/" + i));
        return cache.get(i);
      },
      forget: () => cache.clear(),
    };
  }

  // ---------------------------------------------------------------- DOM helpers (text only)
  const SAFE_ATTRS = new Set(["class", "title", "id", "role", "type", "placeholder", "tabindex",
    "aria-label", "aria-selected", "value", "for", "name", "data-anchor", "data-kind", "data-i"]);

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === null || v === undefined || v === false) continue;
        if (k === "on") {
          for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
        } else if (k === "style") {
          for (const [p, val] of Object.entries(v)) el.style.setProperty(p, String(val));
        } else if (SAFE_ATTRS.has(k)) {
          el.setAttribute(k, String(v));
        } else {
          throw new Error("attribute not allowed: " + k);
        }
      }
    }
    append(el, children);
    return el;
  }

  function append(el, children) {
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      if (Array.isArray(c)) append(el, c);
      else if (c instanceof Node) el.appendChild(c);
      else el.appendChild(document.createTextNode(String(c)));
    }
  }

  function clear(el) {
    while (el.firstChild) el.removeChild(el.firstChild);
    return el;
  }

  // ---------------------------------------------------------------- formatting
  function fmtDur(s) {
    if (s === null || s === undefined || Number.isNaN(s)) return "–";
    const a = Math.abs(s);
    if (a < 0.001) return (s * 1000).toFixed(2) + " ms";
    if (a < 1) return (s * 1000).toFixed(a < 0.01 ? 1 : 0) + " ms";
    if (a < 60) return s.toFixed(a < 10 ? 2 : 1) + " s";
    const m = Math.floor(a / 60);
    return m + " min " + Math.round(a - m * 60) + " s";
  }
  function fmtTime(ts) {
    if (ts === null || ts === undefined) return "–";
    try { return new Date(ts * 1000).toISOString().replace("T", " ").replace("Z", " UTC"); }
    catch (e) { return String(ts); }
  }
  function fmtInt(n) { return n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"); }
  function plural(n, w, many) { return fmtInt(n) + " " + (n === 1 ? w : (many || w + "s")); }
  function pretty(v) {
    if (typeof v === "string") return v;
    try { return JSON.stringify(v, null, 2); } catch (e) { return String(v); }
  }
  function shortId(id) { return id && id.length > 12 ? id.slice(0, 12) + "…" : (id || ""); }

  // ---------------------------------------------------------------- virtual list
  // Rows of one fixed height; only the rows in view (plus a margin) are in the DOM.
  class VList {
    constructor(container, rowHeight, renderRow) {
      this.box = container;
      this.rowHeight = rowHeight;
      this.renderRow = renderRow;
      this.items = [];
      this.spacer = h("div", { class: "vspacer" });
      this.overlay = null;
      this.box.appendChild(this.spacer);
      this.frame = 0;
      this.first = -1; this.last = -1;
      this.shown = new Map();
      this.box.addEventListener("scroll", () => this.schedule());
      window.addEventListener("resize", () => this.schedule(true));
    }
    setItems(items) {
      this.items = items;
      this.spacer.style.height = items.length * this.rowHeight + "px";
      this.refresh();
    }
    refresh() { this.first = -1; this.draw(); }
    schedule(force) {
      if (force) this.first = -1;
      if (this.frame) return;
      this.frame = requestAnimationFrame(() => { this.frame = 0; this.draw(); });
    }
    draw() {
      const top = this.box.scrollTop;
      const height = this.box.clientHeight || 600;
      const first = Math.max(0, Math.floor(top / this.rowHeight) - 8);
      const last = Math.min(this.items.length, Math.ceil((top + height) / this.rowHeight) + 8);
      if (first === this.first && last === this.last) return;
      const rebuild = this.first < 0;
      this.first = first; this.last = last;
      if (rebuild) {
        clear(this.spacer);
        if (this.overlay) this.spacer.appendChild(this.overlay);
        this.shown = new Map();
      }
      // rows still in view stay as they are; only those scrolled in are made
      for (const [i, row] of this.shown) {
        if (i < first || i >= last) { row.remove(); this.shown.delete(i); }
      }
      const frag = document.createDocumentFragment();
      for (let i = first; i < last; i++) {
        if (this.shown.has(i)) continue;
        const row = this.renderRow(this.items[i], i);
        row.style.top = i * this.rowHeight + "px";
        row.style.height = this.rowHeight + "px";
        row.classList.add("vrow");
        this.shown.set(i, row);
        frag.appendChild(row);
      }
      this.spacer.appendChild(frag);
    }
    scrollTo(i) {
      const y = i * this.rowHeight;
      const hgt = this.box.clientHeight;
      if (y < this.box.scrollTop || y + this.rowHeight > this.box.scrollTop + hgt) {
        this.box.scrollTop = Math.max(0, y - hgt / 3);
      }
      this.refresh();
    }
  }

  // ---------------------------------------------------------------- state
  const S = {
    source: null, index: null, callById: new Map(), traceRows: [],
    q: "", api: "", model: "", errors: false, incidents: false, tab: "traces",
    trace: null, rows: [], selected: -1, spanView: "messages", list: null, wf: null,
  };
  let ui = {};

  function layout() {
    // The data blocks stay where they are: the viewer lives in its own element.
    const body = h("div", { id: "app" });
    document.body.insertBefore(body, document.body.firstChild);
    ui.header = h("header", { class: "top" });
    ui.search = h("input", { type: "search", placeholder: "Search calls, models, tools, text…",
      "aria-label": "search", id: "search" });
    ui.api = h("select", { "aria-label": "api", id: "filter-api" });
    ui.model = h("select", { "aria-label": "model", id: "filter-model" });
    ui.err = h("input", { type: "checkbox", id: "filter-errors" });
    ui.inc = h("input", { type: "checkbox", id: "filter-incidents" });
    ui.tabs = h("div", { class: "tabs", role: "tablist" });
    ui.count = h("div", { class: "count" });
    ui.listBox = h("div", { class: "list", id: "list" });
    const side = h("aside", { class: "side" },
      h("div", { class: "filters" }, ui.search,
        h("div", { class: "row2" }, ui.api, ui.model),
        h("div", { class: "row2" },
          h("label", { for: "filter-errors" }, ui.err, " errors only"),
          h("label", { for: "filter-incidents" }, ui.inc, " with incidents"))),
      ui.tabs, ui.count, ui.listBox);
    ui.main = h("main", { class: "main", id: "main" });
    body.appendChild(ui.header);
    body.appendChild(h("div", { class: "shell" }, side, ui.main));
    let timer = 0;
    ui.search.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => { S.q = ui.search.value.trim().toLowerCase(); applyFilters(); }, 120);
    });
    ui.api.addEventListener("change", () => { S.api = ui.api.value; applyFilters(); });
    ui.model.addEventListener("change", () => { S.model = ui.model.value; applyFilters(); });
    ui.err.addEventListener("change", () => { S.errors = ui.err.checked; applyFilters(); });
    ui.inc.addEventListener("change", () => { S.incidents = ui.inc.checked; applyFilters(); });
    S.list = new VList(ui.listBox, 48, renderListRow);
  }

  function setIndex(index) {
    S.index = index;
    S.callById = new Map(index.calls.map((c) => [c.id, c]));
    S.traceCalls = index.traces.map((t) => t.calls.map((id) => S.callById.get(id)).filter(Boolean));
    renderHeader();
    fillSelect(ui.api, "all APIs", uniq(index.calls.map((c) => c.api)));
    fillSelect(ui.model, "all models", uniq(index.calls.map((c) => c.model)));
    renderTabs();
    applyFilters();
    if (!S.trace) renderOverview();
  }

  function uniq(xs) { return [...new Set(xs.filter((x) => x))].sort(); }

  function fillSelect(sel, all, values) {
    const cur = sel.value;
    clear(sel);
    sel.appendChild(h("option", { value: "" }, all));
    for (const v of values) sel.appendChild(h("option", { value: v }, v));
    sel.value = values.includes(cur) ? cur : "";
  }

  function renderHeader() {
    const s = S.index.summary;
    const names = S.index.sources.map((x) => x.path).filter(Boolean);
    const stat = (label, value, cls) => h("div", { class: "stat " + (cls || "") },
      h("div", { class: "v" }, value), h("div", { class: "l" }, label));
    const tokens = fmtInt(s.input_tokens) + " / " + fmtInt(s.output_tokens);
    clear(ui.header);
    append(ui.header, [
      h("div", { class: "brand", title: "show the summary", on: { click: () => closeTrace() } },
        h("span", { class: "logo" }, "◆"), " agentshark"),
      h("div", { class: "srcs", title: names.join("\n") }, names.join(", ") || "report"),
      h("div", { class: "stats", id: "summary" },
        stat("traces", fmtInt(s.traces)), stat("calls", fmtInt(s.calls)),
        stat("tokens in / out", tokens),
        stat("incidents", fmtInt(s.incidents), s.incidents ? "warn" : ""),
        stat("errors", fmtInt(s.errors), s.errors ? "bad" : ""),
        stat("not understood", fmtInt(s.not_understood.length + s.not_parsed.length),
          s.not_understood.length + s.not_parsed.length ? "warn" : "")),
    ]);
  }

  function renderTabs() {
    clear(ui.tabs);
    const tab = (key, label) => h("button", {
      class: "tab" + (S.tab === key ? " on" : ""), role: "tab", id: "tab-" + key,
      "aria-selected": S.tab === key ? "true" : "false",
      on: { click: () => { S.tab = key; renderTabs(); applyFilters(); } } }, label);
    append(ui.tabs, [tab("traces", "Traces"), tab("calls", "Calls"), tab("incidents", "Incidents")]);
  }

  // ---------------------------------------------------------------- filters and lists
  function callMatches(c) {
    if (S.api && c.api !== S.api) return false;
    if (S.model && c.model !== S.model) return false;
    if (S.errors && !c.error) return false;
    if (S.incidents && !c.incidents) return false;
    if (S.q && !c.search.includes(S.q)) return false;
    return true;
  }

  function traceMatches(t, i) {
    const calls = S.traceCalls[i];
    if (S.incidents && !t.incidents) return false;
    if (S.q && t.trace_id && t.trace_id.includes(S.q) && !S.api && !S.model && !S.errors) return true;
    const plain = !S.api && !S.model && !S.errors && !S.q;
    if (plain) return !S.incidents || t.incidents > 0;
    const saveInc = S.incidents; S.incidents = false;
    const ok = calls.some(callMatches);
    S.incidents = saveInc;
    return ok;
  }

  function applyFilters() {
    const ix = S.index;
    let items;
    if (S.tab === "traces") {
      items = ix.traces.filter(traceMatches).map((t) => ({ kind: "trace", t }));
    } else if (S.tab === "calls") {
      items = ix.calls.filter(callMatches).map((c) => ({ kind: "call", c }));
    } else {
      items = ix.incidents.filter((inc) => !S.q ||
        (inc.rule + " " + inc.message + " " + (inc.call_id || "")).toLowerCase().includes(S.q))
        .map((inc) => ({ kind: "incident", inc }));
    }
    const total = S.tab === "traces" ? ix.traces.length : S.tab === "calls" ? ix.calls.length : ix.incidents.length;
    ui.count.textContent = items.length === total ? plural(total, S.tab.slice(0, -1)) :
      fmtInt(items.length) + " of " + plural(total, S.tab.slice(0, -1));
    S.list.setItems(items);
  }

  function renderListRow(item) {
    if (item.kind === "trace") {
      const t = item.t;
      const dur = t.started !== null && t.ended !== null ? fmtDur(t.ended - t.started) : "–";
      const open = S.trace && S.trace.index === t.index;
      return h("div", { class: "item" + (open ? " on" : ""), "data-kind": "trace", "data-i": t.index,
        on: { click: () => openTrace(t.index) } },
        h("div", { class: "l1" },
          h("span", { class: "name" }, t.trace_id ? (t.prompt || t.name || "trace") : "calls in no trace"),
          t.errors ? h("span", { class: "badge bad" }, plural(t.errors, "error")) : null,
          t.incidents ? h("span", { class: "badge warn" }, plural(t.incidents, "incident")) : null,
          h("span", { class: "dim right" }, dur)),
        h("div", { class: "l2 dim" },
          (t.prompt && t.name ? t.name + " · " : "") + plural(t.calls.length, "call") + " · " + (t.models.join(", ") || t.apis.join(", ") || "no model") +
          (t.trace_id ? " · " + shortId(t.trace_id) : "")));
    }
    if (item.kind === "call") {
      const c = item.c;
      return h("div", { class: "item", "data-kind": "call", on: { click: () => openCall(c.id) } },
        h("div", { class: "l1" },
          h("span", { class: "mono" }, c.id), " ",
          h("span", { class: "name" }, c.model || c.operation || c.api),
          c.error ? h("span", { class: "badge bad" }, "error") : null,
          c.complete === false ? h("span", { class: "badge warn" }, "incomplete") : null,
          h("span", { class: "dim right" }, fmtDur(c.ended !== null && c.started !== null ? c.ended - c.started : null))),
        h("div", { class: "l2 dim" }, c.api + (c.tools.length ? " · → " + c.tools.join(", ") : "") +
          (c.input_tokens !== null ? " · " + fmtInt(c.input_tokens) + "→" + fmtInt(c.output_tokens) + " tok" : "")));
    }
    const inc = item.inc;
    return h("div", { class: "item", "data-kind": "incident",
      on: { click: () => openIncident(inc) } },
      h("div", { class: "l1" }, h("span", { class: "badge " + sevClass(inc.severity) }, inc.severity),
        " ", h("span", { class: "name mono" }, inc.rule)),
      h("div", { class: "l2 dim" }, (inc.call_id || inc.exchange_id || "") + " · " + inc.message));
  }

  function sevClass(sev) { return sev === "error" ? "bad" : sev === "warning" ? "warn" : "info"; }

  // ---------------------------------------------------------------- overview (no trace open)
  function closeTrace() {
    S.trace = null; S.selected = -1;
    S.list.refresh();
    renderOverview();
  }

  function renderOverview() {
    const s = S.index.summary;
    const main = h("div", { class: "scroll", id: "overview" });
    clear(ui.main).appendChild(main);
    const sec = (title, ...kids) => h("section", { class: "card" }, h("h2", null, title), ...kids);
    const srcs = S.index.sources.map((x) => h("li", null, h("span", { class: "mono" }, x.path || "-"),
      " · " + (x.format || "?") + " · " + plural(x.bytes || 0, "byte") + " · " + plural(x.exchanges || 0, "exchange"),
      x.diagnostics.length ? h("ul", { class: "diags" }, x.diagnostics.slice(0, 20).map(diagItem)) : null));
    const nu = s.not_understood.slice(0, 200).map((x) => h("li", { class: "mono" },
      x.id + "  " + (x.method || "") + " " + (x.url || "") + "  → " + (x.status === null ? "no response" : x.status)));
    const np = s.not_parsed.map((x) => h("li", null, pretty(x)));
    append(main, [
      sec("Summary", h("p", null,
        plural(s.traces, "trace") + ", " + plural(s.calls, "call") + " (" + fmtInt(s.incomplete) +
        " incomplete, " + fmtInt(s.errors) + " with errors), " + plural(s.exchanges, "exchange") + ", " +
        plural(s.incidents, "incident") + "."),
        h("p", { class: "dim" }, "Pick a trace or a call on the left. Times are the capture's wire clock.")),
      sec("Inputs", h("ul", null, srcs)),
      sec("Not understood (" + (s.not_understood.length + s.not_parsed.length) + ")",
        nu.length ? h("ul", { id: "not-understood" }, nu) : h("p", { class: "dim" }, "Every exchange was claimed by a call."),
        s.not_understood.length > 200 ? h("p", { class: "dim" }, "… and " + (s.not_understood.length - 200) + " more") : null,
        np.length ? h("div", null, h("h3", null, "Recognized, not parsed"), h("ul", null, np)) : null),
      S.index.incidents.length ? sec("Incidents (" + S.index.incidents.length + ")",
        h("ul", null, S.index.incidents.slice(0, 100).map((inc) => h("li", { class: "link",
          on: { click: () => openIncident(inc) } },
          h("span", { class: "badge " + sevClass(inc.severity) }, inc.severity), " ",
          h("span", { class: "mono" }, inc.rule), " " + inc.message)))) : null,
    ]);
  }

  function diagItem(d) { return h("li", { class: "mono" }, (d.code || "") + ": " + (d.message || "") + (d.location ? " (" + d.location + ")" : "")); }

  // ---------------------------------------------------------------- one trace
  function openTrace(i, then) {
    return S.source.trace(i).then((detail) => {
      if (!S.trace || S.trace.index !== i) {
        S.trace = detail; S.rows = treeRows(detail); S.selected = -1;
        renderTrace();
      }
      S.list.refresh();
      if (then) then();
    }).catch(showError);
  }

  function openCall(id, anchor) {
    const c = S.callById.get(id);
    if (!c || c.trace === null || c.trace === undefined) return;
    openTrace(c.trace, () => selectRow(rowOfCall(id), anchor));
  }

  function openIncident(inc) {
    if (inc.call_id && S.callById.has(inc.call_id)) openCall(inc.call_id, "incidents");
    else if (inc.trace !== null && inc.trace !== undefined) openTrace(inc.trace, () => flash("incidents"));
  }

  function treeRows(detail) {
    const spans = detail.trace.spans || [];
    const ids = new Set(spans.map((s) => s.span_id).filter(Boolean));
    const kids = new Map();
    const roots = [];
    spans.forEach((s, n) => {
      const p = s.parent_id && ids.has(s.parent_id) ? s.parent_id : null;
      if (p === null) roots.push(n);
      else { if (!kids.has(p)) kids.set(p, []); kids.get(p).push(n); }
    });
    const rows = [];
    const stack = roots.slice().reverse().map((n) => [n, 0]);
    while (stack.length) {
      const [n, depth] = stack.pop();
      const s = spans[n];
      rows.push({ span: s, depth, n });
      const ch = s.span_id ? kids.get(s.span_id) : null;
      if (ch) for (let k = ch.length - 1; k >= 0; k--) stack.push([ch[k], depth + 1]);
    }
    return rows;
  }

  function rowOfCall(id) {
    let r = S.rows.findIndex((row) => row.span.call_id === id);
    if (r < 0) r = S.rows.findIndex((row) => row.span.execution === id);
    return r;
  }

  function traceBounds() {
    let a = Infinity, b = -Infinity;
    for (const r of S.rows) {
      if (r.span.started !== null && r.span.started !== undefined) a = Math.min(a, r.span.started);
      if (r.span.ended !== null && r.span.ended !== undefined) b = Math.max(b, r.span.ended);
    }
    if (!Number.isFinite(a)) return [0, 1];
    if (!(b > a)) b = a + 1e-6;
    return [a, b];
  }

  function renderTrace() {
    const d = S.trace;
    const t = S.index.traces[d.index];
    const [t0, t1] = traceBounds();
    S.t0 = t0; S.span = t1 - t0;
    const main = clear(ui.main);
    const ev = (d.trace.evidence || []).map((e) => h("li", null, h("span", { class: "badge" }, e.origin), " " + (e.detail || "") + " (" + (e.calls || []).join(", ") + ")"));
    const head = h("div", { class: "thead" },
      h("div", { class: "l1" },
        h("h1", null, t.trace_id ? (t.name || "trace") : "calls in no trace"),
        t.trace_id ? h("span", { class: "mono dim", title: "trace id" }, t.trace_id) : null,
        h("span", { class: "badge" }, "linked by " + (d.trace.origin || "?"))),
      h("div", { class: "l2 dim" }, fmtTime(t0) + " · " + fmtDur(t1 - t0) + " · " + plural(t.spans, "span") +
        " · " + plural(t.calls.length, "call") + " · tokens " + fmtInt(t.input_tokens) + " in / " + fmtInt(t.output_tokens) + " out" +
        (d.gaps.length ? " · idle " + fmtDur(d.gaps.reduce((a, g) => a + g[1] - g[0], 0)) : "")),
      ev.length ? h("details", { class: "evidence" }, h("summary", null, "how these calls were linked (" + ev.length + ")"), h("ul", null, ev)) : null);
    const axis = h("div", { class: "axis" }, h("div", { class: "axl" }, "span",
      h("span", { class: "legend right" }, h("span", { class: "ttft" }), "first token (or byte)"),
      h("span", { class: "legend" }, h("span", { class: "swatch" }), "idle")), axisTicks(t0, t1));
    const wfBox = h("div", { class: "wf", id: "waterfall" });
    ui.detail = h("div", { class: "detail", id: "detail" },
      h("p", { class: "dim pad" }, "Click a span to see its messages."));
    append(main, [head, h("div", { class: "wfwrap" }, axis, wfBox), ui.detail]);
    wfBox.style.height = Math.max(60, Math.min(S.rows.length * 28 + 6, window.innerHeight * 0.42)) + "px";
    S.wf = new VList(wfBox, 28, renderSpanRow);
    S.wf.overlay = gapOverlay(d.gaps, t0, t1);
    S.wf.setItems(S.rows);
    if (d.incidents.length) {
      ui.detail.appendChild(incidentsBlock(d.incidents));
    }
  }

  function pct(ts) { return ((ts - S.t0) / S.span) * 100; }

  function axisTicks(t0, t1) {
    const box = h("div", { class: "axr" });
    for (let k = 0; k <= 4; k++) {
      box.appendChild(h("span", { class: "tick", style: { left: k * 25 + "%" } }, fmtDur((t1 - t0) * k / 4)));
    }
    return box;
  }

  function gapOverlay(gaps, t0, t1) {
    const layer = h("div", { class: "gaps" });
    const span = t1 - t0;
    const wide = gaps.filter((g) => (g[1] - g[0]) / span > 0.004).slice(0, 400);
    for (const g of wide) {
      const left = ((g[0] - t0) / span) * 100, width = ((g[1] - g[0]) / span) * 100;
      layer.appendChild(h("div", { class: "gap", title: "idle " + fmtDur(g[1] - g[0]) + " (no call or tool under way)",
        style: { left: left + "%", width: width + "%" } },
        width > 6 ? h("span", null, "idle " + fmtDur(g[1] - g[0])) : null));
    }
    return layer;
  }

  function spanCall(s) { return s.call_id ? S.trace.calls[s.call_id] : null; }

  function renderSpanRow(row, i) {
    const s = row.span;
    const call = spanCall(s);
    const bad = (call && call.error) || (s.attributes && s.attributes.error);
    const incomplete = call && call.complete === false;
    const cls = "srow k-" + s.kind + (i === S.selected ? " on" : "") + (bad ? " bad" : "") +
      (incomplete ? " incomplete" : "") + (s.inferred ? " inferred" : "");
    const dur = s.started !== null && s.ended !== null ? s.ended - s.started : null;
    const bar = h("div", { class: "track" });
    if (s.started !== null && s.started !== undefined) {
      const left = pct(s.started);
      const width = s.ended !== null && s.ended !== undefined ? Math.max(pct(s.ended) - left, 0.15) : 100 - left;
      const b = h("div", { class: "bar" + (s.ended === null ? " open" : ""), style: { left: left + "%", width: width + "%" },
        title: s.name + " · " + fmtDur(dur) }, h("span", { class: "blabel" }, fmtDur(dur)));
      bar.appendChild(b);
      if (call && call.timing) {
        const ft = call.timing.first_token ?? call.timing.first_byte;
        if (ft !== null && ft !== undefined) {
          bar.appendChild(h("div", { class: "ttft", style: { left: pct(ft) + "%" },
            title: (call.timing.first_token !== null ? "first token " : "first byte ") + fmtDur(ft - s.started) }));
        }
      }
    }
    return h("div", { class: cls, on: { click: () => selectRow(i) } },
      h("div", { class: "sl", style: { "padding-left": 6 + row.depth * 16 + "px" } },
        h("span", { class: "kind" }, s.kind === "model" ? "M" : s.kind === "tool" ? "T" : "A"),
        h("span", { class: "sname" }, s.name || "?"),
        call ? h("span", { class: "mono dim" }, " " + call.id) : null,
        s.inferred ? h("span", { class: "dim", title: "no execution was observed on the wire" }, " inferred") : null),
      bar);
  }

  function selectRow(i, anchor) {
    if (i < 0 || i >= S.rows.length) return;
    S.selected = i;
    S.wf.scrollTo(i);
    renderSpan(S.rows[i].span);
    if (anchor) flash(anchor);
  }

  function flash(anchor) {
    const el = ui.detail.querySelector('[data-anchor="' + CSS.escape(anchor) + '"]');
    if (!el) return;
    el.scrollIntoView({ block: "center" });
    el.classList.remove("flash");
    void el.offsetWidth;
    el.classList.add("flash");
  }

  function showError(e) {
    clear(ui.main).appendChild(h("div", { class: "card bad" }, "Could not load: " + (e && e.message ? e.message : String(e))));
  }

  // ---------------------------------------------------------------- span detail
  function renderSpan(s) {
    const call = spanCall(s);
    const d = clear(ui.detail);
    const views = call ? [["messages", "Messages"], ["category", "By category"], ["raw", "Raw HTTP"], ["json", "Call JSON"]] : [];
    const body = h("div", { class: "dbody" });
    const bar = h("div", { class: "views" }, views.map(([k, label]) => h("button", {
      class: "tab" + (S.spanView === k ? " on" : ""), id: "view-" + k,
      on: { click: () => { S.spanView = k; renderSpan(s); } } }, label)));
    append(d, [spanHeader(s, call), views.length ? bar : null, body]);
    if (s.kind === "tool") append(body, toolBlock(s));
    if (s.kind === "agent") append(body, agentBlock(s));
    if (call) {
      const v = S.spanView;
      if (v === "messages") append(body, messagesView(call));
      else if (v === "category") append(body, categoryView(call));
      else if (v === "raw") append(body, rawView(call));
      else append(body, [longText(pretty(call), "code")]);
      const incs = S.trace.incidents.filter((inc) => inc.call_id === call.id ||
        (inc.exchange_id && inc.exchange_id === call.exchange_id));
      if (incs.length) body.appendChild(incidentsBlock(incs));
    }
  }

  function spanHeader(s, call) {
    const kv = [];
    const add = (k, v) => { if (v !== null && v !== undefined && v !== "") kv.push(h("div", { class: "kv" }, h("span", { class: "k" }, k), h("span", { class: "v" }, String(v)))); };
    if (call) {
      const t = call.timing || {};
      add("call", call.id + " (" + call.api + ", exchange " + call.exchange_id + ")");
      add("model", call.request_model === call.response_model || !call.response_model ? call.request_model : (call.request_model || "?") + " → " + call.response_model);
      add("provider", call.provider);
      add("started", fmtTime(t.started));
      add("first byte", t.first_byte !== null && t.first_byte !== undefined ? "+" + fmtDur(t.first_byte - t.started) : null);
      add("first token", t.first_token !== null && t.first_token !== undefined ? "+" + fmtDur(t.first_token - t.started) : null);
      add("duration", t.ended !== null && t.ended !== undefined ? fmtDur(t.ended - t.started) : "not ended");
      add("stream", call.stream ? "yes" : "no");
      add("complete", call.complete ? "yes" : "NO (the whole call was not seen)");
      add("finish", (call.finish_reasons || []).join(", ") || "none reported");
      const u = call.usage || {};
      add("tokens", "in " + fmtInt(u.input_tokens) + " · out " + fmtInt(u.output_tokens) +
        (u.cached_input_tokens ? " · cached " + fmtInt(u.cached_input_tokens) : "") +
        (u.reasoning_tokens ? " · reasoning " + fmtInt(u.reasoning_tokens) : ""));
      if (call.error) add("error", pretty(call.error));
      for (const [k, v] of Object.entries(call.ids || {})) add(k, v);
      (call.diagnostics || []).forEach((dg) => add("diagnostic", dg.code + ": " + dg.message));
    } else {
      add("started", fmtTime(s.started));
      add("duration", s.ended !== null && s.started !== null ? fmtDur(s.ended - s.started) : null);
    }
    add("span", s.span_id ? s.span_id + (s.parent_id ? " (parent " + s.parent_id + ")" : "") : "view row (not a span of the report)");
    return h("div", { class: "dhead" }, h("h2", null, h("span", { class: "kind k-" + s.kind }, s.kind), " ", s.name || ""),
      h("div", { class: "kvs" }, kv));
  }

  function partAnchor(callId, side, m, k) { return callId + ":" + side + ":" + m + ":" + k; }

  function linkBtn(label, fn, id) { return h("button", { class: "lnk", id: id || null, on: { click: fn } }, label); }

  function gotoPart(callId, side, m, k) {
    const anchor = partAnchor(callId, side, m, k);
    S.spanView = "messages";
    const r = rowOfCall(callId);
    if (r >= 0) selectRow(r, anchor);
    else openCall(callId, anchor);
  }

  function findPart(call, side, pred) {
    if (!call) return null;
    const msgs = side === "output" ? call.output_messages : call.input_messages;
    for (let m = 0; m < (msgs || []).length; m++) {
      const parts = msgs[m].parts || [];
      for (let k = 0; k < parts.length; k++) if (pred(parts[k])) return [m, k];
    }
    return null;
  }

  function toolSpanFor(id, pred) {
    return S.rows.findIndex((r) => r.span.kind === "tool" && r.span.tool_call_id === id && (!pred || pred(r.span)));
  }

  function toolLinks(part, call, side) {
    const links = [];
    if (part.type === "tool_call" && part.id) {
      const r = toolSpanFor(part.id);
      if (r >= 0) {
        const ts = S.rows[r].span;
        links.push(linkBtn("→ execution: " + (ts.name || "tool") + (ts.inferred ? " (inferred)" : ""), () => selectRow(r)));
        const into = ts.result_in && ts.result_in !== call.id ? S.trace.calls[ts.result_in] : null;
        const at = findPart(into, "input", (p) => p.type === "tool_call_response" && p.id === part.id);
        if (at) links.push(linkBtn("→ result: " + ts.result_in + " input message [" + at[0] + "] part [" + at[1] + "]",
          () => gotoPart(ts.result_in, "input", at[0], at[1])));
      }
    }
    if (part.type === "tool_call_response" && part.id) {
      const r = toolSpanFor(part.id);
      if (r >= 0) {
        const ts = S.rows[r].span;
        links.push(linkBtn("← execution: " + (ts.name || "tool"), () => selectRow(r)));
        const from = ts.requested_by ? S.trace.calls[ts.requested_by] : null;
        const at = findPart(from, "output", (p) => p.type === "tool_call" && p.id === part.id);
        if (at) links.push(linkBtn("← requested: " + ts.requested_by + " output message [" + at[0] + "] part [" + at[1] + "]",
          () => gotoPart(ts.requested_by, "output", at[0], at[1])));
      }
    }
    return links.length ? h("div", { class: "links" }, links) : null;
  }

  const MAX_TEXT = 6000;
  function longText(text, cls) {
    const pre = h("pre", { class: cls || "text" });
    if (typeof text !== "string") text = pretty(text);
    if (text.length <= MAX_TEXT) { pre.textContent = text; return pre; }
    pre.textContent = text.slice(0, MAX_TEXT);
    const more = h("button", { class: "lnk", on: { click: () => { pre.textContent = text; more.remove(); } } },
      "show all (" + fmtInt(text.length - MAX_TEXT) + " more chars)");
    return h("div", null, pre, more);
  }

  function partBlock(part, label, anchor, call, side) {
    const t = part.type;
    let content;
    if (t === "text" || t === "reasoning") content = longText(part.content === undefined ? "" : part.content);
    else if (t === "tool_call") {
      content = h("div", null,
        h("div", { class: "tc" }, h("span", { class: "fn" }, part.name || "?"), h("span", { class: "mono dim" }, " id " + (part.id || "none"))),
        part.arguments !== null && part.arguments !== undefined ? longText(pretty(part.arguments), "code") :
          h("div", null, h("div", { class: "badge bad" }, "arguments did not parse" + (part.arguments_error ? ": " + part.arguments_error : "")),
            longText(part.arguments_raw === null || part.arguments_raw === undefined ? "(none)" : part.arguments_raw, "code")));
    } else if (t === "tool_call_response") {
      content = h("div", null, h("div", { class: "mono dim" }, "id " + (part.id || "none")), longText(pretty(part.response), "code"));
    } else if (t === "blob" || t === "uri" || t === "file") {
      const info = Object.assign({}, part);
      if (typeof info.content === "string" && info.content.length > 120) info.content = "(" + fmtInt(info.content.length) + " chars)";
      content = longText(pretty(info), "code");
    } else {
      content = longText(pretty(part), "code");
    }
    return h("div", { class: "part t-" + t, "data-anchor": anchor },
      h("div", { class: "plabel" }, h("span", { class: "pos" }, label), " ", h("span", { class: "badge" }, t)),
      content, toolLinks(part, call, side));
  }

  function messagesView(call) {
    const out = [];
    const sys = call.system_instructions || [];
    if (sys.length) {
      out.push(h("h3", null, "system instructions"));
      sys.forEach((p, k) => out.push(partBlock(p, "system instructions part [" + k + "]", partAnchor(call.id, "system", 0, k), call, "system")));
    }
    for (const [side, msgs] of [["input", call.input_messages || []], ["output", call.output_messages || []]]) {
      out.push(h("h3", null, side + " messages (" + msgs.length + ")"));
      if (!msgs.length) out.push(h("p", { class: "dim" }, "none"));
      msgs.forEach((m, n) => {
        const parts = (m.parts || []).map((p, k) => partBlock(p, side + " message [" + n + "] part [" + k + "]", partAnchor(call.id, side, n, k), call, side));
        out.push(h("div", { class: "msg role-" + (m.role || "none") },
          h("div", { class: "mhead" }, h("span", { class: "pos" }, side + " message [" + n + "]"), " ",
            h("span", { class: "role" }, m.role || "no role"), m.name ? " (" + m.name + ")" : "",
            m.finish_reason !== undefined ? h("span", { class: "dim" }, " finish: " + (m.finish_reason === null ? "none" : m.finish_reason)) : null),
          parts.length ? parts : h("p", { class: "dim" }, "no parts")));
      });
    }
    if ((call.tool_definitions || []).length) {
      out.push(h("details", null, h("summary", null, "tool definitions (" + call.tool_definitions.length + ")"), longText(pretty(call.tool_definitions), "code")));
    }
    return out;
  }

  // Seed 004's grouping, as `agentshark show` has it (src/agentshark/output/show.py).
  const CATEGORIES = ["system", "user", "reasoning", "planned tool calls", "earlier tool calls (input)",
    "tool call (request)", "tool results", "answer", "earlier answers (input)", "other"];
  const MODEL_ROLES = new Set(["assistant", "model"]);
  function category(side, role, part) {
    const t = part.type;
    if (role === "system" || role === "developer") return "system";
    if (role === "tool" || role === "function" || t === "tool_call_response") return "tool results";
    if (t === "reasoning") return "reasoning";
    if (t === "tool_call") {
      if (side === "output") return "planned tool calls";
      return MODEL_ROLES.has(role) ? "earlier tool calls (input)" : "tool call (request)";
    }
    if (role === "user" && (t === "text" || t === "blob" || t === "uri" || t === "file")) return "user";
    if (t === "text") {
      if (side === "output") return "answer";
      if (MODEL_ROLES.has(role)) return "earlier answers (input)";
    }
    return "other";
  }

  function categoryView(call) {
    const groups = new Map(CATEGORIES.map((c) => [c, []]));
    (call.system_instructions || []).forEach((p, k) => groups.get("system").push([p, "system instructions part [" + k + "]", "system", 0, k]));
    for (const [side, msgs] of [["input", call.input_messages || []], ["output", call.output_messages || []]]) {
      msgs.forEach((m, n) => (m.parts || []).forEach((p, k) =>
        groups.get(category(side, m.role, p)).push([p, side + " message [" + n + "] part [" + k + "]", side, n, k])));
    }
    const out = [];
    for (const [name, items] of groups) {
      if (!items.length) continue;
      out.push(h("h3", null, name + " (" + items.length + ")"));
      for (const [p, label, side, n, k] of items) out.push(partBlock(p, label, "cat:" + partAnchor(call.id, side, n, k), call, side));
    }
    return out;
  }

  function toolBlock(s) {
    const a = s.attributes || {};
    const out = [h("h3", null, "tool execution")];
    const rows = [];
    const add = (k, v) => rows.push(h("div", { class: "kv" }, h("span", { class: "k" }, k), h("span", { class: "v" }, v)));
    add("tool call id", s.tool_call_id || "none");
    add("observed", s.inferred ? "no: inferred from the model calls (no execution on the wire)" : "yes");
    out.push(h("div", { class: "kvs" }, rows));
    const links = [];
    if (s.requested_by) {
      const at = findPart(S.trace.calls[s.requested_by], "output", (p) => p.type === "tool_call" && p.id === s.tool_call_id);
      links.push(linkBtn("← requested by " + s.requested_by + (at ? " output message [" + at[0] + "] part [" + at[1] + "]" : ""),
        () => at ? gotoPart(s.requested_by, "output", at[0], at[1]) : openCall(s.requested_by), "link-requested"));
    }
    const xhttp = s.execution && !S.trace.calls[s.execution] ? S.trace.exchanges[s.execution] : null;
    if (s.execution && s.execution !== s.call_id && S.trace.calls[s.execution]) {
      links.push(linkBtn("execution: " + s.execution, () => openCall(s.execution), "link-execution"));
    }
    if (s.result_in) {
      const at = findPart(S.trace.calls[s.result_in], "input", (p) => p.type === "tool_call_response" && p.id === s.tool_call_id);
      links.push(linkBtn("→ result in " + s.result_in + (at ? " input message [" + at[0] + "] part [" + at[1] + "]" : ""),
        () => at ? gotoPart(s.result_in, "input", at[0], at[1]) : openCall(s.result_in), "link-result"));
    }
    if (links.length) out.push(h("div", { class: "links" }, links));
    if (xhttp) {
      const box = h("div", null);
      const req = xhttp.request || {};
      out.push(h("h3", null, "executed as"));
      out.push(h("div", { class: "links" }, h("span", { class: "mono" }, s.execution + " " + (req.method || "") + " " + (req.url || "")),
        linkBtn("raw HTTP", () => { clear(box); append(box, rawExchange(s.execution)); }, "link-execution")));
      if (a.execution_evidence) out.push(h("p", { class: "dim" }, "evidence: " + a.execution_evidence));
      out.push(box);
    }
    if ("arguments" in a) { out.push(h("h3", null, "arguments")); out.push(longText(pretty(a.arguments), "code")); }
    if ("result" in a) { out.push(h("h3", null, "result" + (a.result_from ? " (as seen in " + a.result_from + ")" : ""))); out.push(longText(pretty(a.result), "code")); }
    const rest = Object.fromEntries(Object.entries(a).filter(([k]) => !["arguments", "result", "result_from", "execution_evidence"].includes(k)));
    if (Object.keys(rest).length) out.push(h("details", null, h("summary", null, "attributes"), longText(pretty(rest), "code")));
    return out;
  }

  function agentBlock(s) {
    const out = [];
    const tr = S.trace.trace;
    if ((tr.hints || []).length) out.push(h("details", null, h("summary", null, "hints (" + tr.hints.length + ")"), longText(pretty(tr.hints), "code")));
    if (Object.keys(s.attributes || {}).length) out.push(h("details", null, h("summary", null, "attributes"), longText(pretty(s.attributes), "code")));
    if ((s.links || []).length) out.push(h("details", null, h("summary", null, "links"), longText(pretty(s.links), "code")));
    return out;
  }

  function incidentsBlock(incs) {
    return h("div", { class: "incidents", "data-anchor": "incidents" }, h("h3", null, "incidents (" + incs.length + ")"),
      incs.map((inc) => h("div", { class: "incident sev-" + sevClass(inc.severity) },
        h("div", null, h("span", { class: "badge " + sevClass(inc.severity) }, inc.severity), " ",
          h("span", { class: "mono" }, inc.rule), " · ", h("span", { class: "mono dim" }, inc.call_id || inc.exchange_id || "")),
        h("div", { class: "imsg" }, inc.message),
        inc.evidence ? h("details", null, h("summary", null, "evidence"), longText(pretty(inc.evidence), "code")) : null)));
  }

  function headersTable(hs) {
    return h("table", { class: "hdrs" }, (hs || []).map(([k, v]) => h("tr", null, h("td", { class: "k" }, k), h("td", null, v))));
  }

  function bodyBlock(raw, label) {
    if (!raw) return h("p", { class: "dim" }, label + ": not kept");
    if (raw.text === null || raw.text === undefined) return h("p", { class: "dim" }, label + ": " + plural(raw.bytes, "byte") + " of data (not text)" + (raw.decoded ? "" : ", content coding not decoded"));
    const note = raw.shown < raw.bytes ? " (first " + plural(raw.shown, "byte") + " of " + fmtInt(raw.bytes) + ")" : " (" + plural(raw.bytes, "byte") + ")";
    return h("div", null, h("div", { class: "dim" }, label + note), longText(raw.text || "(empty)", "code"));
  }

  function rawView(call) { return rawExchange(call.exchange_id); }

  function rawExchange(xid) {
    const x = S.trace.exchanges[xid];
    const raw = S.trace.raw[xid] || {};
    if (!x) return [h("p", { class: "dim" }, "exchange " + xid + " is not in the report")];
    const rq = x.request || {}, rs = x.response;
    const out = [h("p", { class: "dim" }, "As captured, credentials redacted. " + x.id + " · " + (x.transport || "") + (x.connection ? " · connection " + x.connection : ""))];
    out.push(h("h3", null, "request"));
    out.push(h("pre", { class: "code reqline" }, (rq.method || "") + " " + (rq.url || "") + " " + (rq.version || "")));
    out.push(headersTable(rq.headers));
    out.push(bodyBlock(raw.request, "request body"));
    out.push(h("h3", null, "response"));
    if (!rs) out.push(h("p", { class: "dim" }, "no response seen"));
    else {
      out.push(h("pre", { class: "code reqline" }, (rs.status === null ? "(no status)" : rs.status) + " " + (rs.reason || "") + " " + (rs.version || "")));
      out.push(headersTable(rs.headers));
      if (rs.events && rs.events.length) {
        const t0 = rq.started || 0;
        out.push(h("details", null, h("summary", null, "stream events (" + rs.events.length + ")"),
          longText(rs.events.map((e) => (e.ts !== null ? "+" + fmtDur(e.ts - t0) : "") + "  " + e.type +
            (e.event ? " " + e.event : "") + "  " + (e.data !== undefined ? e.data : e.payload !== undefined ? e.payload : e.text || "")).join("\n"), "code")));
      }
      out.push(bodyBlock(raw.response, "response body"));
    }
    if ((x.diagnostics || []).length) out.push(h("h3", null, "diagnostics"), h("ul", null, x.diagnostics.map(diagItem)));
    return out;
  }

  // ---------------------------------------------------------------- serve: the list of captures
  function renderCaptures(list) {
    const body = clear(document.body);
    const rows = list.captures.map((c) => h("tr", null,
      h("td", null, h("button", { class: "lnk mono", on: { click: () => { location.assign("view/" + encodeURIComponent(c.id)); } } }, c.name)),
      h("td", null, c.format || ""), h("td", { class: "num" }, fmtInt(c.bytes)),
      h("td", { class: "num" }, c.summary ? fmtInt(c.summary.traces) : "–"),
      h("td", { class: "num" }, c.summary ? fmtInt(c.summary.calls) : "–"),
      h("td", { class: "num" }, c.summary ? fmtInt(c.summary.incidents) : "–"),
      h("td", { class: "num" }, c.summary ? fmtInt(c.summary.errors) : "–"),
      h("td", { class: "dim" }, c.summary ? "analyzed" : "opens on click")));
    append(body, [
      h("header", { class: "top" }, h("div", { class: "brand" }, h("span", { class: "logo" }, "◆"), " agentshark"),
        h("div", { class: "srcs" }, list.root || "")),
      h("main", { class: "captures" }, h("h1", null, plural(list.captures.length, "input")),
        h("table", { class: "caps", id: "captures" },
          h("tr", null, ["file", "format", "bytes", "traces", "calls", "incidents", "errors", ""].map((x) => h("th", null, x))), rows)),
    ]);
  }

  // ---------------------------------------------------------------- start
  function poll() {
    S.source.index().then((ix) => {
      if (ix.version !== S.index.version) {
        // the open trace is found again by its id: indexes may move as a live report grows
        const open = S.trace ? S.index.traces[S.trace.index].trace_id : undefined;
        S.source.forget(); S.trace = null;
        setIndex(ix);
        const again = open === undefined ? -1 : ix.traces.findIndex((t) => t.trace_id === open);
        if (again >= 0) openTrace(again);
      }
      if (ix.live) setTimeout(poll, 2000);
    }).catch(() => setTimeout(poll, 5000));
  }

  function start() {
    const mode = document.body.getAttribute("data-source");
    if (mode === "captures") {
      getJson("api/captures").then((list) => { renderCaptures(list); document.body.setAttribute("data-ready", "1"); }).catch((e) => { document.body.textContent = "Could not load: " + e.message; });
      return;
    }
    S.source = mode === "http" ? httpSource(document.body.getAttribute("data-api")) : inlineSource();
    layout();
    S.source.index().then((ix) => {
      setIndex(ix);
      document.body.setAttribute("data-ready", "1");
      if (ix.live) setTimeout(poll, 2000);
    }).catch(showError);
  }

  window.agentsharkViewer = { state: S };
  start();
})();
