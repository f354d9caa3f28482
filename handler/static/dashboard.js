// The seckill lab dashboard: polls the service's own JSON endpoints and draws them. No
// libraries, nothing fetched from elsewhere, so it works offline.
'use strict';

const $ = (id) => document.getElementById(id);
const tokenInput = $('token');
tokenInput.value = localStorage.getItem('seckillAdminToken') || '';
tokenInput.addEventListener('change', () => localStorage.setItem('seckillAdminToken', tokenInput.value));

// api calls the service and throws an Error carrying the answer's message on a non-2xx status.
async function api(method, path) {
  const headers = {};
  if (tokenInput.value) headers['X-Admin-Token'] = tokenInput.value;
  const r = await fetch(path, { method, headers, cache: 'no-store' });
  let body = null;
  try { body = await r.json(); } catch (e) { body = { error: r.statusText }; }
  if (!r.ok) {
    const err = new Error((body && body.error) || r.statusText);
    err.status = r.status;
    throw err;
  }
  return body;
}

// poll runs fn every ms milliseconds (never two at once).
function poll(fn, ms) {
  const tick = async () => {
    try { await fn(); } catch (e) { /* shown by fn itself */ }
    setTimeout(tick, typeof ms === 'function' ? ms() : ms);
  };
  tick();
}

function setText(id, v) { const el = $(id); if (el.textContent !== String(v)) el.textContent = v; }

// ---- inventory -------------------------------------------------------------------------
let bursting = false;
let liveSamples = []; // [ms since burst start, sold] while a burst runs
let burstStart = 0;
let soldAtBurst = 0;

async function refreshInventory() {
  try {
    const inv = await api('GET', '/inventory');
    setText('sku', inv.sku);
    setText('stock', inv.stock);
    setText('sold', inv.sold);
    setText('lost', inv.lostUpdates);
    setText('oversold', inv.oversold);
    $('lost-card').classList.toggle('alarm', inv.lostUpdates > 0);
    $('oversold-card').classList.toggle('alarm', inv.oversold > 0);
    setText('inventory-extra', `initial ${inv.initialStock} · overlaps ${inv.overlaps} · foreign unlocks ${inv.foreignUnlocks}` +
      ` · stale writes rejected ${inv.staleWritesRejected}`);
    setStatus(true, 'live');
    if (bursting) {
      liveSamples.push([performance.now() - burstStart, inv.sold - soldAtBurst]);
      drawLive();
    }
  } catch (e) {
    setStatus(false, e.message);
  }
}

function setStatus(ok, text) {
  const s = $('status');
  s.textContent = ok ? text : 'error: ' + text;
  s.classList.toggle('ok', ok);
  s.classList.toggle('down', !ok);
}

async function loadHealth() {
  try {
    const h = await api('GET', '/healthz');
    setText('instance', 'instance ' + h.instance);
  } catch (e) { /* the status pill shows it */ }
}

$('reset').addEventListener('click', async () => {
  const b = $('reset');
  b.disabled = true;
  try {
    await api('POST', '/inventory/reset?stock=' + encodeURIComponent($('reset-stock').value));
    await refreshInventory();
  } catch (e) {
    alert('reset: ' + e.message);
  } finally { b.disabled = false; }
});

// ---- lock keys ---------------------------------------------------------------------------
const maxTTL = new Map(); // the longest PTTL seen per key: the bar's 100%

// flattenLocks turns the /locks answer (service.LocksView: servers[].keys[]) into rows
// {server, key, holder, pttl, extra}; a server that could not be read becomes a row saying why.
function flattenLocks(body) {
  const rows = [];
  for (const srv of body.servers || []) {
    const server = [srv.name, srv.addr].filter(Boolean).join(' ');
    if (srv.error) rows.push({ server, key: '', holder: 'unreadable: ' + srv.error, pttl: undefined, extra: '' });
    for (const k of srv.keys || []) {
      let holder = k.value || '';
      if (k.holders && k.holders.length) {
        holder = k.holders.map((h) => `${short(h.instance || '')}:${short(h.owner || h.field)} ×${h.count}` +
          (h.thisInstance ? ' (this instance)' : '')).join(', ');
      }
      rows.push({ server, key: k.key, holder, pttl: k.pttlMs, extra: k.type || '', kind: k.kind, deadlock: k.deadlock });
    }
  }
  return rows;
}

function short(id) { return id.length > 13 ? id.slice(0, 8) + '…' : id; }

async function refreshLocks() {
  let body;
  try { body = await api('GET', '/locks'); } catch (e) {
    $('locks').innerHTML = '';
    $('locks').append(Object.assign(document.createElement('div'), { className: 'dim small', textContent: 'GET /locks: ' + e.message }));
    return;
  }
  const rows = flattenLocks(body).filter((r) => r.pttl !== -2);
  setText('fence', body.fenceToken ? 'newest fencing token accepted: ' + body.fenceToken : '');
  const box = $('locks');
  box.innerHTML = '';
  if (rows.length === 0) {
    box.append(Object.assign(document.createElement('div'), { className: 'dim small', textContent: 'no lock keys held' }));
    return;
  }
  for (const r of rows) {
    const id = r.server + '|' + r.key;
    if (r.pttl > 0 && r.pttl > (maxTTL.get(id) || 0)) maxTTL.set(id, r.pttl);
    const line = document.createElement('div');
    line.className = 'lockrow';
    const left = document.createElement('div');
    left.innerHTML = '<div class="server"></div><div class="holder"></div>';
    left.children[0].textContent = r.server + (r.key ? ' · ' + r.key : '');
    left.children[1].textContent = r.holder || '(no holder field)';
    left.children[1].title = r.holder;
    const bar = document.createElement('div');
    bar.className = 'bar';
    const fill = document.createElement('div');
    fill.className = 'fill';
    const txt = document.createElement('span');
    txt.className = 'txt';
    if (r.pttl === -1 && r.kind === 'fencing counter') {
      txt.textContent = 'fencing counter: no TTL by design';
    } else if (r.pttl === -1) {
      fill.classList.add('none');
      txt.textContent = r.deadlock ? 'no TTL: deadlock' : 'no TTL';
    } else if (r.pttl !== undefined) {
      fill.style.width = Math.max(0, Math.min(100, 100 * r.pttl / (maxTTL.get(id) || r.pttl))) + '%';
      txt.textContent = r.pttl + ' ms';
    }
    bar.append(fill, txt);
    const extra = document.createElement('div');
    extra.className = 'small dim';
    extra.textContent = r.extra;
    line.append(left, bar, extra);
    box.append(line);
  }
}

$('hold').addEventListener('click', async () => {
  const b = $('hold');
  b.disabled = true;
  setText('hold-result', 'holding…');
  try {
    const res = await api('POST', '/getMultiLock?holdSeconds=' + encodeURIComponent($('hold-seconds').value));
    const masters = (res.masters || []).map((m) => `master${m.master}: ${m.renewals} renewals, TTL jumped back ${m.ttlJumps}×`).join('; ');
    setText('hold-result', `held ${Math.round(res.heldMs)} ms (lease ${res.leaseMs} ms, renewed every ${res.renewEveryMs} ms): ` +
      (masters || summarize(res)) + (res.lost ? ' — LOST' : ''));
  } catch (e) {
    setText('hold-result', 'error: ' + e.message);
  } finally { b.disabled = false; }
});

function summarize(obj) {
  const s = JSON.stringify(obj);
  return s.length > 200 ? s.slice(0, 200) + '…' : s;
}

// ---- burst and chart -------------------------------------------------------------------------
const chart = $('chart');

function canvasCtx() {
  const dpr = window.devicePixelRatio || 1;
  const w = chart.clientWidth || 560;
  const h = chart.clientHeight || 180;
  if (chart.width !== Math.round(w * dpr)) { chart.width = Math.round(w * dpr); chart.height = Math.round(h * dpr); }
  const ctx = chart.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  ctx.font = '11px system-ui, sans-serif';
  return { ctx, w, h };
}

function axes(ctx, w, h, xMax, yMax, xLabel) {
  ctx.strokeStyle = '#2a3440';
  ctx.fillStyle = '#8a98a6';
  ctx.beginPath(); ctx.moveTo(34, 8); ctx.lineTo(34, h - 20); ctx.lineTo(w - 6, h - 20); ctx.stroke();
  ctx.fillText(String(yMax), 4, 14);
  ctx.fillText('0', 20, h - 20);
  ctx.fillText(xLabel + ' ' + Math.round(xMax) + ' ms', w - 110, h - 6);
}

function drawLive() {
  const { ctx, w, h } = canvasCtx();
  const last = liveSamples[liveSamples.length - 1] || [1, 0];
  const xMax = Math.max(last[0], 100);
  const yMax = Math.max(1, ...liveSamples.map((s) => s[1]));
  axes(ctx, w, h, xMax, yMax, 'live');
  ctx.strokeStyle = '#58a6ff';
  ctx.beginPath();
  liveSamples.forEach(([t, v], i) => {
    const x = 34 + (w - 40) * t / xMax;
    const y = h - 20 - (h - 30) * v / yMax;
    if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
  });
  ctx.stroke();
}

// drawTimeline draws the burst's answers per bucket (bars: sold, failed) and the running total
// of sales (line).
function drawTimeline(res) {
  const { ctx, w, h } = canvasCtx();
  const tl = res.timeline || [];
  const n = Math.max(tl.length, 1);
  let total = 0;
  const cum = tl.map((b) => (total += b.sold));
  const yMax = Math.max(1, total, ...tl.map((b) => b.sold + b.failed));
  axes(ctx, w, h, n * res.bucketMs, yMax, 'burst');
  const bw = (w - 40) / n;
  tl.forEach((b, i) => {
    const x = 35 + i * bw;
    const hs = (h - 30) * b.sold / yMax;
    const hf = (h - 30) * b.failed / yMax;
    ctx.fillStyle = '#3fb950';
    ctx.fillRect(x, h - 20 - hs, Math.max(1, bw - 1), hs);
    ctx.fillStyle = '#f8514988';
    ctx.fillRect(x, h - 20 - hs - hf, Math.max(1, bw - 1), hf);
  });
  ctx.strokeStyle = '#58a6ff';
  ctx.beginPath();
  cum.forEach((v, i) => {
    const x = 35 + (i + 1) * bw;
    const y = h - 20 - (h - 30) * v / yMax;
    if (i === 0) ctx.moveTo(35, h - 20);
    ctx.lineTo(x, y);
  });
  ctx.stroke();
  ctx.fillStyle = '#dde4ea';
  ctx.fillText('sold per ' + res.bucketMs + ' ms (green), not sold (red), total sold (blue)', 40, 20);
}

$('burst').addEventListener('click', async () => {
  const b = $('burst');
  b.disabled = true;
  const n = $('burst-n').value;
  const mode = $('burst-mode').value;
  const work = $('burst-work').value;
  setText('burst-result', `firing ${n} sales with lock ${mode}…`);
  try {
    const inv = await api('GET', '/inventory');
    soldAtBurst = inv.sold;
    liveSamples = [[0, 0]];
    burstStart = performance.now();
    bursting = true;
    let q = '/lab/burst?n=' + encodeURIComponent(n) + '&lock=' + encodeURIComponent(mode);
    if (Number(work) > 0) q += '&workMs=' + encodeURIComponent(work);
    const res = await api('POST', q);
    bursting = false;
    drawTimeline(res);
    const parts = Object.entries(res.outcomes).map(([k, v]) => `${k} ${v}`).join(', ');
    setText('burst-result', `${res.n} sales with lock ${res.lock} in ${Math.round(res.durationMs)} ms: ${parts}` +
      ` (${Math.round(res.salesPerSecond)} sales/s)`);
    await refreshInventory();
  } catch (e) {
    bursting = false;
    setText('burst-result', 'error: ' + e.message);
  } finally { b.disabled = false; }
});

// ---- scenarios -----------------------------------------------------------------------------
const columns = ['sold', 'initialStock', 'lostUpdates', 'oversold', 'overlaps', 'foreignUnlocks', 'deadlock',
  'staleWritesRejected', 'renewals', 'durationMs'];
let labBusy = false;

async function loadScenarios() {
  const body = await api('GET', '/lab/scenarios');
  const sel = $('burst-mode');
  sel.innerHTML = '';
  for (const m of body.modes) sel.append(new Option(m, m, m === 'lua', m === 'lua'));
  const tbody = document.querySelector('#scenarios tbody');
  tbody.innerHTML = '';
  for (const sc of body.scenarios) {
    const tr = document.createElement('tr');
    tr.id = 'row-' + sc.name;
    // The lab's short form says "none" for the safe rows, which is also a mode's name.
    const expected = String(sc.short || '').replace(/^none\b/, 'no anomaly');
    const cells = [sc.row, sc.name, expected];
    cells.forEach((v) => { const td = document.createElement('td'); td.textContent = v; tr.append(td); });
    tr.children[2].title = sc.expect + ' (' + sc.step + ')';
    const btnTd = document.createElement('td');
    const btn = document.createElement('button');
    btn.textContent = 'run';
    btn.className = 'run';
    btn.dataset.scenario = sc.name;
    btn.addEventListener('click', () => runScenario(sc.name));
    btnTd.append(btn);
    tr.append(btnTd);
    for (const c of [...columns, 'history']) {
      const td = document.createElement('td');
      td.dataset.col = c;
      tr.append(td);
    }
    const v = document.createElement('td');
    v.className = 'verdict';
    v.id = 'verdict-' + sc.name;
    tr.append(v);
    tbody.append(tr);
  }
  if (!body.enabled) setText('lab-status', 'the lab is disabled (lab.enabled=false)');
  await showLastRuns(body);
}

// fillRow writes a run's figures, history and verdict into its scenario's row.
function fillRow(name, res) {
  const tr = $('row-' + name);
  if (!tr) return;
  for (const c of columns) {
    const td = tr.querySelector(`td[data-col="${c}"]`);
    let val = res[c];
    if (c === 'deadlock') val = val ? 'yes' : 'no';
    if (c === 'durationMs') val = val < 1000 ? Math.round(val) + ' ms' : (val / 1000).toFixed(1) + ' s';
    td.textContent = val;
  }
  // The history verdict; NO links the drawing of the sales no stock counter can explain, kept in
  // Redis with the run whoever started it (or written by this service for its own run).
  const h = tr.querySelector('td[data-col="history"]');
  const short = { linearizable: 'yes', 'NOT linearizable': 'NO' }[res.history] ||
    (String(res.history || '').startsWith('n/a') ? 'n/a' : res.history ? '?' : '');
  h.textContent = '';
  h.title = res.history || '';
  if (res.historyUrl) {
    const a = document.createElement('a');
    a.href = res.historyUrl;
    a.target = '_blank';
    a.textContent = short + ' ↗';
    a.title = 'NOT linearizable: open the drawing of the sales no stock counter can explain (porcupine)';
    h.append(a);
  } else if (short === 'NO') {
    // A run whose drawing was not kept (over the size Redis keeps, or recorded by an older
    // version): say so, and how to get one here.
    h.textContent = 'NO ';
    const why = document.createElement('span');
    why.className = 'dim why';
    why.textContent = '(no drawing kept: run it here)';
    h.title = 'NOT linearizable. The drawing of this run was not kept with it in Redis (too large, or the run ' +
      'was recorded by an older version); press "run" to run the row here and link its drawing.';
    h.append(why);
  } else {
    h.textContent = short;
  }
  const v = $('verdict-' + name);
  v.className = 'verdict ' + res.verdict;
  v.textContent = res.verdict;
  v.dataset.verdict = res.verdict;
  v.title = res.reason || (res.checks || []).map((c) => `${c.ok ? 'ok' : 'FAIL'} ${c.what}: ${c.got}`).join('\n');
  tr.dataset.finished = res.finishedAt || '';
}

// showDetail draws a run's timeline and lists its checks under the table.
function showDetail(name, res) {
  shownRun = name + '@' + res.finishedAt;
  drawScenario(name, res);
  setText('lab-detail', `${name}: ` + (res.checks || []).map((c) => `${c.ok ? '✓' : '✗'} ${c.what} = ${c.got}`).join(' · ') +
    (res.notes && res.notes.length ? ' · ' + res.notes.join(' · ') : ''));
}

// showLastRuns fills the rows from the last run of each scenario, whoever started it (this
// page, a POST to the service, another instance, `seckill lab`), and draws the newest one.
let shownRun = '';
async function showLastRuns(body) {
  let newest = null;
  for (const [name, res] of Object.entries(body.last || {})) {
    const tr = $('row-' + name);
    if (tr && tr.dataset.finished !== res.finishedAt) fillRow(name, res);
    if (!newest || Date.parse(res.finishedAt) > Date.parse(newest.finishedAt)) newest = res;
  }
  if (body.running) setText('lab-status', 'running now: ' + body.running);
  if (newest && shownRun !== newest.name + '@' + newest.finishedAt) {
    showDetail(newest.name, await api('GET', '/lab/scenarios/' + encodeURIComponent(newest.name) + '/result'));
  }
}

// refreshLab picks up runs this page did not start.
async function refreshLab() {
  if (labBusy) return;
  try {
    const body = await api('GET', '/lab/scenarios');
    if (!labBusy) await showLastRuns(body);
  } catch (e) { /* the inventory's poll shows the service's state */ }
}

function setButtons(disabled) {
  document.querySelectorAll('button.run, #run-all').forEach((b) => { b.disabled = disabled; });
}

async function runScenario(name) {
  if (labBusy) return;
  labBusy = true;
  setButtons(true);
  try { await runOne(name); } finally { labBusy = false; setButtons(false); }
}

async function runOne(name) {
  const v = $('verdict-' + name);
  v.className = 'verdict running';
  v.textContent = 'running…';
  delete v.dataset.verdict;
  setText('lab-status', 'running ' + name + '…');
  try {
    const res = await api('POST', '/lab/scenarios/' + encodeURIComponent(name) + '/run');
    fillRow(name, res);
    setText('lab-status', `${name}: ${res.verdict}`);
    showDetail(name, res);
  } catch (e) {
    v.className = 'verdict UNEXPECTED';
    v.textContent = 'error ' + (e.status || '');
    v.title = e.message;
    setText('lab-status', `${name}: ${e.message}`);
  }
}

// drawScenario draws a scenario's run as a timeline: one bar per sale from request to answer
// (grey), the time it held the lock darker, and its time inside the read-check-write coloured by
// the answer; a read-check-write that crosses another buyer's is red, a write rejected by its
// token orange. The red count is the audit's overlaps seen from the buyers (lab.TimelineOverlaps):
// the sales that entered the read-check-write while another was inside.
function drawScenario(name, res) {
  const link = $('history-link');
  link.hidden = !res.historyUrl;
  link.href = res.historyUrl || '';
  const canvas = $('scenario-chart');
  const spans = res.timeline || [];
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth || 560;
  const rowH = Math.max(2, Math.min(12, Math.floor(180 / Math.max(spans.length, 1))));
  const h = 30 + rowH * spans.length;
  canvas.style.height = h + 'px';
  canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr);
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  ctx.font = '11px system-ui, sans-serif';
  const tMax = Math.max(1, ...spans.map((s) => s.endMs));
  const x = (t) => 34 + (w - 40) * t / tMax;
  const inside = (s) => s.sectionMs !== undefined && s.sectionMs >= 0;
  const crosses = (s, o) => o !== s && inside(o) && o.sectionMs < s.sectionEndMs && s.sectionMs < o.sectionEndMs;
  // Entered while another was inside (ties: the earlier in the list entered first).
  const enteredWhileInside = (s, i) => spans.some((o, j) => j !== i && inside(o) && s.sectionMs < o.sectionEndMs &&
    (o.sectionMs < s.sectionMs || (o.sectionMs === s.sectionMs && j < i)));
  const colour = { sold: '#3fb950', soldout: '#8a98a6', stale: '#d29922', lost: '#a371f7', crashed: '#f85149' };
  let overlaps = 0;
  spans.forEach((s, i) => {
    const y = 20 + i * rowH;
    ctx.fillStyle = '#2a3440';
    ctx.fillRect(x(s.startMs), y, Math.max(1, x(s.endMs) - x(s.startMs)), rowH - 1);
    if (s.heldMs >= 0) {
      ctx.fillStyle = s.kind === 'crashed' ? colour.crashed : '#3d4b5c';
      ctx.fillRect(x(s.heldMs), y, Math.max(1, x(s.endMs) - x(s.heldMs)), rowH - 1);
    }
    if (!inside(s)) return;
    const two = spans.some((o) => crosses(s, o));
    if (enteredWhileInside(s, i)) overlaps++;
    ctx.fillStyle = s.kind === 'stale' ? '#d29922' : two ? '#f85149' : (colour[s.kind] || '#58a6ff');
    ctx.fillRect(x(s.sectionMs), y, Math.max(1, x(s.sectionEndMs) - x(s.sectionMs)), rowH - 1);
  });
  ctx.fillStyle = '#8a98a6';
  ctx.fillText(Math.round(tMax) + ' ms', w - 60, 12);
  const audit = res.overlaps === undefined ? '' : `; the table's overlaps, counted in Redis: ${res.overlaps}`;
  setText('scenario-caption', spans.length
    ? `${name}: ${spans.length} sales; grey: waiting or answering, dark grey: holding the lock, green: inside the ` +
      `read-check-write, red: inside the read-check-write together with another buyer (${overlaps} entered while ` +
      `another was inside${audit}), orange: a write rejected by its token`
    : `${name}: no sales on a timeline`);
}

$('run-all').addEventListener('click', async () => {
  if (labBusy) return;
  labBusy = true;
  setButtons(true);
  try {
    for (const b of document.querySelectorAll('button.run')) await runOne(b.dataset.scenario);
    setText('lab-status', 'all scenarios done');
  } finally { labBusy = false; setButtons(false); }
});

// ---- start ---------------------------------------------------------------------------------
loadHealth();
loadScenarios().catch((e) => setText('lab-status', 'GET /lab/scenarios: ' + e.message));
poll(refreshInventory, () => (bursting ? 100 : 500));
poll(refreshLocks, 250);
setTimeout(() => poll(refreshLab, 3000), 3000);
