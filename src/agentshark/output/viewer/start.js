// agentshark viewer, part 7: the list of captures (serve), live polling, start.
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
