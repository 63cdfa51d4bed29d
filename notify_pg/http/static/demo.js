// The demo page of `notify serve --demo` (seed 004 sections 9.2 and 9.3, issue 28 point 5).
//
// One store-like object holds the badge and the loaded entries; refresh() is the only way
// they change: it asks the summary (with its ETag, so an unchanged inbox is a 304) and reloads
// the list when the summary moved. What calls refresh() is kept apart from it:
//   - the page's start, and a switch of person;
//   - the websocket /notifications/live saying "refresh" (a write touched this person);
//   - the socket (re)opening: whatever happened while it was closed is caught up at once;
//   - an interval: every 60 s while the socket is closed, every 5 min while it is open (a
//     safety net), and only while the tab is visible; visibilitychange to visible too.
// A pushed refresh and a polled one do the same thing: the summary is the only truth.
"use strict";

(function () {
  const POLL_MS = 60 * 1000;
  const SAFETY_MS = 5 * 60 * 1000;

  const state = {
    user: "",
    // The site whose inbox the page shows (H1: one inbox per site): ?site=, else the first
    // of GET /notifications/sites (the host's sites; never a default that may not exist).
    site: new URLSearchParams(location.search).get("site") || "",
    sites: [],
    etag: null,
    summary: null,
    next: null,
    socket: null,
    socketOpen: false,
    retryMs: 1000,
    timer: null,
  };
  // Counters the page's tests read: refreshes by cause.
  const counts = { poll: 0, push: 0, open: 0, start: 0, action: 0 };
  window.notifyDemo = { counts, state, refresh: (cause) => refresh(cause || "action") };

  const $ = (id) => document.getElementById(id);
  // The site's inbox routes (/sites/SITE/notifications...).
  const inbox = (rest) => `/sites/${encodeURIComponent(state.site)}/notifications${rest || ""}`;

  function api(method, path, body) {
    const headers = { "X-Notify-User": state.user };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    return fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
    });
  }

  // --- the sites (one inbox each) ----------------------------------------------------

  async function loadSites() {
    const answer = await api("GET", "/notifications/sites");
    if (!answer.ok) return;
    state.sites = (await answer.json()).sites;
    const ids = state.sites.map((s) => s.id);
    if (state.site && !ids.includes(state.site)) ids.unshift(state.site); // asked by ?site=
    if (!state.site && ids.length) state.site = ids[0];
    const select = $("site");
    select.replaceChildren();
    for (const id of ids) {
      const site = state.sites.find((s) => s.id === id);
      const option = document.createElement("option");
      option.value = id;
      // The wiki's name when it has one, else its host name; the id beside it.
      const label = site ? site.name || site.host : "";
      option.textContent = label ? `${label} (${id})` : id;
      select.append(option);
    }
    select.value = state.site;
    $("no-site").hidden = Boolean(state.site);
  }

  function switchSite(site) {
    state.site = site;
    state.etag = null;
    state.next = null;
    const params = new URLSearchParams(location.search);
    params.set("site", site);
    history.replaceState(null, "", `${location.pathname}?${params}`);
    refresh("action");
  }

  async function refresh(cause) {
    counts[cause] = (counts[cause] || 0) + 1;
    if (!state.site) await loadSites(); // a person's first entry names their first site
    if (!state.site) return;
    const headers = { "X-Notify-User": state.user };
    if (state.etag) headers["If-None-Match"] = state.etag;
    const answer = await fetch(inbox("/summary"), { headers, cache: "no-store" });
    if (answer.status === 304) return;
    if (!answer.ok) return;
    state.etag = answer.headers.get("ETag");
    state.summary = await answer.json();
    const badge = $("badge");
    badge.textContent = state.summary.badge;
    badge.dataset.unread = String(state.summary.unread);
    await loadEntries();
  }

  // Loads run one after another: an "Older" page asked while a reload is in flight waits for
  // it and pages on from the reloaded list (appended first, the reload would then clear it).
  let loading = Promise.resolve();

  function loadEntries(older) {
    loading = loading.then(() => loadPage(older ? state.next : null)).catch(() => {});
    return loading;
  }

  async function loadPage(cursor) {
    const query = cursor ? "?cursor=" + encodeURIComponent(cursor) : "";
    const answer = await api("GET", inbox(query));
    if (!answer.ok) return;
    const page = await answer.json();
    const list = $("entries");
    const shown = list.children.length;
    if (!cursor) list.replaceChildren();
    for (const entry of page.entries) list.append(entryItem(entry));
    state.next = page.next;
    // A reload keeps the older pages the person had opened: a live refresh arriving after
    // "Older" would otherwise cut the list back to its first page.
    while (!cursor && state.next && list.children.length < shown) {
      const more = await api("GET", inbox("?cursor=" + encodeURIComponent(state.next)));
      if (!more.ok) break;
      const older = await more.json();
      for (const entry of older.entries) list.append(entryItem(entry));
      state.next = older.next;
    }
    $("more").hidden = !state.next;
    $("empty").hidden = list.children.length > 0;
  }

  // What opening an entry's target reads (H2), as the host's page calls it when the person
  // views a page ("view") or its talk tab ("talk"); other targets read nothing.
  const TALK = new Set(["watched_page_comment", "comment_reply", "mention"]);
  const PAGE = new Set(["watched_page", "page_created"]);

  async function viewed(entry) {
    const tab = TALK.has(entry.category) ? "talk" : PAGE.has(entry.category) ? "view" : "";
    if (!entry.page || !tab) return;
    await api("PUT", inbox(`/pages/${encodeURIComponent(entry.page)}/${tab}`));
    await refresh("action");
  }

  // An instant of the API (RFC 3339 UTC) as the browser's locale writes it.
  function when(instant) {
    const at = new Date(instant);
    return Number.isNaN(at.getTime()) ? instant : at.toLocaleString();
  }

  function entryItem(entry) {
    const item = document.createElement("li");
    item.dataset.id = String(entry.id);
    item.dataset.category = entry.category;
    item.className = entry.read ? "read" : "unread";
    const body = document.createElement("span");
    body.className = "entry";
    // The sentence its mail names it by ("Femi Adeyemi edited API (6 times)"), in the
    // person's language, as the link to its target.
    const text = document.createElement("a");
    text.className = "text";
    text.href = entry.link;
    text.target = "_blank";
    text.rel = "noopener";
    text.textContent = entry.text;
    text.addEventListener("click", () => viewed(entry)); // the target opens in a new tab
    const meta = document.createElement("span");
    meta.className = "meta";
    const time = document.createElement("time");
    time.dateTime = entry.updated_at;
    time.textContent = when(entry.updated_at);
    meta.append(time);
    if (entry.actor_name) {
      const actor = document.createElement("span");
      actor.className = "actor";
      actor.textContent = ` · ${entry.actor_name}`;
      meta.append(actor);
    }
    if (entry.submission) {
      const review = document.createElement("span");
      review.className = "submission";
      review.textContent = ` · submission ${entry.submission}`;
      meta.append(review);
    }
    body.append(text, meta);
    if (entry.excerpt) {
      const excerpt = document.createElement("span");
      excerpt.className = "excerpt";
      excerpt.textContent = entry.excerpt;
      body.append(excerpt);
    }
    item.append(body);
    if (!entry.read) {
      item.append(button("Read", "read", async () => {
        await api("PUT", inbox(`/${entry.id}/read`), {});
        await refresh("action");
      }));
    }
    item.append(button("Dismiss", "dismiss", async () => {
      await api("DELETE", inbox(`/${entry.id}`));
      await refresh("action");
    }));
    return item;
  }

  function button(text, name, onClick) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = text;
    b.className = name;
    b.addEventListener("click", onClick);
    return b;
  }

  // --- live updates -------------------------------------------------------------------

  function connect() {
    if (state.socket) state.socket.close();
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const url = `${scheme}//${location.host}/notifications/live?user=${encodeURIComponent(state.user)}`;
    const socket = new WebSocket(url);
    state.socket = socket;
    socket.addEventListener("open", () => {
      state.socketOpen = true;
      state.retryMs = 1000;
      setLive(true);
      schedule();
      refresh("open"); // what happened while the socket was closed
    });
    socket.addEventListener("message", (event) => {
      if (event.data === "refresh") refresh("push");
    });
    socket.addEventListener("close", () => {
      if (state.socket !== socket) return; // replaced by a switch of person
      state.socketOpen = false;
      setLive(false);
      schedule();
      setTimeout(connect, state.retryMs);
      state.retryMs = Math.min(state.retryMs * 2, 30000);
    });
  }

  function setLive(on) {
    const live = $("live");
    live.textContent = on ? "live" : "polling";
    live.className = "live " + (on ? "on" : "off");
  }

  function schedule() {
    if (state.timer) clearInterval(state.timer);
    state.timer = setInterval(() => {
      if (document.visibilityState === "visible") refresh("poll");
    }, state.socketOpen ? SAFETY_MS : POLL_MS);
  }

  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") refresh("poll");
  });

  // --- the preference grid (H2a) --------------------------------------------------------

  async function loadPreferences() {
    // The server marks the page: the preference routes need the host's ports.
    if (document.body.dataset.preferences !== "on") {
      $("prefs-unavailable").hidden = false;
      return;
    }
    const answer = await api("GET", "/notifications/preferences");
    if (answer.ok) drawPreferences(await answer.json());
  }

  async function changePreferences(change) {
    const answer = await api("PATCH", "/notifications/preferences", change);
    const body = await answer.json();
    if (answer.ok) {
      $("prefs-result").textContent = "Saved.";
      drawPreferences(body);
    } else {
      $("prefs-result").textContent = `Not saved: ${body.error.code} at ${body.error.pointer || "/"}`;
      await loadPreferences();
    }
  }

  function channelCell(category, channel, cell, emailAvailable) {
    const td = document.createElement("td");
    const box = document.createElement("input");
    box.type = "checkbox";
    box.checked = cell.enabled;
    box.dataset.category = category;
    box.dataset.channel = channel;
    box.addEventListener("change", () =>
      changePreferences({ categories: { [category]: { [channel]: box.checked } } }));
    const note = document.createElement("span");
    note.className = "note";
    const parts = [cell.own ? "your choice" : "default"];
    if (!cell.effective) parts.push(channel === "email" && !emailAvailable ? "no email" : "off now");
    note.textContent = ` ${parts.join(", ")}`;
    td.append(box, note);
    return td;
  }

  function drawPreferences(grid) {
    const rows = $("prefs-rows");
    rows.replaceChildren();
    for (const c of grid.categories) {
      const tr = document.createElement("tr");
      tr.dataset.category = c.category;
      // Categories and sections by their names, in the person's language (the key as a
      // fallback for a server that names none).
      const name = document.createElement("td");
      name.textContent = c.name || c.category;
      const section = document.createElement("td");
      section.textContent = c.section_name || c.section;
      tr.append(name, section,
        channelCell(c.category, "in_app", c.in_app, grid.email_available),
        channelCell(c.category, "email", c.email, grid.email_available));
      rows.append(tr);
    }
    $("prefs").hidden = false;
    $("prefs-email").hidden = grid.email_available;
    $("prefs-schedule-line").hidden = false;
    $("prefs-schedule").value = grid.email_schedule;
    $("prefs-hour").value = grid.daily_hour === undefined ? "" : String(grid.daily_hour);
    $("prefs-hour-label").hidden = grid.email_schedule !== "daily";
  }

  function changeSchedule() {
    const schedule = $("prefs-schedule").value;
    const change = { email_schedule: schedule };
    if (schedule === "daily") change.daily_hour = Number($("prefs-hour").value || "9");
    changePreferences(change);
  }

  // --- unsubscribe (the page a mail's link leads to, both actions) ---------------------

  async function lookUp(token) {
    $("unsub-result").textContent = "";
    $("unsub-info").hidden = true;
    const answer = await fetch("/notifications/unsubscribe/info?t=" + encodeURIComponent(token));
    if (!answer.ok) {
      $("unsub-result").textContent = "This unsubscribe link is not valid.";
      return;
    }
    const info = await answer.json();
    const list = $("unsub-categories");
    list.replaceChildren();
    for (const category of info.categories) {
      const li = document.createElement("li");
      li.textContent = category;
      list.append(li);
    }
    $("unsub-info").hidden = false;
  }

  async function unsubscribe(all) {
    const token = $("token").value.trim();
    const form = "List-Unsubscribe=One-Click" + (all ? "&scope=all" : "");
    const answer = await fetch("/notifications/unsubscribe?t=" + encodeURIComponent(token), {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: form,
    });
    $("unsub-result").textContent = answer.ok
      ? (all ? "You will get no notification email." : "You will get no email about these.")
      : "This unsubscribe link is not valid.";
  }

  // --- start ----------------------------------------------------------------------------

  async function start(user) {
    state.user = user;
    state.etag = null;
    $("user").value = user;
    await loadSites();
    connect();
    schedule();
    refresh("start");
    loadPreferences();
  }

  document.addEventListener("DOMContentLoaded", () => {
    const params = new URLSearchParams(location.search);
    $("who").addEventListener("submit", (event) => {
      event.preventDefault();
      start($("user").value.trim());
    });
    $("more").addEventListener("click", () => loadEntries(true));
    $("site").addEventListener("change", () => switchSite($("site").value));
    $("read-all").addEventListener("click", async () => {
      await api("PUT", inbox("/read"), {});
      await refresh("action");
    });
    $("unsub-form").addEventListener("submit", (event) => {
      event.preventDefault();
      lookUp($("token").value.trim());
    });
    $("prefs-schedule").addEventListener("change", changeSchedule);
    $("prefs-hour").addEventListener("change", changeSchedule);
    $("unsub-these").addEventListener("click", () => unsubscribe(false));
    $("unsub-all").addEventListener("click", () => unsubscribe(true));
    if (params.get("t")) {
      $("token").value = params.get("t");
      lookUp(params.get("t"));
    }
    start(params.get("user") || "ana");
  });
})();
