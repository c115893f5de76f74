// agentshark viewer, part 4: one trace as a tree and a waterfall on the wire clock.
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
