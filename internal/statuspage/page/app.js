// The status page of 'governor serve': reads /api/v1/slots and
// /api/v1/events every poll_seconds and draws them. Everything another
// process wrote (sessions, hosts, commands) goes into the page as text,
// never as markup.
"use strict";
(function () {
  const tokenKey = "governor-admin-token";
  const st = {
    info: null,
    pollMs: 1000,
    token: sessionStorage.getItem(tokenKey) || "",
    readAt: null, // when the backend last answered
    cards: new Map(), // resource name -> its card
    timer: null,
    busy: false,
    again: false,
    history: new Map(), // resource name -> its history (GET /api/v1/history)
    historyAt: 0, // when the history was last read (ms)
  };

  // historyEveryMs is how often the page reads the history: serve folds
  // its polls into 10 s steps.
  const historyEveryMs = 5000;

  function $(id) { return document.getElementById(id); }

  // el builds an element; children are nodes or text.
  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k.startsWith("data-")) e.setAttribute(k, v);
      else e[k] = v;
    }
    for (const c of children) e.append(c);
    return e;
  }

  // ago writes seconds as governor's CLI does: 45s, 2m05s, 1h02m.
  function ago(s) {
    if (typeof s !== "number" || !isFinite(s)) return "-";
    const neg = s < 0;
    s = Math.round(Math.abs(s));
    let out;
    if (s < 60) out = s + "s";
    else if (s < 3600) out = Math.floor(s / 60) + "m" + String(s % 60).padStart(2, "0") + "s";
    else out = Math.floor(s / 3600) + "h" + String(Math.floor(s / 60) % 60).padStart(2, "0") + "m";
    return neg ? "-" + out : out;
  }

  // dur is a duration in seconds, below a second in ms.
  function dur(s) { return s < 1 ? Math.round(s * 1000) + "ms" : ago(s); }

  // edge is a bucket's edge: 5ms, 2.5s, 1m00s.
  function edge(s) { return s < 1 ? Math.round(s * 1000) + "ms" : s < 60 ? s + "s" : ago(s); }

  function clock(d) { return d.toLocaleTimeString(); }

  // expected is an expected wait (slots --json's expected_wait) for
  // people: its text says what it rests on, or that it is unknown.
  function expected(e) {
    return (e && e.text) || "unknown";
  }

  async function getJSON(path) {
    const ctl = new AbortController();
    const t = setTimeout(() => ctl.abort(), 15000);
    try {
      const r = await fetch(path, { signal: ctl.signal, cache: "no-store" });
      let body = null;
      try { body = await r.json(); } catch (e) { /* not JSON: said below */ }
      return { status: r.status, body };
    } finally {
      clearTimeout(t);
    }
  }

  function banner(text) {
    const b = $("banner");
    b.hidden = !text;
    b.textContent = text || "";
    $("live").classList.toggle("stale", !!text);
    $("resources").classList.toggle("stale", !!text);
    document.querySelector(".events").classList.toggle("stale", !!text);
    document.querySelector(".budgets").classList.toggle("stale", !!text);
    document.querySelector(".rates").classList.toggle("stale", !!text);
    document.body.dataset.state = text ? "down" : "live";
  }

  function shown() {
    return st.readAt ? " What is shown was read at " + clock(st.readAt) + " and may be out of date." : "";
  }

  // poll reads the API and draws it, then comes again after pollMs. A
  // poll asked for while one is running (after an action) runs once
  // that one ends: one reading at a time, one timer pending.
  async function poll() {
    if (st.busy) { st.again = true; return; }
    st.busy = true;
    clearTimeout(st.timer);
    try {
      draw(await read());
    } catch (err) {
      down(err);
    } finally {
      st.busy = false;
    }
    st.timer = setTimeout(poll, st.again ? 0 : st.pollMs);
    st.again = false;
  }

  // read reads what the page shows, each answer as {status, body}: info
  // (once), slots and, when slots answered, history (every
  // historyEveryMs), budgets and the last 24 hours' events. serve puts
  // the same in the page it serves (its first reading).
  async function read() {
    const r = {};
    if (!st.info) r.info = await getJSON("api/v1/info");
    r.slots = await getJSON("api/v1/slots");
    if (r.slots.status === 200) {
      if (Date.now() - st.historyAt >= historyEveryMs) r.history = await getJSON("api/v1/history");
      r.budgets = await getJSON("api/v1/budgets");
      r.events = await getJSON("api/v1/events?since=24h");
    }
    return r;
  }

  // draw draws a reading (read's, or serve's first); an answer missing
  // from it leaves its part as it was.
  function draw(r) {
    if (r.info) {
      if (r.info.status !== 200 || !r.info.body) throw new Error("HTTP " + r.info.status + " from /api/v1/info");
      setInfo(r.info.body);
    }
    const s = r.slots;
    if (s.status !== 200 || !s.body || !s.body.resources) {
      const why = (s.body && s.body.error) || "HTTP " + s.status;
      $("live").textContent = "backend not answering";
      banner("The backend does not answer: " + why + "." + shown());
      return;
    }
    st.readAt = new Date();
    const h = r.history;
    if (h && h.status === 200 && h.body && Array.isArray(h.body.resources)) {
      st.history = new Map(h.body.resources.map((x) => [x.resource, x]));
      st.historyAt = Date.now();
    }
    drawSlots(s.body);
    const bu = r.budgets;
    if (bu && bu.status === 200 && bu.body && Array.isArray(bu.body.budgets)) drawBudgets(bu.body);
    const e = r.events;
    if (e && e.status === 200 && Array.isArray(e.body)) drawEvents(e.body);
    banner("");
    $("live").textContent = "live · read at " + clock(st.readAt);
  }

  function down(err) {
    $("live").textContent = "serve not answering";
    banner("governor serve does not answer at " + location.host + " (" + (err && err.name === "AbortError" ? "no answer within 15s" : err.message) + ")." + shown());
    st.info = null; // it may have restarted with other flags
  }

  function setInfo(info) {
    st.info = info;
    st.pollMs = Math.max(250, (info.poll_seconds || 1) * 1000);
    $("project").textContent = info.project;
    document.title = "governor · " + info.project;
    $("admin").hidden = !info.actions;
    document.body.dataset.actions = info.actions ? "on" : "off";
  }

  // The exec-run slots ("run", "run:join") are in every project; their
  // cards are hidden until used: held, waited for, paused, given a live
  // limit, or used in serve's last hour. Once shown, a card stays.
  const execRun = new Set(["run", "run:join"]);
  const usedRuns = new Set();
  function unused(r) {
    if (!execRun.has(r.resource) || usedRuns.has(r.resource)) return false;
    const h = st.history.get(r.resource);
    const used = r.used > 0 || (r.waiters || []).length > 0 || !!r.paused || !!r.live_limit ||
      !!(h && ((h.points || []).some((p) => p.used > 0 || p.waiters > 0) || (h.wait && h.wait.count > 0)));
    if (used) usedRuns.add(r.resource);
    return !used;
  }

  function drawSlots(data) {
    const main = $("resources");
    const seen = new Set();
    const shownRes = data.resources.filter((r) => !unused(r));
    for (const r of shownRes) {
      seen.add(r.resource);
      let c = st.cards.get(r.resource);
      if (!c) {
        c = newCard(r.resource);
        st.cards.set(r.resource, c);
      }
      fillCard(c, r);
    }
    for (const [name, c] of st.cards) {
      if (!seen.has(name)) { c.root.remove(); st.cards.delete(name); }
    }
    // Keep the order of the API (sorted by name); resources whose state
    // could not be read after them, named.
    main.replaceChildren(...shownRes.map((r) => st.cards.get(r.resource).root),
      ...(data.unreadable || []).map((u) => el("section", { class: "res unreadable", "data-resource": u.resource },
        el("div", { class: "head" }, el("h2", { text: u.resource }), el("span", { class: "badge bad", text: "unreadable" })),
        el("p", { class: "nums", text: u.error }))));
    if (shownRes.length === 0) main.append(el("p", { class: "empty", text: "No resource in use or configured in project " + data.project + "." }));
    drawRateShares(data.rate_shares || []);
  }

  // drawRateShares draws the rate shares of each provider that has any
  // (docs/capacity.md), a rate-only one too: a row with its local grants
  // (and tokens) and learning mode, then each process's share of its
  // requests (per the limit's period wanted and held, its burst, used:
  // its local grants), then of its tokens, marked "tokens".
  function drawRateShares(keys) {
    $("rates-section").hidden = keys.length === 0;
    const row = (k, sh, of) => el("tr", { class: "rate-share", "data-resource": k.resource, "data-lease": sh.lease_id, "data-of": of },
      td(k.resource, "resource"), td(of === "tokens" ? sh.lease_id + " (tokens)" : sh.lease_id, "lease"), td(sh.wanted, "wanted num"),
      td(sh.held, "held num"), td(sh.burst, "burst num"), td(sh.used, "used num"), td(ago(sh.expires_in_seconds), "expires"));
    document.querySelector("#rates tbody").replaceChildren(...keys.flatMap((k) => [
      el("tr", { class: "rate-key", "data-resource": k.resource },
        td(k.resource, "resource"), el("td", { colSpan: 6, class: "grants",
          text: k.local_grants + " granted locally" + (k.local_tokens ? " · " + k.local_tokens + " tokens taken locally" : "") +
            (k.learning_until ? " · learning until " + new Date(k.learning_until).toLocaleTimeString() : "") })),
      ...k.shares.map((sh) => row(k, sh, "requests")),
      ...(k.token_shares || []).map((sh) => row(k, sh, "tokens"))]));
  }

  // newCard builds a resource's card once; its controls keep what the
  // user types while the rest is redrawn at each poll.
  function newCard(name) {
    const c = {};
    c.title = el("h2", { text: name });
    c.badge = el("span", { class: "badge paused", hidden: true });
    c.fill = el("div", { class: "fill" });
    c.bar = el("div", { class: "bar", role: "meter" }, c.fill);
    c.nums = el("p", { class: "nums" });
    c.pause = el("button", { type: "button", class: "pause", text: "Pause" });
    c.resume = el("button", { type: "button", class: "resume", text: "Resume" });
    c.limit = el("input", { type: "number", min: 1, class: "limit", placeholder: "limit" });
    c.setLimit = el("button", { type: "button", class: "set-limit", text: "Set limit" });
    c.clearLimit = el("button", { type: "button", class: "clear-limit", text: "Configured limit" });
    c.actions = el("div", { class: "actions" }, c.pause, c.resume, c.limit, c.setLimit, c.clearLimit);
    c.holders = el("tbody");
    c.waiters = el("tbody");
    c.shares = el("tbody");
    c.sharesHead = el("h3", { text: "Shares" });
    c.sharesTable = el("div", { class: "scroll" }, el("table", { class: "shares" },
      el("thead", {}, row("th", ["Lease", "Session", "Wanted", "Held", "Used", "Expires in", "Host", "PID"])), c.shares));
    c.drift = el("span", { class: "badge drift", hidden: true });
    c.history = svg("svg", { class: "history", viewBox: "0 0 360 48", preserveAspectRatio: "none", role: "img" });
    c.waits = svg("svg", { class: "waits", viewBox: "0 0 180 48", preserveAspectRatio: "none", role: "img" });
    c.historyNote = el("p", { class: "legend" });
    c.waitsNote = el("p", { class: "legend" });
    c.root = el("section", { class: "res", "data-resource": name },
      el("div", { class: "head" }, c.title, c.badge, c.drift),
      c.bar, c.nums, c.actions,
      el("div", { class: "charts" },
        el("figure", {}, c.history, c.historyNote),
        el("figure", {}, c.waits, c.waitsNote)),
      el("h3", { text: "Holders" }),
      el("div", { class: "scroll" }, el("table", { class: "holders" },
        el("thead", {}, row("th", ["Session", "Since", "Heartbeat", "Expires in", "Token", "Weight", "Host", "PID", "Command"])), c.holders)),
      c.sharesHead, c.sharesTable,
      el("h3", { text: "Waiters" }),
      el("div", { class: "scroll" }, el("table", { class: "waiters" },
        el("thead", {}, row("th", ["#", "Session", "Expected wait", "Waiting", "Weight", "", "Host", "PID", "Command"])), c.waiters)));
    // Two buttons, not one toggle: what a click does never depends on a
    // state read a second ago (another admin may have acted since).
    c.pause.addEventListener("click", () => act("pause", { resource: name }));
    c.resume.addEventListener("click", () => act("resume", { resource: name }));
    c.setLimit.addEventListener("click", () => {
      const n = Number(c.limit.value);
      if (!c.limit.value || !Number.isInteger(n) || n < 1) { say("limit " + name + ": give a whole number of at least 1", true); return; }
      act("limit", { resource: name, limit: n });
    });
    c.clearLimit.addEventListener("click", () => act("limit", { resource: name, limit: 0 }));
    return c;
  }

  // svg builds an SVG element: drawn by the page itself, from data,
  // with no inline style (the CSP allows none) and nothing loaded.
  // (The SVG namespace is read from an <svg> of the page, parsed as one,
  // rather than written here as a URL.)
  function svg(tag, attrs, ...children) {
    const e = document.createElementNS($("svg-ns").namespaceURI, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    for (const c of children) e.append(c);
    return e;
  }

  // drawHistory draws a resource's last hour (use, waiters, cool-offs,
  // from serve's polls) and its wait-time distribution (the backend's
  // histogram) into card c.
  function drawHistory(c, h) {
    const pts = (h && h.points) || [];
    const W = 360, H = 48, step = 10, now = Date.now();
    const top = Math.max(1, ...pts.map((p) => Math.max(p.limit, p.used, p.waiters)));
    const x = (p) => Math.max(0, Math.min(W, W - (now - Date.parse(p.at)) / 1000 / step));
    const y = (v) => H - 2 - (v / top) * (H - 4);
    const line = (f) => pts.map((p, i) => (i ? "L" : "M") + x(p).toFixed(1) + "," + y(f(p)).toFixed(1) + "h" + (pts.length === 1 ? 4 : 1)).join("");
    const cool = pts.filter((p) => p.cool_off).map((p) => svg("rect", { class: "cooloff", x: x(p).toFixed(1), y: 0, width: 1, height: H }));
    const kids = [...cool];
    if (pts.length) {
      kids.push(svg("path", { class: "limit", d: line((p) => p.limit) }));
      kids.push(svg("path", { class: "use", d: line((p) => p.used) }));
      kids.push(svg("path", { class: "waiters", d: line((p) => p.waiters) }));
    }
    kids.push(svg("title", {}, "the last hour, in 10 s steps"));
    c.history.replaceChildren(...kids);
    const most = (f) => pts.reduce((m, p) => Math.max(m, f(p)), 0);
    c.historyNote.replaceChildren(pts.length ? "last hour: " : "no history yet (serve keeps it from its polls)",
      ...(pts.length ? [el("span", { class: "key use", text: "in use" }), " (most " + most((p) => p.used) + "), ",
        el("span", { class: "key waiters", text: "waiting" }), " (most " + most((p) => p.waiters) + ")",
        cool.length ? el("span", { class: "key cooloff", text: ", cooling off" }) : ""] : []));

    const w = h && h.wait;
    const counts = (w && w.counts) || [];
    const peak = Math.max(1, ...counts);
    const bw = 180 / Math.max(1, counts.length);
    const bars = counts.map((n, i) => n > 0 ? svg("rect", { class: "wbar", x: (i * bw + 1).toFixed(1), width: Math.max(1, bw - 2).toFixed(1),
      y: (H - 2 - (n / peak) * (H - 4)).toFixed(1), height: ((n / peak) * (H - 4)).toFixed(1) },
      svg("title", {}, n + " waited " + (i < w.bounds_seconds.length ? "up to " + edge(w.bounds_seconds[i]) : "longer than " + edge(w.bounds_seconds[i - 1])))) : null).filter(Boolean);
    c.waits.replaceChildren(...bars, svg("path", { class: "axis", d: "M0," + (H - 1) + "H180" }));
    // The caption names the bars by their buckets' upper edges (the
    // first two, the last, and the one beyond it).
    const b = (w && w.bounds_seconds) || [];
    const edges = b.length > 3 ? [...b.slice(0, 2).map((s) => "≤" + edge(s)), "…", "≤" + edge(b[b.length - 1])] : b.map((s) => "≤" + edge(s));
    c.waitsNote.textContent = w && w.count > 0
      ? "waits of " + w.count + (w.count === 1 ? " acquire" : " acquires") + ", mean " + dur(w.sum_seconds / w.count) +
        "; bars: " + edges.join(", ") + ", >" + edge(b[b.length - 1])
      : "no acquire has waited yet";
  }

  function row(cell, texts) {
    return el("tr", {}, ...texts.map((t) => el(cell, { text: t })));
  }

  function td(text, cls) { return el("td", { text: text === "" || text == null ? "-" : String(text), class: cls || "" }); }

  function fillCard(c, r) {
    const admin = !!(st.info && st.info.actions);
    c.paused = !!r.paused;
    c.root.classList.toggle("paused", c.paused);
    c.root.dataset.paused = c.paused ? "true" : "false";
    c.badge.hidden = !c.paused;
    c.badge.textContent = c.paused ? "paused by " + (r.paused.by || "?") + " since " + new Date(r.paused.since).toLocaleTimeString() : "";
    const frac = r.limit > 0 ? r.used / r.limit : 0;
    c.fill.style.width = Math.min(100, frac * 100) + "%";
    c.fill.classList.toggle("full", frac >= 1);
    c.fill.classList.toggle("over", frac > 1);
    c.bar.setAttribute("aria-valuemin", "0");
    c.bar.setAttribute("aria-valuemax", String(r.limit));
    c.bar.setAttribute("aria-valuenow", String(r.used));
    c.bar.title = r.used + " of " + r.limit + " in use";
    const waiting = (r.waiters || []).length;
    const parts = [el("b", { class: "used", text: String(r.used) }), " of limit ", el("b", { class: "limit", text: String(r.limit) }), " in use"];
    if (r.live_limit) parts.push(el("span", { class: "source", text: " (set live by " + r.live_limit.by + ")" }));
    else if (r.limit_source) parts.push(el("span", { class: "source", text: " (" + ({ asked: "as its users ask", configured: "configured" }[r.limit_source] || r.limit_source) + ")" }));
    parts.push(" · free " + r.free + " · waiting " + waiting);
    if (r.expected_wait) parts.push(" · expected wait for a newcomer: ", el("span", { class: "expected", text: expected(r.expected_wait) }));
    const drift = [];
    if (r.drift_limit) drift.push("a process asked for limit " + r.drift_limit + ", not the " + r.limit + " in force");
    if (r.drift_policy) drift.push("a process asked for queue policy " + (r.drift_policy_text || r.drift_policy));
    c.drift.hidden = drift.length === 0;
    c.drift.textContent = drift.length ? "DRIFT: " + drift.join("; ") : "";
    c.root.classList.toggle("drifted", drift.length > 0);
    if (r.policy_text) parts.push(" · policy " + r.policy_text);
    c.nums.replaceChildren(...parts);
    drawHistory(c, st.history.get(r.resource));
    c.actions.hidden = !admin;

    c.holders.replaceChildren(...(r.holders || []).map((h) => {
      const tr = el("tr", { class: "holder", "data-session": h.session, "data-lease": h.lease_id },
        td(h.session, "session"), td(ago(h.age_seconds) + " ago", "since"), td(ago(h.heartbeat_age_seconds) + " ago", "heartbeat"),
        td(ago(h.expires_in_seconds), "expires"), td(h.token, "token num"), td(h.weight, "weight num"),
        td(h.host, "host"), td(h.processes || h.pid, "pid"), td(h.command, "command"));
      return tr;
    }));
    if (!r.holders || r.holders.length === 0) c.holders.append(el("tr", {}, el("td", { class: "empty", colSpan: 9, text: "nobody holds it" })));

    // Capacity leases (docs/capacity.md): each process's share, shown
    // only where there are any.
    const shares = r.shares || [];
    c.sharesHead.hidden = c.sharesTable.hidden = shares.length === 0;
    c.shares.replaceChildren(...shares.map((sh) => el("tr", { class: "share", "data-lease": sh.lease_id },
      td(sh.lease_id, "lease"), td(sh.session, "session"), td(sh.wanted, "wanted num"), td(sh.held, "held num"), td(sh.used, "used num"),
      td(ago(sh.expires_in_seconds), "expires"), td(sh.host, "host"), td(sh.pid || "", "pid"))));

    c.waiters.replaceChildren(...(r.waiters || []).map((w) => {
      const cancel = el("td", { class: "cancel" });
      if (admin) {
        const b = el("button", { type: "button", class: "cancel", text: "Cancel" });
        b.addEventListener("click", () => act("cancel", { resource: r.resource, waiter: w.id }));
        cancel.append(b);
      }
      return el("tr", { class: "waiter", "data-place": String(w.position), "data-session": w.session, "data-id": w.id },
        td(w.position, "place num"), td(w.session, "session"), td(expected(w.expected_wait), "expected"), td(ago(w.waiting_seconds), "waiting"),
        td(w.weight, "weight num"), cancel, td(w.host, "host"), td(w.processes || w.pid, "pid"), td(w.command, "command"));
    }));
    if (!r.waiters || r.waiters.length === 0) c.waiters.append(el("tr", {}, el("td", { class: "empty", colSpan: 9, text: "nobody waits" })));
  }

  // amount writes micro-units as units, with the budget's unit.
  function amount(n, unit) {
    const s = (n / 1e6).toFixed(6).replace(/\.?0+$/, "");
    return unit ? s + " " + unit : s;
  }

  // drawBudgets draws /api/v1/budgets: spent, reserved, limit, the burn
  // rate over the window so far, when it runs out at that rate, and
  // when the window resets.
  function drawBudgets(v) {
    const now = new Date(v.now).getTime();
    const until = (t) => ago((new Date(t).getTime() - now) / 1000);
    $("budgets-section").hidden = v.budgets.length === 0;
    document.querySelector("#budgets tbody").replaceChildren(...v.budgets.map((b) => {
      const used = b.limit > 0 ? ((100 * (b.spent + b.reserved)) / b.limit).toFixed(1) + "%" : "-";
      let state = "ok";
      if (b.held) state = "held: " + b.held;
      else if (b.paused_by) state = "paused by " + b.paused_by;
      else if (b.limit > 0 && b.spent + b.reserved >= b.limit) state = "exhausted";
      const out = b.exhausts_at ? (new Date(b.exhausts_at).getTime() <= now ? "now" : "in " + until(b.exhausts_at)) : "not before reset";
      const tr = el("tr", { class: "budget", "data-budget": b.name, "data-state": state.split(/[ :]/)[0] },
        td(b.name, "name"), td(amount(b.spent, b.unit), "spent num"), td(amount(b.reserved, b.unit), "reserved num"),
        td(amount(b.limit, b.unit) + (b.limit_by ? " (live, " + b.limit_by + ")" : ""), "limit num"), td(used, "used num"),
        td(amount(b.burn_rate_per_hour, b.unit) + "/h", "burn num"), td(out, "exhausts"),
        td("in " + until(b.reset), "reset"), td(state, "state"));
      tr.title = (b.window || "not configured") + "; resets at " + new Date(b.reset).toLocaleString();
      return tr;
    }));
  }

  function drawEvents(rows) {
    const last = rows.slice(-50).reverse();
    document.querySelector("#events tbody").replaceChildren(...last.map((e) =>
      el("tr", { class: "event", "data-kind": e.kind, "data-resource": e.resource },
        td(new Date(e.at).toLocaleString(), "at"), td(e.resource, "resource"), td(e.kind, "kind"), td(e.by, "by"), td(e.lease_id, "lease"),
        td(e.token || "", "token num"), td(e.detail, "detail"))));
    $("events-empty").hidden = last.length > 0;
  }

  function say(text, bad) {
    const m = $("admin-msg");
    m.textContent = text;
    m.classList.toggle("bad", !!bad);
  }

  // act POSTs an action with the admin token, as the API requires:
  // the token in Authorization, a JSON body (see serve --help).
  async function act(action, body) {
    say(action + " " + body.resource + "…");
    let r, b = null;
    try {
      r = await fetch("api/v1/" + action, {
        method: "POST",
        cache: "no-store",
        headers: { "Content-Type": "application/json", "Authorization": "Bearer " + st.token },
        body: JSON.stringify(body),
      });
      try { b = await r.json(); } catch (e) { /* said below */ }
    } catch (err) {
      say(action + " " + body.resource + ": serve does not answer (" + err.message + ")", true);
      return;
    }
    if (!r.ok) {
      say(action + " " + body.resource + " refused (HTTP " + r.status + "): " + ((b && b.error) || "no reason given"), true);
    } else {
      let done = action + " " + body.resource + ": done";
      if (b && b.cancelled) done += " (" + b.cancelled.length + " waiter" + (b.cancelled.length === 1 ? "" : "s") + " cancelled)";
      say(done);
    }
    poll();
  }

  $("token").value = st.token;
  $("token").addEventListener("input", (e) => {
    st.token = e.target.value.trim();
    if (st.token) sessionStorage.setItem(tokenKey, st.token);
    else sessionStorage.removeItem(tokenKey);
  });
  // serve's first reading, in the page: drawn at once, and the first poll
  // after pollMs. Without one (the page opened from a file), a poll now.
  let first = null;
  try { first = JSON.parse($("first").textContent); } catch (e) { /* none */ }
  if (first && first.info && first.slots) {
    try { draw(first); } catch (err) { down(err); }
    st.timer = setTimeout(poll, st.pollMs);
  } else {
    $("live").textContent = "connecting…";
    poll();
  }
})();
