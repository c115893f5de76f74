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
//
// This file is one part of the viewer: html_report.viewer_script() joins the parts
// (source, dom, lists, trace, span, blocks, start) inside one function scope.
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
