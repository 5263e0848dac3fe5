// Home dashboard: vanilla JS, no dependencies. Fetches /dashboard/api/data with the API key
// (X-API-Key, kept in sessionStorage), then follows /dashboard/ws (the key travels as the
// WebSocket subprotocol "key.<KEY>", never in a URL) and reconnects with backoff.
'use strict';
(function () {
  var KEY = 'home-mcp-key';
  var $ = function (id) { return document.getElementById(id); };
  var state = { changes: [], backoff: 1000, ws: null };

  function key() { return sessionStorage.getItem(KEY) || ''; }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  function showKeyForm(message) {
    $('main').hidden = true;
    $('key-form').hidden = false;
    var err = $('key-error');
    err.hidden = !message;
    err.textContent = message || '';
  }

  function api(path) {
    var headers = {};
    if (key()) headers['X-API-Key'] = key();
    return fetch('/dashboard/api/' + path, { headers: headers, cache: 'no-store' }).then(function (r) {
      if (r.status === 401 || r.status === 403) {
        var e = new Error('auth'); e.status = r.status; throw e;
      }
      if (!r.ok) throw new Error('HTTP ' + r.status);
      return r.json();
    });
  }

  function describe(display, value) {
    if (display && typeof display === 'object') {
      if ('on' in display) return display.on ? ('on' + (display.level !== undefined ? ' ' + display.level + '%' : '')) : 'off';
      if ('temperature' in display) return display.temperature + ' °C';
      if ('position' in display) return display.position + '% closed';
      if ('armed' in display) return display.armed ? 'armed' : 'disarmed';
      if ('power' in display) return display.power + ' ' + (display.unit || '');
      if ('value' in display) return display.value + (display.unit ? ' ' + display.unit : '');
      if ('play_state' in display) return display.play_state;
      if ('presence' in display) return display.presence ? 'presence' : 'none';
      if ('text' in display) return display.text;
      if ('open' in display) return display.open + ' open';
    }
    return value === null || value === undefined || value === '' ? '–' : String(value);
  }

  function renderLink(link) {
    var b = $('link-status');
    var mode = link ? link.mode : 'unknown';
    b.dataset.mode = mode;
    b.className = 'badge ' + (mode === 'websocket' ? 'ok' : mode === 'polling' ? 'warn' : 'bad');
    b.textContent = 'Miniserver: ' + mode;
  }

  // The stop: "assistant: running", or "assistant: STOPPED" with why and since when.
  function renderStop(stop) {
    var b = $('stop-status');
    if (!stop) return;
    b.dataset.stopped = String(stop.stopped);
    b.className = 'badge ' + (stop.stopped ? 'bad' : 'ok');
    var since = stop.since ? ' since ' + new Date(stop.since).toLocaleTimeString() : '';
    b.textContent = stop.stopped ? 'assistant: STOPPED' + since + ' (' + stop.stopped_by.join(', ').replace('_', ' ') + ')' : 'assistant: running';
    b.title = stop.stopped ? (stop.lift || '') : '';
  }

  // The Miniserver's Message Center: active entries first (most severe first), then the
  // newest notifications.
  function renderAlerts(a) {
    var root = $('alerts'); clear(root);
    var notes = $('notifications'); clear(notes);
    if (!a) return;
    if (!a.available) root.appendChild(el('li', 'dim', 'This Miniserver has no Message Center'));
    else if (!a.active.length) root.appendChild(el('li', 'dim', 'No active alerts'));
    a.active.forEach(function (e) {
      var when = e.since ? ' since ' + new Date(e.since).toLocaleString() : '';
      var flags = (e.confirmed ? ' · confirmed' : e.read ? ' · read' : '');
      var text = e.severity + ': ' + e.title + (e.room ? ' (' + e.room + ')' : '') +
        (e.affected ? ' · ' + e.affected : '') + when + flags;
      var li = el('li', 'alert-' + e.severity, text);
      li.dataset.id = e.id;
      root.appendChild(li);
    });
    a.notifications.forEach(function (n) {
      notes.appendChild(el('li', null, (n.at ? new Date(n.at).toLocaleTimeString() + ' ' : '') + n.title + ': ' + n.message));
    });
    root.setAttribute('data-updated', String(Date.now()));
  }

  function renderRooms(rooms) {
    var root = $('rooms'); clear(root);
    rooms.forEach(function (room) {
      var box = el('div', 'tile');
      box.appendChild(el('strong', null, room.name));
      var ul = el('ul');
      room.devices.forEach(function (d) {
        var li = el('li');
        li.id = 'dev-' + d.uuid;
        li.appendChild(document.createTextNode(d.name + ': '));
        var s = el('span', d.state && d.state.on ? 'on' : '', describe(d.state, null));
        li.appendChild(s);
        ul.appendChild(li);
      });
      box.appendChild(ul);
      root.appendChild(box);
    });
  }

  function changeText(c) {
    var when = new Date(c.at).toLocaleTimeString();
    var where = c.room ? ' (' + c.room + ')' : '';
    var what = c.display ? describe(c.display, c.value) : (c.state !== 'value' ? c.state + ' = ' : '') + describe(null, c.value !== undefined && c.value !== null ? c.value : c.text);
    return when + ' ' + c.name + where + ': ' + what;
  }

  // A change worth a line: a primary value (display), a number or a non-empty text. Empty
  // text states (a block's jLocked, events, sensors at start-up) would only read "x = –".
  function meaningful(c) {
    var blank = function (v) { return v === null || v === undefined || v === ''; };
    return !!c.display || !blank(c.value) || !blank(c.text);
  }

  function renderChanges() {
    var root = $('changes'); clear(root);
    if (!state.changes.length) root.appendChild(el('li', 'dim', 'No changes yet'));
    state.changes.slice(0, 10).forEach(function (c) { root.appendChild(el('li', null, changeText(c))); });
  }

  function renderClimate(list) {
    var root = $('climate'); clear(root);
    if (!list.length) root.appendChild(el('p', 'dim', 'No climate controllers'));
    list.forEach(function (z) {
      var t = el('div', 'tile');
      t.appendChild(el('div', 'dim', z.room));
      t.appendChild(el('div', 'big', z.temperature === null ? '–' : z.temperature + ' °C'));
      t.appendChild(el('div', 'dim', 'target ' + (z.target === null ? '–' : z.target + ' °C')));
      root.appendChild(t);
    });
  }

  function renderAlarm(list) {
    var root = $('alarm'); clear(root);
    if (!list.length) root.appendChild(el('p', 'dim', 'No alarm system'));
    list.forEach(function (a) {
      var text = a.name + ': ' + (a.armed === null || a.armed === undefined ? (a.level ? 'ALARM level ' + a.level : 'quiet') : (a.armed ? 'armed' : 'disarmed'));
      root.appendChild(el('p', a.level ? 'error' : '', text));
    });
  }

  function renderEnergy(list) {
    var root = $('energy'); clear(root);
    if (!list.length) root.appendChild(el('p', 'dim', 'No meters'));
    list.forEach(function (m) {
      root.appendChild(el('p', null, m.name + ': ' + (m.power === null ? '–' : m.power + ' ' + m.unit)));
    });
  }

  function renderActivity(list) {
    var root = $('activity'); clear(root);
    if (!list.length) root.appendChild(el('li', 'dim', 'No AI activity recorded'));
    list.forEach(function (a) {
      // An audit entry: {time, key_name, ip, transport, operation, target, result, latency_ms}.
      var when = (a.time || '').replace('T', ' ').slice(0, 19);
      var text = when + ' ' + (a.key_name || '') + ': ' + (a.operation || '') +
        (a.target ? ' ' + a.target : '') + ' → ' + (a.result || '');
      root.appendChild(el('li', a.result === 'ok' ? null : 'warn', text.trim()));
    });
  }

  function load() {
    // Without a key, ask the server whether one is needed (development level on loopback,
    // as in `serve --demo`, answers without): the form shows only where it is.
    if (!key()) {
      return fetch('/dashboard/access', { cache: 'no-store' }).then(function (r) { return r.json(); })
        .then(function (a) { if (a.key_needed) { showKeyForm(''); } else { return data(); } })
        .catch(function () { setTimeout(load, 5000); });
    }
    return data();
  }

  function data() {
    return api('data').then(function (d) {
      $('key-form').hidden = true;
      $('main').hidden = false;
      renderLink(d.status.link);
      renderStop(d.status.stop);
      renderAlerts(d.alerts);
      renderRooms(d.rooms);
      state.changes = d.changes.filter(meaningful);
      renderChanges();
      renderClimate(d.climate);
      renderAlarm(d.alarm);
      renderEnergy(d.energy);
      renderActivity(d.activity);
      connect();
    }).catch(function (e) {
      if (e.status) {
        // Read the key before forgetting it: a refused key and a missing one read differently.
        var had = !!key();
        sessionStorage.removeItem(KEY);
        showKeyForm(had ? 'The key was refused.' : 'An API key is needed.');
      } else { setTimeout(load, 5000); }
    });
  }

  function apply(msg) {
    var p = msg.payload || {};
    if (msg.type === 'system_event') {
      if (p.event === 'hello' && p.status) renderLink(p.status.link);
      if (p.event === 'link') renderLink(p.link);
      if (p.event === 'structure_changed' || p.event === 'resync') { closeWs(); load(); }
      if (/^alert_|^notification$/.test(p.event || '')) scheduleRefresh(0);
      return;
    }
    if ((msg.type === 'device_state_change' || msg.type === 'alarm_event') && meaningful(p)) {
      state.changes.unshift(p);
      state.changes = state.changes.slice(0, 10);
      renderChanges();
      var ch = $('changes');
      ch.setAttribute('data-updated', String(Date.now()));
      ch.classList.remove('flash'); void ch.offsetWidth; ch.classList.add('flash');
    }
    var dev = $('dev-' + p.uuid);
    if (dev && p.display) {
      var s = dev.lastChild;
      s.textContent = describe(p.display, p.value);
      s.className = p.display.on ? 'on' : '';
    }
    if (msg.type === 'alarm_event' || msg.type === 'energy_update' || (msg.type === 'sensor_update' && p.type && p.type.indexOf('RoomController') >= 0)) {
      scheduleRefresh(2000);
    } else if (msg.type === 'device_state_change') {
      // A device changed, maybe by an AI client's command: its audit entry is in the next
      // /dashboard/api/data, so refresh the activity feed soon (one request per burst).
      scheduleRefresh(500);
    }
  }

  // One pending refresh of the summaries and the activity feed; a sooner request moves it up,
  // but refreshes stay at least 2 s apart (the climate grid may ask the Miniserver again).
  var refreshTimer = null;
  var refreshAt = 0;
  var refreshedAt = 0;
  function scheduleRefresh(delay) {
    delay = Math.max(delay, refreshedAt + 2000 - Date.now());
    var at = Date.now() + delay;
    if (refreshTimer) {
      if (at >= refreshAt) return;
      clearTimeout(refreshTimer);
    }
    refreshAt = at;
    refreshTimer = setTimeout(function () {
      refreshTimer = null;
      refreshedAt = Date.now();
      api('data').then(function (d) {
        renderStop(d.status.stop); renderAlerts(d.alerts);
        renderClimate(d.climate); renderAlarm(d.alarm); renderEnergy(d.energy); renderActivity(d.activity);
        $('activity').setAttribute('data-updated', String(Date.now()));
      }).catch(function () {});
    }, delay);
  }

  function live(text, cls) { var b = $('live-status'); b.textContent = 'live: ' + text; b.className = 'badge ' + cls; }

  function closeWs() { if (state.ws) { state.ws.onclose = null; state.ws.close(); state.ws = null; } }

  function connect() {
    if (state.ws) return;
    var proto = location.protocol === 'https:' ? 'wss://' : 'ws://';
    var protocols = ['home-mcp'];
    if (key()) protocols.push('key.' + key());
    var ws;
    try { ws = new WebSocket(proto + location.host + '/dashboard/ws', protocols); } catch (e) { retry(); return; }
    state.ws = ws;
    ws.onopen = function () { state.backoff = 1000; live('connected', 'ok'); };
    ws.onmessage = function (ev) { try { apply(JSON.parse(ev.data)); } catch (e) { /* ignore malformed */ } };
    ws.onclose = function () { state.ws = null; live('reconnecting', 'warn'); retry(); };
  }

  function retry() {
    var wait = state.backoff;
    state.backoff = Math.min(state.backoff * 2, 30000);
    setTimeout(function () { if (!state.ws) load(); }, wait);
  }

  document.addEventListener('DOMContentLoaded', function () {
    $('key-form').addEventListener('submit', function (ev) {
      ev.preventDefault();
      sessionStorage.setItem(KEY, $('key-input').value.trim());
      $('key-input').value = '';
      load();
    });
    load();
    // The stop can change without a device changing (the admin page's stop): look again
    // every 15 s while the page is open.
    setInterval(function () { if (!$('main').hidden) scheduleRefresh(0); }, 15000);
  });
})();
