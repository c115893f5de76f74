// agentshark viewer, part 3: state, page layout, summary, filters, the left lists, overview.
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
  // A call matches every filter set; a trace matches when it has incidents (if asked) and one
  // of its calls matches the other filters, or the search names its trace id.
  function callMatches(c, skipIncidents) {
    if (S.api && c.api !== S.api) return false;
    if (S.model && c.model !== S.model) return false;
    if (S.errors && !c.error) return false;
    if (S.incidents && !skipIncidents && !c.incidents) return false;
    if (S.q && !c.search.includes(S.q)) return false;
    return true;
  }

  function traceMatches(t, i) {
    if (S.incidents && !t.incidents) return false;
    if (!S.api && !S.model && !S.errors && !S.q) return true;
    if (S.q && !S.api && !S.model && !S.errors && t.trace_id && t.trace_id.includes(S.q)) return true;
    return S.traceCalls[i].some((c) => callMatches(c, true));
  }

  function applyFilters() {
    const ix = S.index;
    let items;
    if (S.tab === "traces") {
      items = ix.traces.filter(traceMatches).map((t) => ({ kind: "trace", t }));
    } else if (S.tab === "calls") {
      items = ix.calls.filter((c) => callMatches(c, false)).map((c) => ({ kind: "call", c }));
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
