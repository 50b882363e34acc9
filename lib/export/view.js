// hgtrace view: the page's timeline (no library; data in #hgt-data, see lib/export/view.c).
"use strict";
(() => {
  const D = JSON.parse(document.getElementById("hgt-data").textContent);
  const T0 = BigInt(D.t0);
  const LAB = D.labels, FL = D.labelFlags;
  const GUTTER = 230, RULER = 24, RAW_MAX = 40000, RAW_PER_PX = 4;
  const cv = document.getElementById("cv"), ctx = cv.getContext("2d");
  const state = document.getElementById("state"), detail = document.getElementById("detail");
  const started = performance.now();
  let firstPaint = -1;

  // ---- data ----
  function bytes(s) {
    const b = atob(s), u = new Uint8Array(b.length);
    for (let i = 0; i < b.length; i++) u[i] = b.charCodeAt(i);
    return u;
  }
  // zlib inflate (RFC 1950/1951), synchronous: the page works on its data at once, so a
  // headless browser dumping the DOM after load sees it all (the canonical decoding of
  // Mark Adler's puff.c, written here for this page).
  const LB = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
  const LE = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
  const DB = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577];
  const DE = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];
  const ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];
  function huff(len, n) {
    const count = new Uint16Array(16), sym = new Uint16Array(n), offs = new Uint16Array(16);
    for (let i = 0; i < n; i++) count[len[i]]++;
    count[0] = 0;
    for (let i = 1; i < 16; i++) offs[i] = offs[i - 1] + count[i - 1];
    for (let i = 0; i < n; i++) if (len[i]) sym[offs[len[i]]++] = i;
    return { count, sym };
  }
  function inflate(s) {
    const src = bytes(s);
    let pos = 2, buf = 0, cnt = 0, out = new Uint8Array(src.length * 4 + 1024), n = 0;
    const need = (k) => {
      if (n + k <= out.length) return;
      const o = new Uint8Array(Math.max(out.length * 2, n + k));
      o.set(out.subarray(0, n)); out = o;
    };
    const bits = (k) => {
      while (cnt < k) {
        if (pos >= src.length) throw new Error("inflate: data ends early");
        buf |= src[pos++] << cnt; cnt += 8;
      }
      const v = buf & ((1 << k) - 1);
      buf >>>= k; cnt -= k;
      return v;
    };
    const decode = (h) => {
      let code = 0, first = 0, index = 0;
      for (let len = 1; len < 16; len++) {
        code |= bits(1);
        const c = h.count[len];
        if (code - c < first) return h.sym[index + (code - first)];
        index += c; first += c; first <<= 1; code <<= 1;
      }
      throw new Error("inflate: bad code");
    };
    let last;
    do {
      last = bits(1);
      const type = bits(2);
      if (type === 0) {
        buf = 0; cnt = 0;
        const len = src[pos] | (src[pos + 1] << 8);
        pos += 4;
        need(len); out.set(src.subarray(pos, pos + len), n); n += len; pos += len;
        continue;
      }
      let lh, dh;
      if (type === 1) {
        const l = new Uint8Array(288);
        l.fill(8, 0, 144); l.fill(9, 144, 256); l.fill(7, 256, 280); l.fill(8, 280, 288);
        lh = huff(l, 288); dh = huff(new Uint8Array(30).fill(5), 30);
      } else if (type === 2) {
        const nl = bits(5) + 257, nd = bits(5) + 1, nc = bits(4) + 4, cl = new Uint8Array(19);
        for (let i = 0; i < nc; i++) cl[ORDER[i]] = bits(3);
        const ch = huff(cl, 19), l = new Uint8Array(nl + nd);
        for (let i = 0; i < nl + nd;) {
          const sym = decode(ch);
          if (sym < 16) { l[i++] = sym; continue; }
          let rep = 0, v = 0;
          if (sym === 16) { if (!i) throw new Error("inflate: bad repeat"); v = l[i - 1]; rep = 3 + bits(2); }
          else if (sym === 17) rep = 3 + bits(3);
          else rep = 11 + bits(7);
          while (rep--) l[i++] = v;
        }
        lh = huff(l.subarray(0, nl), nl); dh = huff(l.subarray(nl), nd);
      } else throw new Error("inflate: bad block type");
      for (;;) {
        let sym = decode(lh);
        if (sym < 256) { need(1); out[n++] = sym; continue; }
        if (sym === 256) break;
        sym -= 257;
        const len = LB[sym] + bits(LE[sym]), ds = decode(dh), dist = DB[ds] + bits(DE[ds]);
        need(len);
        for (let i = 0; i < len; i++, n++) out[n] = out[n - dist];
      }
    } while (!last);
    return out.subarray(0, n);
  }
  function reader(u) {
    let p = 0;
    return {
      more: () => p < u.length,
      next() {
        let v = 0, m = 1, b;
        do { b = u[p++]; v += (b & 127) * m; m *= 128; } while (b & 128);
        return v;
      },
    };
  }
  const tracks = D.tracks.map((t, i) => Object.assign(t, { idx: i, dec: [], lv: [] }));
  // A chunk of items: t (start), d (duration), l (label), e (its line in tr.texts) arrays.
  // Its bytes are columns: times (an event's from the one before, an interval's from where
  // the one before ended, zigzag; the first from the chunk's t0), an interval's durations,
  // labels, an event's line numbers (zigzag, apart from its position in the track).
  function chunk(tr, ci) {
    if (tr.dec[ci]) return tr.dec[ci];
    const c = tr.chunks[ci], r = reader(inflate(c.b)), n = c.n, ev = tr.kind === 0;
    const o = { t: new Float64Array(n), d: new Float64Array(n), l: new Uint32Array(n), e: new Float64Array(n) };
    const zz = (z) => (z % 2 ? -(z + 1) / 2 : z / 2);
    let base = 0;
    for (let k = 0; k < ci; k++) base += tr.chunks[k].n;
    for (let i = 0; i < n; i++) o.t[i] = r.next();
    if (!ev) for (let i = 0; i < n; i++) o.d[i] = r.next();
    for (let i = 0; i < n; i++) o.l[i] = r.next();
    if (ev) for (let i = 0; i < n; i++) o.e[i] = base + i + zz(r.next());
    for (let i = 0, p = c.t0; i < n; i++) {
      o.t[i] = p + (ev ? o.t[i] : zz(o.t[i]));
      p = ev ? o.t[i] : o.t[i] + o.d[i];
    }
    return (tr.dec[ci] = o);
  }
  function level(tr, li) {
    if (tr.lv[li]) return tr.lv[li];
    const r = reader(inflate(tr.levels[li].b)), b = [], v = [], l = [];
    let k = 0;
    while (r.more()) { k += r.next(); b.push(k); v.push(r.next()); l.push(tr.kind === 0 ? 0 : r.next()); }
    return (tr.lv[li] = { b, v, l });
  }
  function chunksIn(tr, a, b) {
    const out = [];
    tr.chunks.forEach((c, i) => { if (c.t0 <= b && c.t1 >= a) out.push(i); });
    return out;
  }

  // ---- layout ----
  const rows = [];
  let y = RULER, lastGroup = null;
  for (const tr of tracks) {
    if (tr.group !== lastGroup) { rows.push({ group: tr.group, y, h: 18 }); y += 18; lastGroup = tr.group; }
    const h = tr.kind === 0 ? 16 : 14;
    rows.push({ tr, y, h });
    tr.y = y; tr.h = h;
    y += h + 2;
  }
  const HEIGHT = y + 30;
  let W = 800, v0 = 0, v1 = Math.max(D.span, 1000), match = null;
  function resize() {
    W = Math.max(400, window.innerWidth - 4);
    const r = window.devicePixelRatio || 1;
    cv.width = W * r; cv.height = HEIGHT * r;
    cv.style.width = W + "px"; cv.style.height = HEIGHT + "px";
    ctx.setTransform(r, 0, 0, r, 0, 0);
  }
  const X = (t) => GUTTER + ((t - v0) / (v1 - v0)) * (W - GUTTER);
  const Tx = (x) => v0 + ((x - GUTTER) / (W - GUTTER)) * (v1 - v0);
  function absTime(rel) {
    const ns = T0 + BigInt(Math.round(rel));
    if (!D.ns) return ns.toString();
    const s = ns / 1000000000n, f = (ns % 1000000000n).toString().padStart(9, "0");
    return s + "." + f;
  }
  function dur(ns) {
    if (!D.ns) return ns + " ticks";
    return ns >= 1e9 ? (ns / 1e9).toFixed(6) + " s" : ns >= 1e6 ? (ns / 1e6).toFixed(3) + " ms"
      : ns >= 1e3 ? (ns / 1e3).toFixed(3) + " us" : ns + " ns";
  }

  // ---- colors ----
  const cache = new Map();
  function hue(s) { let h = 0; for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0; return h % 360; }
  function color(tr, l) {
    const k = tr.kind + ":" + l;
    if (cache.has(k)) return cache.get(k);
    const f = FL[l], s = LAB[l];
    let c;
    if (tr.kind === 2) {
      c = f & 2 ? "#43a047" : f & 4 ? `hsl(${200 + hue(s) % 80},70%,45%)` : f & 8 ? "#e53935"
        : f & 16 ? "#616161" : f & 32 ? "#fb8c00" : f & 64 ? "#90caf9" : f & 256 ? "#cfd8dc" : "#ffffff";
    } else if (tr.kind === 1) {
      c = f & 1 ? "#8e24aa" : /^swapper|^<idle>|^idle/.test(s) ? "#e0e0e0" : `hsl(${hue(s)},45%,70%)`;
    } else c = `hsl(${hue(s)},65%,40%)`;
    cache.set(k, c);
    return c;
  }

  // ---- drawing ----
  let queued = false;
  function redraw() { if (!queued) { queued = true; requestAnimationFrame(draw); } }
  function pickLevel(tr, npp) {
    let best = -1;
    tr.levels.forEach((L, i) => { if (L.w >= npp && (best < 0 || L.w < tr.levels[best].w)) best = i; });
    if (best < 0) tr.levels.forEach((L, i) => { if (best < 0 || L.w > tr.levels[best].w) best = i; });
    return best;
  }
  const drawn = [];
  // How many of chunks @cs of @tr lie in the view: a chunk inside it counts whole, one across
  // its edges item by item.
  function inView(tr, cs) {
    let n = 0;
    for (const ci of cs) {
      const k = tr.chunks[ci];
      if (k.t0 >= v0 && k.t1 <= v1) { n += k.n; continue; }
      const c = chunk(tr, ci);
      for (let i = 0; i < c.t.length; i++) if (c.t[i] <= v1 && c.t[i] + c.d[i] >= v0) n++;
    }
    return n;
  }
  function drawTrack(tr) {
    const npp = (v1 - v0) / (W - GUTTER), cs = chunksIn(tr, v0, v1);
    const est = cs.reduce((s, i) => s + tr.chunks[i].n, 0);
    const y0 = tr.y, h = tr.h;
    // one by one while they can be told apart: at most RAW_PER_PX per pixel in view (more
    // are one blur, drawn faster and as truly from the summary)
    if (est <= RAW_MAX && inView(tr, cs) <= RAW_PER_PX * (W - GUTTER)) {
      const dec = cs.map((i) => chunk(tr, i));
      {
        drawn[tr.idx] = "raw";
        for (const c of dec) {
          for (let i = 0; i < c.t.length; i++) {
            const t = c.t[i], d = c.d[i];
            if (t > v1 || t + d < v0) continue;
            const dim = match && !match.has(c.l[i]);
            ctx.globalAlpha = dim ? 0.15 : 1;
            ctx.fillStyle = color(tr, c.l[i]);
            if (tr.kind === 0) {
              ctx.fillRect(Math.floor(X(t)), y0 + 2, est < 2000 ? 3 : 1, h - 4);
            } else {
              const a = Math.max(X(t), GUTTER), b = Math.min(X(t + d), W);
              ctx.fillRect(a, y0, Math.max(b - a, 1), h);
              if (b - a > 50 && !dim) {
                ctx.fillStyle = "#000";
                ctx.save(); ctx.beginPath(); ctx.rect(a, y0, b - a, h); ctx.clip();
                ctx.fillText(LAB[c.l[i]], a + 2, y0 + h - 3);
                ctx.restore();
              }
            }
          }
        }
        ctx.globalAlpha = 1;
        return;
      }
    }
    const li = pickLevel(tr, npp);
    if (li < 0) return;
    const L = level(tr, li);
    drawn[tr.idx] = "level";
    const w = tr.levels[li].w;
    let lo = 0, hi = L.b.length;
    const first = Math.floor(v0 / w);
    while (lo < hi) { const m = (lo + hi) >> 1; if (L.b[m] < first) lo = m + 1; else hi = m; }
    for (let i = lo; i < L.b.length && L.b[i] * w <= v1; i++) {
      const a = Math.max(X(L.b[i] * w), GUTTER), b = Math.max(X((L.b[i] + 1) * w), a + 1);
      if (tr.kind === 0) {
        const f = Math.min(1, Math.log2(1 + L.v[i]) / 10);
        ctx.fillStyle = "#37474f";
        ctx.fillRect(a, y0 + h * (1 - f), b - a, h * f);
      } else {
        ctx.globalAlpha = 0.25 + (0.75 * L.v[i]) / 255;
        ctx.fillStyle = color(tr, L.l[i]);
        ctx.fillRect(a, y0, b - a, h);
        ctx.globalAlpha = 1;
      }
    }
  }
  function ruler() {
    const span = v1 - v0, target = span / ((W - GUTTER) / 110);
    let step = 1;
    while (step * 10 <= target) step *= 10;
    step *= target / step > 5 ? 10 : target / step > 2 ? 5 : target / step > 1 ? 2 : 1;
    ctx.fillStyle = "#eceff1"; ctx.fillRect(0, 0, W, RULER);
    ctx.fillStyle = "#37474f"; ctx.strokeStyle = "#b0bec5";
    // ticks at round absolute times (T0 is the session's first time, not a round one)
    step = Math.max(1, Math.round(step));
    const off = Number(T0 % BigInt(step));
    for (let t = Math.ceil((v0 + off) / step) * step - off; t <= v1; t += step) {
      const x = X(t);
      ctx.beginPath(); ctx.moveTo(x, RULER - 6); ctx.lineTo(x, HEIGHT); ctx.stroke();
      ctx.fillText(absTime(t), x + 2, 11);
    }
    ctx.fillText("span " + dur(Math.round(span)), 4, 11);
    ctx.fillText(D.ns ? "time: s (report)" : "time: ticks", 4, 21);
  }
  function draw() {
    queued = false;
    ctx.clearRect(0, 0, W, HEIGHT);
    ctx.font = "11px DejaVu Sans, sans-serif";
    ruler();
    if (D.flight) { // the flight recorder's trigger: a band over every track
      const a = Math.max(X(D.flight.from), GUTTER), b = Math.min(X(D.flight.to), W);
      if (b >= GUTTER && a <= W) {
        ctx.fillStyle = "rgba(233,30,99,0.18)";
        ctx.fillRect(a - 1, RULER, Math.max(b - a, 1) + 2, HEIGHT - RULER);
      }
    }
    for (const w of D.why) {
      const a = Math.max(X(w.from), GUTTER), b = Math.min(X(w.to), W);
      if (b < GUTTER || a > W) continue;
      ctx.fillStyle = w.host ? "rgba(255,193,7,0.35)" : "rgba(129,212,250,0.35)";
      for (const k of [w.ev, w.vcpu]) if (k >= 0) ctx.fillRect(a, tracks[k].y - 1, Math.max(b - a, 2), tracks[k].h + 2);
    }
    for (const r of rows) {
      if (r.group !== undefined) {
        ctx.fillStyle = "#cfd8dc"; ctx.fillRect(0, r.y, W, r.h);
        ctx.fillStyle = "#102027"; ctx.fillText(r.group, 4, r.y + 13);
        continue;
      }
      ctx.fillStyle = "#37474f";
      ctx.fillText(r.tr.name + " (" + r.tr.n + ")", 12, r.y + r.h - 3);
      ctx.save(); ctx.beginPath(); ctx.rect(GUTTER, r.y, W - GUTTER, r.h + 1); ctx.clip();
      drawTrack(r.tr);
      ctx.restore();
    }
    if (firstPaint < 0) { firstPaint = performance.now(); publish(); }
  }

  // ---- interaction ----
  function zoomTo(a, b) {
    if (b - a < 10) { const m = (a + b) / 2; a = m - 5; b = m + 5; }
    v0 = a; v1 = b; redraw();
  }
  function zoom(f, at) { zoomTo(at - (at - v0) * f, at + (v1 - at) * f); }
  function pan(dx) { const d = dx * (v1 - v0); zoomTo(v0 + d, v1 + d); }
  cv.addEventListener("wheel", (e) => {
    e.preventDefault();
    if (e.shiftKey) pan(e.deltaY / 1000);
    else zoom(Math.pow(1.2, e.deltaY / 100), Tx(e.offsetX));
  }, { passive: false });
  let drag = null;
  cv.addEventListener("mousedown", (e) => { drag = { x: e.offsetX, v0, v1, moved: false }; });
  window.addEventListener("mouseup", (e) => {
    if (drag && !drag.moved && e.target === cv) click(e.offsetX, e.offsetY);
    drag = null;
  });
  cv.addEventListener("mousemove", (e) => {
    if (!drag) return;
    const d = ((e.offsetX - drag.x) / (W - GUTTER)) * (drag.v1 - drag.v0);
    if (Math.abs(e.offsetX - drag.x) > 2) drag.moved = true;
    v0 = drag.v0 - d; v1 = drag.v1 - d; redraw();
  });
  window.addEventListener("keydown", (e) => {
    if (e.target.tagName === "INPUT") return;
    const m = (v0 + v1) / 2, k = e.key.toLowerCase();
    if (k === "w" || k === "+" || k === "=") zoom(1 / 1.5, m);
    else if (k === "s" || k === "-") zoom(1.5, m);
    else if (k === "a" || k === "arrowleft") pan(-0.2);
    else if (k === "d" || k === "arrowright") pan(0.2);
    else if (k === "0") zoomTo(0, Math.max(D.span, 1000));
    else if (k === "n") next();
  });
  window.addEventListener("resize", () => { resize(); redraw(); });
  // Item @i of chunk @c of events track @tr: its report line, among the track's own. A
  // trace.dat CPU's track keeps "\1COMM-PID\0INFO"; the file (its group), CPU, time and event
  // name (the label) are put back as the report prints them.
  function eventText(tr, c, i) {
    const e = c.e[i], u = inflate(tr.texts[Math.floor(e / D.textChunk)]);
    const line = new TextDecoder("latin1").decode(u).split("\n")[e % D.textChunk];
    if (tr.cpu === undefined || line.charCodeAt(0) !== 1) return line;
    const z = line.indexOf("\0"), ns = T0 + BigInt(c.t[i]);
    const s = (ns / 1000000000n).toString().padStart(5, " ");
    const f = (ns % 1000000000n).toString().padStart(9, "0");
    return `${tr.group}: ${line.slice(1, z)} [${String(tr.cpu).padStart(3, "0")}] ${s}.${f}: ` +
      `${LAB[c.l[i]]}: ${line.slice(z + 1)}`;
  }
  // What a click at time @t on track @tr shows (tolerance @tol ns): an event's report line,
  // or an interval's label, start and length; "" when nothing is there.
  function pick(tr, t, tol) {
    let best = null;
    for (const ci of chunksIn(tr, t - tol, t + tol)) {
      const c = chunk(tr, ci);
      for (let i = 0; i < c.t.length; i++) {
        const dist = tr.kind === 0 ? Math.abs(c.t[i] - t) : t >= c.t[i] && t <= c.t[i] + c.d[i] ? 0 : Infinity;
        if (dist <= tol && (!best || dist < best.dist)) best = { dist, c, i };
      }
    }
    if (!best) return "";
    const { c, i } = best;
    return tr.kind === 0 ? eventText(tr, c, i)
      : `${tr.group} ${tr.name}: ${LAB[c.l[i]]}  from ${absTime(c.t[i])} for ${dur(c.d[i])}`;
  }
  function click(x, y) {
    const r = rows.find((r) => r.tr && y >= r.y && y < r.y + r.h + 2);
    if (!r || x < GUTTER) return;
    detail.textContent = pick(r.tr, Tx(x), 4 * ((v1 - v0) / (W - GUTTER)));
  }

  // ---- search: event name, task (comm-pid), pid ----
  const bar = document.getElementById("bar");
  const key = (c, t) => `<i style="display:inline-block;width:10px;height:10px;background:${c}"></i> ${t}`;
  bar.innerHTML = '<input id="q" placeholder="search: event, task or pid (Enter, then n)"> <span id="qn"></span>' +
    "<span>wheel/W/S zoom, drag/A/D pan, 0 all, click an item</span>" +
    "<span>vCPU: " + [key("#43a047", "guest"), key("hsl(240,70%,45%)", "exit (by reason)"),
      key("#e53935", "preempted"), key("#cfd8dc", "halted"), key("#616161", "blocked"),
      key("#fb8c00", "host IRQ"), key("#8e24aa", "vCPU thread (tasks)")].join(" ") + "</span>";
  // the exit reasons of this session's vCPU tracks, each with its colour (a click opens the list)
  const exits = LAB.map((l, i) => i).filter((i) => FL[i] & 4)
    .sort((a, b) => (LAB[a] < LAB[b] ? -1 : LAB[a] > LAB[b] ? 1 : 0));
  if (exits.length) {
    const d = document.createElement("details");
    d.id = "exits";
    d.innerHTML = `<summary>exit reasons (${exits.length})</summary><div>` +
      exits.map((i) => key(color({ kind: 2 }, i), LAB[i].replace(/^exit /, ""))).join("<br>") + "</div>";
    bar.appendChild(d);
  }
  const q = document.getElementById("q"), qn = document.getElementById("qn");
  let hits = [], hit = -1;
  function search(s) {
    s = s.trim().toLowerCase();
    if (!s) { match = null; hits = []; qn.textContent = ""; redraw(); return 0; }
    const pid = /^\d+$/.test(s);
    match = new Set();
    LAB.forEach((l, i) => { const x = l.toLowerCase(); if (pid ? x.endsWith("-" + s) : x.includes(s)) match.add(i); });
    for (const tr of tracks) tr.chunks.forEach((c, i) => chunk(tr, i));
    hits = [];
    for (const tr of tracks) for (const c of tr.dec) for (let i = 0; i < c.t.length; i++) if (match.has(c.l[i])) hits.push(c.t[i]);
    hits.sort((a, b) => a - b);
    hit = -1;
    qn.textContent = hits.length + " matches";
    redraw();
    return hits.length;
  }
  function next() {
    if (!hits.length) return;
    const m = (v0 + v1) / 2;
    hit = hits.findIndex((t) => t > m + 1);
    if (hit < 0) hit = 0;
    const w = v1 - v0;
    zoomTo(hits[hit] - w / 2, hits[hit] + w / 2);
  }
  q.addEventListener("keydown", (e) => { if (e.key === "Enter") { search(q.value); next(); } });

  // ---- header and the worst delays ----
  const hdr = document.getElementById("hdr");
  const esc = (s) => s.replace(/[&<>]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" })[c]);
  hdr.innerHTML = `<b>hgtrace view</b>: ${esc(D.files.join(", "))}; ${D.events} events, ${tracks.length} tracks` +
    (D.tscHz ? `; TSC cycles made ns at ${D.tscHz} Hz (${esc(D.tscFrom)} rate)` :
      D.ns ? "" : `; times in clock ticks, not ns: ${esc(D.tscFrom || "no rate known")} (give --ts2secs HZ)`) +
    (D.sync ? `<pre>${esc(D.sync)}</pre>` : "<pre>no host + guest pair: no sync check</pre>") +
    (D.losses.length ? `<pre class="loss">${esc(D.losses.join("\n"))}</pre>` : "<pre>no events lost</pre>");
  const why = document.getElementById("why");
  why.innerHTML = D.why.length ? "<b>worst guest delays the host caused</b> (hgtrace why --host-only; click to zoom):"
    : D.whyNote ? esc(D.whyNote) : "no guest delay the host caused most of";
  if (D.flight) {
    const el = document.createElement("div");
    el.className = "flight";
    el.textContent = `saved by the flight recorder for ${D.flight.title} (the pink band; click to zoom)`;
    el.onclick = () => { const m = (D.flight.to - D.flight.from) * 0.5 + 1000; zoomTo(D.flight.from - m, D.flight.to + m); };
    why.insertBefore(el, why.firstChild);
  }
  D.why.forEach((w) => {
    const el = document.createElement("div");
    el.className = w.host ? "host" : "";
    el.textContent = `${w.title}: ${w.cause}`;
    el.onclick = () => { const m = (w.to - w.from) * 0.5 + 1000; zoomTo(w.from - m, w.to + m); };
    why.appendChild(el);
  });

  // ---- the page's own state, for tests: #zoom=ABS_A,ABS_B and #search=Q ----
  // per track: how many items lie in [a, b] (ends included), and their distinct labels
  function visible(a, b) {
    const out = [], labels = [];
    for (const tr of tracks) {
      let n = 0;
      const ls = new Set();
      for (const ci of chunksIn(tr, a, b)) {
        const c = chunk(tr, ci);
        for (let i = 0; i < c.t.length; i++)
          if (c.t[i] <= b && c.t[i] + c.d[i] >= a) { n++; if (ls.size < 50) ls.add(LAB[c.l[i]]); }
      }
      out.push(n);
      labels.push([...ls]);
    }
    return { counts: out, labels };
  }
  function publish() {
    const h = new URLSearchParams(location.hash.slice(1)), s = {
      tracks: tracks.map((t) => ({ name: t.name, group: t.group, kind: t.kind, n: t.n })),
      events: D.events, why: D.why.length, flight: D.flight ? D.flight.title : null, exitKey: exits.map((i) => LAB[i]), firstPaintMs: Math.round(firstPaint - started),
      vcpuTasks: LAB.filter((l, i) => FL[i] & 1),
      loadMs: Math.round(performance.now()),
    };
    if (h.get("zoom")) {
      const [a, b] = h.get("zoom").split(",").map((x) => Number(BigInt(x) - T0));
      let t = performance.now();
      zoomTo(a, b);
      draw();
      s.zoomMs = Math.round(performance.now() - t);
      s.zoom = [a, b];
      const vis = visible(a, b);
      s.visible = vis.counts;
      s.visibleLabels = vis.labels;
      s.drawn = tracks.map((t) => drawn[t.idx] || "");
      // #pan=N: N steps of a fifth of the view to the right, each drawn: ms per frame
      const steps = Number(h.get("pan") || 0);
      t = performance.now();
      for (let i = 0; i < steps; i++) { pan(0.2); draw(); }
      if (steps) s.panMsPerFrame = +((performance.now() - t) / steps).toFixed(2);
    }
    if (h.get("search")) s.search = search(h.get("search"));
    // #click=TRACK,ABS_NS: what a click on that track at that time shows
    if (h.get("click")) {
      const [k, x] = h.get("click").split(",");
      s.click = pick(tracks[Number(k)], Number(BigInt(x) - T0), 0);
    }
    state.textContent = JSON.stringify(s);
    window.hgtState = s;
  }
  window.hgt = { tracks, zoomTo, search, visible, view: () => [v0, v1] };
  resize();
  draw();
})();
