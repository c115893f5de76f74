// agentshark viewer, part 2: building elements from text only, formatting, virtual lists.
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
  const INT = new Intl.NumberFormat("en-US");  // one formatter: toLocaleString makes one a call
  function fmtInt(n) { return n === null || n === undefined ? "–" : INT.format(Number(n)); }
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
