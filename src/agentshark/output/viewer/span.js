// agentshark viewer, part 5: a span's detail: header, numbered messages and parts, tool links.
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
