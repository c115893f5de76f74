// agentshark viewer, part 6: tool and agent spans, incidents, raw HTTP on demand.
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
