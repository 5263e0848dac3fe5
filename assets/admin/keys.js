// home-mcp admin page: API keys. Talks only to this server's /admin/api/keys with the key the
// admin typed in (sessionStorage of this tab, sent as X-API-Key). Every piece of data is put
// into the page with textContent, never as HTML.
"use strict";

(function () {
  const STORE = "home-mcp-admin-key";
  const $ = (id) => document.getElementById(id);
  let editing = null; // masked id of the key being edited

  function key() {
    try { return sessionStorage.getItem(STORE) || ""; } catch (e) { return ""; }
  }

  function showError(message) {
    const box = $("error");
    box.textContent = message || "";
    box.hidden = !message;
  }

  async function api(method, path, body) {
    const headers = { "X-API-Key": key(), "Accept": "application/json" };
    const init = { method, headers, cache: "no-store", credentials: "omit" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, init);
    } catch (e) {
      throw new Error("the server did not answer (" + e.message + ")");
    }
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    if (!res.ok) {
      const msg = data && data.error && data.error.message;
      const err = new Error(msg || ("HTTP " + res.status));
      err.status = res.status;
      throw err;
    }
    return data;
  }

  function list(text) {
    return text.split(",").map((s) => s.trim()).filter((s) => s.length > 0);
  }

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  function day(iso) {
    return iso ? String(iso).replace("T", " ").replace(/:\d\d(\.\d+)?Z$/, " UTC") : "";
  }

  function joined(a) {
    return Array.isArray(a) && a.length ? a.join(", ") : "";
  }

  // A device key's allow-list as the server resolves it now: "name (room)", or the entry and
  // why it grants nothing.
  function devices(k) {
    if (!Array.isArray(k.devices)) return joined(k.allowed_devices);
    return k.devices
      .map((d) => (d.error ? d.entry + " (grants nothing: " + d.error + ")" : d.room ? d.name + " (" + d.room + ")" : d.name))
      .join(", ");
  }

  function button(label, action, id) {
    const b = el("button", label);
    b.type = "button";
    b.dataset.action = action;
    b.dataset.id = id;
    return b;
  }

  function row(k) {
    const tr = document.createElement("tr");
    tr.dataset.keyId = k.id;
    const u = k.usage || {};
    const scope = [];
    if (k.rooms && k.rooms.length) scope.push("rooms: " + k.rooms.join(", "));
    if (k.categories && k.categories.length) scope.push("categories: " + k.categories.join(", "));
    if (k.model_confirms) scope.push("model may confirm alarm and house-wide actions");
    if (k.open_doors) scope.push("may open gates and doors (a human confirms)");
    if (k.cameras) scope.push("may see camera pictures");
    if (k.profile) scope.push("tools: " + k.profile);
    if (k.role === "custom" && k.permissions && k.permissions.length) {
      scope.push("permissions: " + k.permissions.join(", "));
    }
    const cells = [
      [k.id, "mono"],
      [k.name, "name"],
      [k.role],
      [k.active ? "active" : "inactive", k.active ? "ok" : "off"],
      [day(k.created_at)],
      [k.expires_at ? day(k.expires_at) : "never"],
      [u.last_used ? day(u.last_used) : "never"],
      [u.count || 0, "num"],
      [u.failed_attempts || 0, "num"],
      [joined(u.ips), "mono"],
      [joined(k.ip_whitelist) || "any", "mono"],
      [devices(k)],
      [scope.join("; ") || "all"],
    ];
    for (const [text, cls] of cells) tr.appendChild(el("td", text, cls));
    const actions = el("td", null, "actions");
    actions.appendChild(button("Edit", "edit", k.id));
    actions.appendChild(button(k.active ? "Deactivate" : "Activate", k.active ? "deactivate" : "activate", k.id));
    actions.appendChild(button("Delete", "delete", k.id));
    tr.appendChild(actions);
    return tr;
  }

  let keys = [];

  async function refresh() {
    const data = await api("GET", "/admin/api/keys");
    keys = (data && data.keys) || [];
    const body = $("keys").tBodies[0];
    body.replaceChildren(...keys.map(row));
  }

  // The stop: what holds (the admin stop, the stop switch in the house) and since when.
  function showStop(stop) {
    const p = $("stop-state");
    p.dataset.stopped = String(!!stop.stopped);
    p.className = stop.stopped ? "warn" : "";
    let text;
    if (!stop.stopped) {
      text = "Running: assistants may send commands.";
    } else {
      const parts = [];
      if (stop.admin) parts.push("stopped on this page by " + stop.admin.by + " since " + day(stop.admin.since));
      const sw = stop.stop_switch;
      if (sw && sw.state !== "on") {
        parts.push("the stop switch \u201c" + (sw.name || sw.configured) + "\u201d is " + sw.state + " since " + day(sw.since) + (sw.reason ? " (" + sw.reason + ")" : ""));
      }
      text = "STOPPED: " + parts.join("; ") + ".";
    }
    p.textContent = text;
    $("stop-now").disabled = !!stop.admin;
    $("stop-lift").disabled = !stop.admin;
  }

  async function loadStop() {
    const data = await api("GET", "/admin/api/stop");
    showStop(data.stop);
  }

  async function setStop(stopped) {
    try {
      const data = await api("POST", "/admin/api/stop", { stopped });
      showStop(data.stop);
      showError("");
    } catch (e) {
      showError(e.message);
    }
  }

  function signedIn(on) {
    $("key-form").hidden = on;
    $("signed-in").hidden = !on;
    for (const id of ["list", "create", "stop"]) $(id).hidden = !on;
    if (!on) {
      $("edit").hidden = true;
      $("keys").tBodies[0].replaceChildren();
    }
  }

  async function start() {
    if (!key()) { signedIn(false); return; }
    try {
      await refresh();
      await loadStop();
      showError("");
      signedIn(true);
    } catch (e) {
      signedIn(false);
      showError(e.message);
    }
  }

  function roleFields() {
    const role = $("new-role").value;
    document.querySelector(".role-device").hidden = role !== "device";
    document.querySelector(".role-custom").hidden = role !== "custom";
  }

  async function create(ev) {
    ev.preventDefault();
    const role = $("new-role").value;
    const body = {
      role,
      ip_whitelist: list($("new-ips").value),
      rooms: list($("new-rooms").value),
      categories: list($("new-categories").value),
    };
    const name = $("new-name").value.trim();
    if (name) body.name = name;
    const days = $("new-expires").value.trim();
    if (days) body.expires_days = Number(days);
    if (role === "device") body.allowed_devices = list($("new-devices").value);
    if (role === "custom") body.permissions = list($("new-permissions").value);
    if ($("new-profile").value) body.profile = $("new-profile").value;
    try {
      const data = await api("POST", "/admin/api/keys", body);
      $("new-secret").textContent = data.key;
      $("copy-status").textContent = "";
      $("secret-box").hidden = false;
      $("create-form").reset();
      roleFields();
      showError("");
      await refresh();
      $("secret-box").scrollIntoView({ block: "nearest" });
    } catch (e) {
      showError(e.message);
    }
  }

  async function copySecret() {
    const text = $("new-secret").textContent;
    try {
      await navigator.clipboard.writeText(text);
      $("copy-status").textContent = "Copied.";
    } catch (e) {
      const range = document.createRange();
      range.selectNodeContents($("new-secret"));
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      $("copy-status").textContent = "Selected: press Ctrl+C (or long-press) to copy.";
    }
  }

  function dismissSecret() {
    $("new-secret").textContent = "";
    $("secret-box").hidden = true;
  }

  function openEdit(id) {
    const k = keys.find((x) => x.id === id);
    if (!k) return;
    editing = id;
    $("edit-title").textContent = (k.name || "") + " (" + k.id + ")";
    $("edit-name").value = k.name || "";
    $("edit-expires").value = "";
    $("edit-ips").value = joined(k.ip_whitelist);
    $("edit-active").checked = !!k.active;
    $("edit-model-confirms").checked = !!k.model_confirms;
    $("edit-open-doors").checked = !!k.open_doors;
    $("edit-cameras").checked = !!k.cameras;
    $("edit-profile").value = "";
    $("edit").hidden = false;
    $("edit").scrollIntoView({ block: "nearest" });
  }

  async function saveEdit(ev) {
    ev.preventDefault();
    if (!editing) return;
    const body = {
      name: $("edit-name").value.trim(),
      active: $("edit-active").checked,
      ip_whitelist: list($("edit-ips").value),
      model_confirms: $("edit-model-confirms").checked,
      open_doors: $("edit-open-doors").checked,
      cameras: $("edit-cameras").checked,
    };
    if ($("edit-profile").value) body.profile = $("edit-profile").value;
    const days = $("edit-expires").value.trim();
    if (days) body.expires_days = Number(days);
    try {
      await api("PUT", "/admin/api/keys/" + encodeURIComponent(editing), body);
      editing = null;
      $("edit").hidden = true;
      showError("");
      await refresh();
    } catch (e) {
      showError(e.message);
    }
  }

  async function onTable(ev) {
    const b = ev.target.closest("button[data-action]");
    if (!b) return;
    const id = b.dataset.id;
    const path = "/admin/api/keys/" + encodeURIComponent(id);
    try {
      switch (b.dataset.action) {
        case "edit":
          openEdit(id);
          return;
        case "activate":
        case "deactivate":
          await api("PUT", path, { active: b.dataset.action === "activate" });
          break;
        case "delete":
          // Two steps, in the page: the button asks to be pressed again.
          b.dataset.action = "confirm-delete";
          b.textContent = "Really delete?";
          b.classList.add("danger");
          return;
        case "confirm-delete":
          await api("DELETE", path);
          if (editing === id) { editing = null; $("edit").hidden = true; }
          break;
        default:
          return;
      }
      showError("");
      await refresh();
    } catch (e) {
      showError(e.message);
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("key-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const value = $("api-key").value.trim();
      $("api-key").value = "";
      try { sessionStorage.setItem(STORE, value); } catch (e) { /* private mode */ }
      start();
    });
    $("forget").addEventListener("click", () => {
      try { sessionStorage.removeItem(STORE); } catch (e) { /* ignore */ }
      dismissSecret();
      showError("");
      signedIn(false);
    });
    $("refresh").addEventListener("click", () => refresh().then(loadStop).then(() => showError(""), (e) => showError(e.message)));
    $("stop-now").addEventListener("click", () => setStop(true));
    $("stop-lift").addEventListener("click", () => setStop(false));
    $("create-form").addEventListener("submit", create);
    $("new-role").addEventListener("change", roleFields);
    $("copy-secret").addEventListener("click", copySecret);
    $("dismiss-secret").addEventListener("click", dismissSecret);
    $("edit-form").addEventListener("submit", saveEdit);
    $("edit-cancel").addEventListener("click", () => { editing = null; $("edit").hidden = true; });
    $("keys").addEventListener("click", onTable);
    roleFields();
    start();
  });
})();
