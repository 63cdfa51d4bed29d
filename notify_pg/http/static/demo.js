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
    // The site whose inbox the page shows (H1: one inbox per site): ?site=, else "s1".
    site: new URLSearchParams(location.search).get("site") || "s1",
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

  async function refresh(cause) {
    counts[cause] = (counts[cause] || 0) + 1;
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
    if (!cursor) list.replaceChildren();
    for (const entry of page.entries) list.append(entryItem(entry));
    state.next = page.next;
    $("more").hidden = !page.next;
    $("empty").hidden = list.children.length > 0;
  }

  function entryItem(entry) {
    const item = document.createElement("li");
    item.dataset.id = String(entry.id);
    item.className = entry.read ? "read" : "unread";
    const title = document.createElement("span");
    title.className = "title";
    title.textContent = entry.title || entry.path || entry.group_key;
    const what = document.createElement("span");
    what.className = "what";
    const times = entry.count > 1 ? ` (${entry.count} times)` : "";
    what.textContent = `${entry.category}: ${entry.variant}${times}`;
    item.append(title, what);
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
      const name = document.createElement("td");
      name.textContent = c.category;
      const section = document.createElement("td");
      section.textContent = c.section;
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

  function start(user) {
    state.user = user;
    state.etag = null;
    $("user").value = user;
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
