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

  // Wrong visualisation passwords: which key typed them, the runs and the pauses (the owner
  // sees who is guessing). Nothing shows while nobody typed a wrong one.
  function renderPasswords(p) {
    var root = $('passwords'); clear(root);
    if (!p) return;
    var paused = (p.typists || []).filter(function (t) { return t.paused_secs !== null; });
    if (p.configured && p.configured.paused_secs !== null) paused.push(p.configured);
    paused.forEach(function (t) {
      root.appendChild(el('p', 'error', 'Secured commands of ' + t.key + ' pause ' +
        t.paused_secs + ' s more (run ' + t.runs + ')'));
    });
    if (p.house && p.house.paused_secs !== null) {
      root.appendChild(el('p', 'warn', 'Wrong passwords from several keys: each further wrong one pauses its key at once (' +
        p.house.paused_secs + ' s more)'));
    }
    (p.runs || []).slice(0, 5).forEach(function (r) {
      var when = (r.at || '').replace('T', ' ').slice(0, 19);
      root.appendChild(el('p', 'dim', when + ' ' + r.key + ': ' + r.wrong + ' wrong password(s), run ' +
        r.run + ', paused ' + r.pause_secs + ' s'));
    });
  }

  function renderEnergy(list) {
    var root = $('energy'); clear(root);
    if (!list.length) root.appendChild(el('p', 'dim', 'No meters'));
    list.forEach(function (m) {
      root.appendChild(el('p', null, m.name + ': ' + (m.power === null ? '–' : m.power + ' ' + m.unit)));
    });
  }

  // The doorbell card: each intercom or camera with its last ring. The page fetches no picture
  // by itself (not on load, not on a ring): the person at the dashboard asks with the tile's
  // buttons, "Last ring" for the Miniserver's picture of the last ring (the camera is not
  // asked) and "Picture now" for the camera's picture now. Every picture handed out is written
  // to the audit log. Shown as a data: URL (the page's CSP allows no other image source). A
  // ring after a ring's picture is shown marks it as old and the button offers the new one. A
  // key without the cameras setting gets no buttons, fetches nothing and is told so.
  var bells = {};
  function showPicture(d, tile, now) {
    var img = tile.querySelector('img'), note = tile.querySelector('.note');
    var b = bells[d.uuid], ring = now ? '' : b.ring;
    var buttons = tile.querySelectorAll('button');
    var headers = {};
    if (key()) headers['X-API-Key'] = key();
    buttons.forEach(function (x) { x.disabled = true; });
    fetch('/dashboard/api/doorbells/' + d.uuid + '/picture' + (now ? '?of=now' : ''), { headers: headers, cache: 'no-store' })
      .then(function (r) {
        if (r.status === 403) { img.removeAttribute('src'); note.textContent = 'This key may not see camera pictures.'; return null; }
        if (!r.ok) throw new Error('HTTP ' + r.status);
        return r.arrayBuffer();
      })
      .then(function (buf) {
        if (!buf) return;
        var bytes = new Uint8Array(buf), bin = '';
        for (var i = 0; i < bytes.length; i += 8192) bin += String.fromCharCode.apply(null, bytes.subarray(i, i + 8192));
        img.src = 'data:image/jpeg;base64,' + btoa(bin);
        img.alt = 'picture of ' + d.name;
        img.setAttribute('data-ring', ring);
        img.classList.remove('old');
        note.textContent = now ? 'now' : 'the last ring';
        b.shown = ring;
        markRing(tile, b);
      })
      .catch(function (e) { note.textContent = 'No picture: ' + e.message; })
      .then(function () { buttons.forEach(function (x) { x.disabled = false; }); });
  }
  // The "Last ring" button: hidden without a ring; "Show the new ring" (and the shown ring's
  // picture dimmed) when the bell rang after the picture shown.
  function markRing(tile, b) {
    var button = tile.querySelector('button.ring');
    var newer = !!(b.shown && b.ring && b.shown !== b.ring);
    button.hidden = !b.pictures || !b.ring;
    button.textContent = newer ? 'Show the new ring' : 'Last ring';
    tile.querySelector('img').classList.toggle('old', newer);
  }
  function renderDoorbells(list, pictures) {
    var root = $('doorbells');
    if (!list.length) { clear(root); root.appendChild(el('p', 'dim', 'No intercoms or cameras')); return; }
    var empty = root.querySelector('p.dim'); if (empty) root.removeChild(empty);
    list.forEach(function (d) {
      var tile = $('bell-' + d.uuid);
      if (!tile) {
        tile = el('div', 'tile'); tile.id = 'bell-' + d.uuid;
        tile.appendChild(el('strong', null, d.name));
        tile.appendChild(el('div', 'dim'));
        var ringButton = el('button', 'ring', 'Last ring'); ringButton.type = 'button';
        var nowButton = el('button', 'now', 'Picture now'); nowButton.type = 'button';
        nowButton.hidden = !pictures;
        tile.appendChild(ringButton);
        tile.appendChild(nowButton);
        tile.appendChild(el('div', 'dim note', pictures ? '' : 'This key may not see camera pictures.'));
        var img = el('img'); img.alt = '';
        tile.appendChild(img);
        root.appendChild(tile);
        bells[d.uuid] = { pictures: pictures };
        ringButton.addEventListener('click', function () { showPicture(bells[d.uuid].d, tile, false); });
        nowButton.addEventListener('click', function () { showPicture(bells[d.uuid].d, tile, true); });
      }
      var b = bells[d.uuid];
      b.d = d; b.ring = d.last_ring || '';
      tile.children[1].textContent = (d.ringing ? 'RINGING · ' : '') +
        (d.last_ring_time ? 'last ring ' + d.last_ring_time.replace('T', ' ').slice(0, 19) : 'no ring');
      markRing(tile, b);
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

  // Charts: inline SVG drawn from /dashboard/api/series and /dashboard/api/energy, the
  // answers of get_history and get_energy. The SVG scales with the page (phones included).
  var SVG = 'http://www.w3.org/2000/svg';
  var W = 600, H = 200, PAD = 30;
  function svgEl(tag, attrs, cls) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (cls) e.setAttribute('class', cls);
    return e;
  }
  function chartFrame(fig, lo, hi, unit) {
    var old = fig.querySelector('svg'); if (old) fig.removeChild(old);
    var svg = svgEl('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', preserveAspectRatio: 'xMidYMid meet' });
    svg.appendChild(svgEl('line', { x1: PAD, y1: H - PAD, x2: W, y2: H - PAD }, 'axis'));
    svg.appendChild(svgEl('line', { x1: PAD, y1: 5, x2: PAD, y2: H - PAD }, 'axis'));
    [lo, hi].forEach(function (v, i) {
      var t = svgEl('text', { x: 2, y: i ? 14 : H - PAD }, 'label');
      t.textContent = (Math.round(v * 10) / 10) + (unit ? ' ' + unit : '');
      svg.appendChild(t);
    });
    fig.insertBefore(svg, fig.firstChild);
    return svg;
  }
  function yOf(v, lo, hi) { return H - PAD - (hi > lo ? (v - lo) / (hi - lo) : 0.5) * (H - PAD - 10); }
  function timeLabel(svg, text, x) {
    var t = svgEl('text', { x: x, y: H - 8 }, 'label'); t.textContent = text; svg.appendChild(t);
  }
  function drawSeries(fig, s) {
    var pts = s.points || [];
    var cap = fig.querySelector('figcaption');
    fig.dataset.points = String(pts.length);
    fig.dataset.source = s.source || '';
    fig.dataset.measure = s.measure || '';
    var col = function (name) { return (s.columns || []).indexOf(name); };
    var n = Math.max(pts.length, 1), step = (W - PAD) / n;
    var svg;
    if (s.measure === 'level') {
      var iMin = col('min'), iMean = col('mean'), iMax = col('max');
      var lo = Math.min.apply(null, pts.map(function (p) { return p[iMin]; }));
      var hi = Math.max.apply(null, pts.map(function (p) { return p[iMax]; }));
      svg = chartFrame(fig, lo, hi, s.unit);
      var top = [], bottom = [], line = [];
      pts.forEach(function (p, i) {
        var x = PAD + step * (i + 0.5);
        top.push(x + ',' + yOf(p[iMax], lo, hi));
        bottom.unshift(x + ',' + yOf(p[iMin], lo, hi));
        line.push(x + ',' + yOf(p[iMean], lo, hi));
      });
      if (pts.length) {
        svg.appendChild(svgEl('polygon', { points: top.concat(bottom).join(' ') }, 'band'));
        svg.appendChild(svgEl('polyline', { points: line.join(' ') }, 'line'));
      }
    } else {
      var idx = s.measure === 'switch' ? col('on_seconds') : col('amount');
      var scale = s.measure === 'switch' ? 1 / 3600 : 1;
      var vals = pts.map(function (p) { return (p[idx] || 0) * scale; });
      var max = Math.max.apply(null, vals.concat([0]));
      svg = chartFrame(fig, 0, max, s.measure === 'switch' ? 'h on' : s.unit);
      vals.forEach(function (v, i) {
        var y = yOf(v, 0, max);
        svg.appendChild(svgEl('rect', { x: PAD + step * i + 1, y: y, width: Math.max(step - 2, 1), height: H - PAD - y },
          s.measure === 'switch' ? 'bar on' : 'bar'));
      });
    }
    if (pts.length) {
      timeLabel(svg, pts[0][0].slice(11, 16), PAD);
      timeLabel(svg, pts[pts.length - 1][0].slice(11, 16), W - 40);
    }
    var summary = s.summary || {};
    var text = s.device.name + (s.device.room ? ' (' + s.device.room + ')' : '') + ' · ' + s.state + ' · ';
    if (s.measure === 'level') text += 'min ' + summary.min + ', mean ' + summary.mean + ', max ' + summary.max + ' ' + (s.unit || '');
    else if (s.measure === 'switch') text += 'on ' + summary.on_hours + ' h, went on ' + summary.went_on + ' times';
    else text += 'total ' + summary.total + ' ' + (s.unit || '');
    text += ' · source: ' + s.source;
    if (s.no_data && s.no_data.length) text += ' · no data in part of the range';
    cap.textContent = text;
  }
  function drawEnergy(fig, e) {
    var b = e.breakdown || { columns: [], rows: [] };
    var rows = b.rows || [];
    var iC = b.columns.indexOf('consumption'), iP = b.columns.indexOf('production');
    fig.dataset.points = String(rows.length);
    var vals = rows.map(function (r) { return [iC >= 0 ? r[iC] || 0 : 0, iP >= 0 ? r[iP] || 0 : 0]; });
    var max = Math.max.apply(null, [0].concat(vals.map(function (v) { return Math.max(v[0], v[1]); })));
    var svg = chartFrame(fig, 0, max, 'kWh');
    var n = Math.max(rows.length, 1), step = (W - PAD) / n, half = Math.max(step / 2 - 1, 1);
    vals.forEach(function (v, i) {
      [0, 1].forEach(function (k) {
        if (k === 1 && iP < 0) return;
        var y = yOf(v[k], 0, max);
        svg.appendChild(svgEl('rect', { x: PAD + step * i + k * half + 1, y: y, width: half, height: H - PAD - y }, k ? 'bar production' : 'bar'));
      });
    });
    if (rows.length) {
      timeLabel(svg, rows[0][0].slice(5, 10), PAD);
      timeLabel(svg, rows[rows.length - 1][0].slice(5, 10), W - 40);
    }
    var cap = fig.querySelector('figcaption'); clear(cap);
    var legend = el('div', 'legend');
    var item = function (cls, text) { var s = el('span'); s.appendChild(el('span', 'swatch ' + cls)); s.appendChild(document.createTextNode(text)); legend.appendChild(s); };
    var f = e.figures || {};
    item('', 'consumption ' + (f.consumption !== undefined ? f.consumption + ' kWh' : '–'));
    if (iP >= 0) item('production', 'production ' + f.production + ' kWh');
    cap.appendChild(legend);
  }
  function loadCharts() {
    var select = $('chart-device');
    var day = $('chart-day');
    var showDevice = function () {
      if (!select.value) return;
      api('series?device=' + encodeURIComponent(select.value) + '&period=-24h&resolution=hour')
        .then(function (s) { drawSeries(day, s); day.setAttribute('data-updated', String(Date.now())); })
        .catch(function (e) { day.querySelector('figcaption').textContent = 'No history: ' + e.message; });
    };
    if (!select.options.length) {
      api('charts').then(function (c) {
        clear(select);
        c.devices.forEach(function (d) {
          var o = el('option', null, d.name + (d.room ? ' (' + d.room + ')' : ''));
          o.value = d.uuid; select.appendChild(o);
        });
        select.addEventListener('change', showDevice);
        showDevice();
      }).catch(function () {});
    } else { showDevice(); }
    var en = $('chart-energy');
    api('energy?period=' + encodeURIComponent('last 30 days') + '&breakdown=day')
      .then(function (e) { drawEnergy(en, e); en.setAttribute('data-updated', String(Date.now())); })
      .catch(function (e) { en.querySelector('figcaption').textContent = 'No energy history: ' + e.message; });
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
      renderPasswords(d.passwords);
      renderEnergy(d.energy);
      renderDoorbells(d.doorbells || [], d.pictures !== false);
      renderActivity(d.activity);
      loadCharts();
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
        renderClimate(d.climate); renderAlarm(d.alarm); renderPasswords(d.passwords);
        renderEnergy(d.energy); renderActivity(d.activity);
        renderDoorbells(d.doorbells || [], d.pictures !== false);
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
