// repaudit per-doc browser. Reads the gzip+base64 payload of #docdata; every string from a run file is put
// into the page with textContent (never innerHTML), so a doc text holding a script tag shows as text.
"use strict";
(function () {
  const src = document.getElementById("docdata");
  if (!src) return;
  const $ = (id) => document.getElementById(id);
  const status = $("browser-status");

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else e.setAttribute(k, v);
    }
    for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(k == null ? "" : String(k)));
    return e;
  }

  async function load() {
    const bin = atob(src.textContent.trim());
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  const FLIP = { h: "harmful", b: "beneficial", c: "churn", "": "" };
  const DASH = "—";  // a margin or prediction the run's file cannot tell
  const num = (x, d) => (x == null ? "" : (x < 0 ? "−" + Math.abs(x).toFixed(d) : x.toFixed(d)));
  let D, rows = [], page = 0;
  const PAGE = 100;
  const MIN_COLLAPSE = 200;  // characters: a shorter shared beginning stays in the diff

  function prompt(p) { return p == null ? null : (p[0] >= 0 ? D.strings[p[0]] : "") + p[1]; }

  // The selected metric's outcome on a doc: values, flip class, margins and predictions (null where the doc's
  // task has no such metric). "" selects each task's first metric.
  const NONE = { a: null, b: null, f: "", ma: null, mb: null, ra: null, rb: null, m: null };
  function outcome(d, metric) {
    const names = D.metrics[d.t];
    const k = metric === "" ? 0 : names.indexOf(metric);
    if (k < 0 || !d.o || !d.o[k]) return NONE;
    const [a, b, f, ma, mb, ra, rb] = d.o[k];
    return { a, b, f, ma, mb, ra, rb, m: names[k] };
  }
  let metric = "";  // the selector's value, read once per apply (sorting 14,042 docs calls out() often)
  const out = (d) => outcome(d, metric);
  function margin(d) {
    const o = out(d), m = [o.ma, o.mb].filter((x) => x != null);
    return m.length ? Math.min(...m) : Infinity;
  }
  function haystack(d) {
    if (d._h === undefined) {
      d._h = [d.i, d.s, D.tasks[d.t], d.g, ...(d.o || []).flatMap((o) => o.slice(5)), d.ga, d.gb,
        (d.ch || []).join(" "), prompt(d.pa), prompt(d.pb)]
        .filter((x) => x != null).join("\n").toLowerCase();
    }
    return d._h;
  }

  // the selected metric's flip class of a doc
  function flipCodes(d) { return [out(d).f].filter((x) => x); }
  function flipText(d) { return FLIP[out(d).f] || ""; }
  function docName(d) { return d.s ? d.s + " (#" + d.i + ")" : String(d.i); }

  function apply() {
    metric = $("f-metric").value;
    const view = $("f-view").value, task = $("f-task").value, cl = $("f-cluster").value;
    const changed = $("f-changed").checked, q = $("f-search").value.trim().toLowerCase();
    rows = D.docs.filter((d) =>
      (view === "all" || (view === "flips" ? flipCodes(d).length > 0 : flipCodes(d).some((f) => FLIP[f] === view))) &&
      (task === "" || d.t === +task) && (cl === "" || d.k === +cl) &&
      (!changed || d.sp === false || d.sd === false || d.st === false) &&
      (q === "" || haystack(d).includes(q)));
    $("flip-count").textContent = D.docs.filter((d) => flipCodes(d).length > 0).length;
    const key = $("f-sort").value;
    const cmp = {
      id: (x, y) => x.t - y.t || x.i - y.i,
      margin: (x, y) => margin(x) - margin(y) || x.t - y.t || x.i - y.i,
      dll: (x, y) => Math.abs(y.dl ?? 0) - Math.abs(x.dl ?? 0) || x.t - y.t || x.i - y.i,
    }[key];
    rows.sort(cmp);
    page = 0;
    draw();
  }

  function badge(same, label) {
    if (same === false) return el("span", { class: "badge diff", title: label + " differs between A and B" }, label);
    if (same == null) return el("span", { class: "badge unk", title: label + " not recorded by a run" }, label + "?");
    return "";
  }

  function draw() {
    const body = $("doc-rows");
    body.replaceChildren();
    const start = page * PAGE, end = Math.min(rows.length, start + PAGE);
    for (const d of rows.slice(start, end)) {
      const o = out(d);
      const tr = el("tr", { class: "doc " + (FLIP[o.f] || ""), tabindex: "0" },
        el("td", {}, D.tasks[d.t]), el("td", { class: d.s ? "" : "num" }, docName(d)),
        el("td", {}, d.k >= 0 ? D.clusters[d.k] : ""),
        el("td", { class: "num" }, o.a == null ? "" : o.a), el("td", { class: "num" }, o.b == null ? "" : o.b),
        el("td", {}, flipText(d)), el("td", { class: "num" }, num(o.ma, 3) || DASH),
        el("td", { class: "num" }, num(o.mb, 3) || DASH),
        el("td", { class: "num" }, num(d.dl, 3)),
        el("td", {}, badge(d.sd, "doc"), badge(d.sp, "prompt"), badge(d.st, "target")));
      tr.addEventListener("click", () => toggle(tr, d));
      tr.addEventListener("keydown", (e) => { if (e.key === "Enter") toggle(tr, d); });
      body.append(tr);
    }
    $("doc-count").textContent = rows.length;
    $("page-info").textContent = rows.length ? `${start + 1}–${end} of ${rows.length}` : "no doc matches";
    $("prev").disabled = page === 0;
    $("next").disabled = end >= rows.length;
  }

  function toggle(tr, d) {
    const next = tr.nextElementSibling;
    if (next && next.classList.contains("detail")) { next.remove(); return; }
    tr.after(el("tr", { class: "detail" }, el("td", { colspan: "10" }, detail(d))));
  }

  // Words of the differing middle of two texts, marked by a longest-common-subsequence over words.
  function wordDiff(a, b) {
    const wa = a.split(/(\s+)/), wb = b.split(/(\s+)/);
    if (wa.length * wb.length > 400000) return [[["x", a]], [["x", b]]];
    const n = wa.length, m = wb.length, L = [];
    for (let i = 0; i <= n; i++) L.push(new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--)
        L[i][j] = wa[i] === wb[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
    const oa = [], ob = [];
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && wa[i] === wb[j]) { oa.push(["=", wa[i]]); ob.push(["=", wb[j]]); i++; j++; }
      else if (j >= m || (i < n && L[i + 1][j] >= L[i][j + 1])) oa.push(["x", wa[i++]]);
      else ob.push(["x", wb[j++]]);
    }
    return [oa, ob];
  }

  function marked(parts) {
    const pre = el("pre", { class: "prompt" });
    for (const [k, s] of parts) pre.append(k === "=" ? document.createTextNode(s) : el("mark", {}, s));
    return pre;
  }

  function prompts(d) {
    const a = prompt(d.pa), b = d.pb === undefined ? a : prompt(d.pb);
    if (a == null && b == null) return el("p", { class: "muted" }, "Neither file keeps this doc's prompt.");
    const box = el("div", { class: "prompts" });
    if (a == null || b == null) {
      box.append(el("h4", {}, a == null ? "Prompt B (A's file keeps none)" : "Prompt A (B's file keeps none)"),
        el("pre", { class: "prompt" }, a == null ? b : a));
      return box;
    }
    let pre = 0;
    if (a === b) {
      pre = d.pa[0] >= 0 ? D.strings[d.pa[0]].length : 0;  // the block this doc shares with its neighbours
    } else {
      while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
      pre = a.lastIndexOf("\n", pre - 1) + 1;
    }
    if (pre < MIN_COLLAPSE) pre = 0;
    let suf = 0;
    while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
    if (pre > 0) {
      box.append(el("details", { class: "shared" }, el("summary", {},
        `shared beginning, ${pre} characters (description and few-shot examples): click to show`),
        el("pre", { class: "prompt" }, a.slice(0, pre))));
    }
    if (a === b) {
      box.append(el("h4", {}, "Prompt (the same in A and B)"), el("pre", { class: "prompt" }, a.slice(pre)));
      return box;
    }
    const [da, db] = wordDiff(a.slice(pre, a.length - suf), b.slice(pre, b.length - suf));
    const tail = a.slice(a.length - suf);
    const side = (name, parts) => {
      const p = marked(parts);
      p.append(tail);
      return el("div", {}, el("h4", {}, `Prompt ${name} (differences marked)`), p);
    };
    box.append(el("div", { class: "side" }, side("A", da), side("B", db)));
    return box;
  }

  function choices(d) {
    const ch = d.ch || [], o = out(d);
    if (!ch.length && !d.la && !d.lb) return "";
    const n = Math.max(ch.length, (d.la || []).length, (d.lb || []).length);
    const t = el("table", { class: "choices" }, el("thead", {}, el("tr", {}, el("th", {}, "#"),
      el("th", {}, "choice (A's continuation)"), el("th", {}, "target"), el("th", { class: "num" }, "log-lik A (nats)"),
      el("th", { class: "num" }, "log-lik B (nats)"), el("th", {}, "picked by " + (o.m || "the metric")))));
    const tb = el("tbody");
    for (let i = 0; i < n; i++) {
      const isGold = d.g != null && (d.g === String(i) || d.g === ch[i]);
      const by = [o.ra === String(i) ? "A" : "", o.rb === String(i) ? "B" : ""].join(" ").trim();
      tb.append(el("tr", { class: isGold ? "gold" : "" }, el("td", { class: "num" }, i),
        el("td", {}, el("pre", { class: "inline" }, ch[i] ?? "")), el("td", {}, isGold ? "✓ target" : ""),
        el("td", { class: "num" }, num((d.la || [])[i], 4)), el("td", { class: "num" }, num((d.lb || [])[i], 4)),
        el("td", {}, by)));
    }
    t.append(tb);
    const wrap = el("div", {}, t);
    if (d.chb) wrap.append(el("p", { class: "warn" }, "B scored other continuations: " + JSON.stringify(d.chb)));
    return wrap;
  }

  function detail(d) {
    const box = el("div", { class: "doc-detail" });
    const o = out(d);
    box.append(el("p", {}, `${D.tasks[d.t]} · doc ${docName(d)}` + (d.k >= 0 ? ` · ${D.clusters[d.k]}` : "") +
      ` · ${o.m || "metric"}: A ${o.a ?? "n/a"}, B ${o.b ?? "n/a"}` + (flipText(d) ? ` · flip: ${flipText(d)}` : "")));
    const others = D.metrics[d.t].filter((m) => m !== o.m).map((m) => {
      const x = outcome(d, m);
      return `${m}: A ${x.a ?? "n/a"}, B ${x.b ?? "n/a"}` + (x.f ? ` (${FLIP[x.f]})` : "");
    });
    if (others.length) box.append(el("p", { class: "muted" }, "other metrics: " + others.join(" · ")));
    box.append(el("p", {}, "target: ", el("code", {}, d.g ?? "(not recorded)")));
    box.append(choices(d));
    if (d.ga != null || d.gb != null) {
      box.append(el("div", { class: "side" },
        el("div", {}, el("h4", {}, "Generation A"), el("pre", { class: "prompt" }, d.ga ?? "(none)")),
        el("div", {}, el("h4", {}, "Generation B"), el("pre", { class: "prompt" }, d.gb ?? "(none)"))));
    }
    box.append(el("p", {}, `prediction by ${o.m || "the metric"} A: `, el("code", {}, o.ra ?? DASH),
      " · B: ", el("code", {}, o.rb ?? DASH)));
    box.append(prompts(d));
    return box;
  }

  function options(select, names) {
    names.forEach((name, i) => select.append(el("option", { value: String(i) }, name)));
  }

  load().then((data) => {
    D = data;
    options($("f-task"), D.tasks);
    options($("f-cluster"), D.clusters);
    // every metric of every task, in first-seen order; "each task's first" only where the tasks' first ones differ
    const names = [...new Set(D.metrics.flat())], firsts = new Set(D.metrics.map((m) => m[0]));
    if (firsts.size > 1) $("f-metric").append(el("option", { value: "" }, "each task's first 0/1 metric"));
    for (const m of names) $("f-metric").append(el("option", { value: m }, m));
    if (!names.length) $("f-metric").disabled = true;
    if (!D.clusters.length) $("f-cluster").disabled = true;
    $("total-count").textContent = D.docs.length;
    for (const id of ["f-metric", "f-view", "f-task", "f-cluster", "f-changed", "f-sort"]) {
      $(id).addEventListener("change", apply);
    }
    let timer = null;
    $("f-search").addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(apply, 150); });
    $("prev").addEventListener("click", () => { page--; draw(); });
    $("next").addEventListener("click", () => { page++; draw(); });
    apply();
    status.textContent = "";
    document.body.dataset.readyMs = String(Math.round(performance.now()));
    document.body.dataset.ready = "1";
  }).catch((e) => {
    status.textContent = "The per-doc browser could not read its data (" + e + "); this browser may lack " +
      "DecompressionStream (Chrome 80+, Firefox 113+, Safari 16.4+).";
    document.body.dataset.ready = "error";
  });
})();
