// SPDX-License-Identifier: Apache-2.0
// fleet.spec.js — issue 16's fleet views in headless Chromium (Debian's
// /usr/bin/chromium) driven by playwright-core.  Plain node script, run by
// tests/server/test_regress.c's browser case against a real rearview-server
// holding the fleet fixture (tests/server/fleet_fixture.h: synthetic
// captures with exact durations of versions 4.2, 4.3 and 4.4 of the same
// app, one method exactly 4x slower in 4.3, nothing else different, so
// every number compared here is the same on any machine) and a local
// webhook receiver.  It exits 0 when every check passes and prints what failed
// otherwise.  The last part walks the heatmap's three clicks (a cell, a
// frame, a capture).  Every check reads what the page draws (names, order, colours,
// classes), never only that a page loaded.  Screenshots go to RVS_SHOTS.
//
// Environment: RVS_URL (https://127.0.0.1:PORT), RVS_PASSWORD (admin),
// RVS_APP (the fixture's app id), RVS_PLANTED (the slowed method: checked
// against, never put in the regression query), RVS_PER_VERSION (traces per
// version), RVS_WORST (trace ids, comma-separated, in the JSON API's
// sort=severity order), RVS_LONGEST (the same, sort=duration), RVS_HOOK (the receiver's URL), RVS_MODULES
// (node_modules with playwright-core), RVS_SHOTS, RVS_PROFILE (a fresh
// --user-data-dir), RVS_ONSET_APP (an app with a clean step in the planted
// method at version 1.1) and RVS_ONSET_DAY (the UTC day number it began).
'use strict';

const path = require('path');
const fs = require('fs');

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const base = env('RVS_URL');
const app = env('RVS_APP');
const planted = env('RVS_PLANTED');
const per = Number(env('RVS_PER_VERSION'));
const worst = env('RVS_WORST').split(',');
const longest = env('RVS_LONGEST').split(',');
const shots = env('RVS_SHOTS');
const { chromium } = require(path.join(env('RVS_MODULES'), 'playwright-core'));

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
  console.log(`fleet browser check passed: ${what}`);
}

// A table as drawn: its header texts and its body rows' cell texts.
async function table(page, id) {
  return page.evaluate((tid) => {
    const t = document.getElementById(tid);
    if (!t) return null;
    return {
      head: [...t.querySelectorAll('thead th')].map((h) => h.innerText.trim()),
      rows: [...t.querySelectorAll('tbody tr')].map((r) => [...r.cells].map((c) => c.innerText.trim())),
    };
  }, id);
}

// The column of a table whose header starts with `head`.
function col(t, head) {
  const i = t.head.findIndex((h) => h.startsWith(head));
  if (i < 0) throw new Error(`no column "${head}" in ${t.head.join(' | ')}`);
  return i;
}

// The flame graph's drawn nodes: name (the title up to " — "), class, the
// rect's geometry and its computed fill as [r, g, b].
async function flameNodes(page) {
  return page.locator('svg.aggflame g').evaluateAll((gs) => gs.map((g) => {
    const r = g.querySelector('rect');
    const fill = getComputedStyle(r).fill.match(/\d+/g).map(Number);
    return {
      name: g.querySelector('title').textContent.split(' — ')[0],
      cls: g.getAttribute('class'),
      x: Number(r.getAttribute('x')),
      y: Number(r.getAttribute('y')),
      w: Number(r.getAttribute('width')),
      fill,
    };
  }));
}

// speedscope's Sandwich view (key 3) as drawn: name -> { total, self } in
// per cent of the profile (as web.spec.js reads it; "<0.01%" is 0.005,
// ">99%" 99.5).  Waits for the row of `expect`.
async function sandwich(page, expect) {
  await page.keyboard.press('3');
  await page.waitForFunction((n) => [...document.querySelectorAll('tr')].some(
    (r) => r.cells.length === 3 && r.cells[2].innerText.trim() === n), expect,
  { timeout: 30000 });
  const rows = await page.evaluate(() => [...document.querySelectorAll('tr')]
    .filter((r) => r.cells.length === 3 && r.cells[0].tagName === 'TD')
    .map((r) => [...r.cells].map((c) => c.innerText.trim())));
  const pct = (t) => {
    const m = /\(([<>]?)([\d.]+)%\)/.exec(t);
    if (!m) return NaN;
    return m[1] === '<' ? Number(m[2]) / 2 : m[1] === '>' ? Number(m[2]) + 0.5 : Number(m[2]);
  };
  const out = {};
  for (const [total, self, name] of rows) out[name] = { total: pct(total), self: pct(self) };
  return out;
}

async function main() {
  fs.mkdirSync(shots, { recursive: true });
  const ctx = await chromium.launchPersistentContext(env('RVS_PROFILE'), {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    // The server's certificate is signed by the test's own throwaway CA.
    ignoreHTTPSErrors: true,
    viewport: { width: 1400, height: 900 },
  });
  const errors = [];
  try {
    const page = ctx.pages()[0] || await ctx.newPage();
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('response', (r) => { if (r.status() >= 400) errors.push(`${r.status()} ${r.url()}`); });
    // What the zoomable timeline's canvas draws: each fillText of the
    // latest frame (draw() starts with clearRect), to read names and the
    // anomaly marker as drawn.
    await page.addInitScript(() => {
      const P = CanvasRenderingContext2D.prototype;
      const fillText = P.fillText;
      const clearRect = P.clearRect;
      window.rvsDrawn = [];
      P.clearRect = function (...a) { window.rvsDrawn = []; return clearRect.apply(this, a); };
      P.fillText = function (t, x, y, ...a) {
        window.rvsDrawn.push({ t: String(t), x, y });
        return fillText.call(this, t, x, y, ...a);
      };
    });

    // Sign in through the real login page.
    await page.goto(`${base}/regressions`);
    check(page.url().endsWith('/login'), 'an unauthenticated page redirects to /login');
    await page.fill('input[name=password]', env('RVS_PASSWORD'));
    await Promise.all([page.waitForURL(/\/traces$/), page.click('form.login button')]);

    // 1. What got slower, 4.2 -> 4.3, asked through the form: the planted
    // method comes first though nothing in the query names it.
    await page.goto(`${base}/regressions`);
    await page.fill('form.filters input[name=app]', app);
    await page.fill('form.filters input[name=a]', '4.2');
    await page.fill('form.filters input[name=b]', '4.3');
    await Promise.all([page.waitForURL(/\/regressions\?.*b=4\.3/),
      page.click('form.filters button')]);
    check(!page.url().includes(planted.slice(0, 8)), `the query names no method (${page.url()})`);
    const methods = await table(page, 'regress-methods');
    check(methods && methods.rows.length >= 3, `the methods table has rows (${methods && methods.rows.length})`);
    const top = methods.rows[0];
    check(top[col(methods, 'Method')].includes(planted),
      `${planted} is listed first (${methods.rows.map((r) => r[0]).join(', ')})`);
    const ratio = parseFloat(top[col(methods, 'Self ratio')]);
    const delta = parseFloat(top[col(methods, "Cliff's")]);
    const q = Number(top[col(methods, 'q (self)')]);
    check(ratio > 2 && delta > 0.5 && q < 0.05,
      `its row shows the effect (self ratio ${ratio}, Cliff's delta ${delta}) and q ${q} < 0.05`);
    check(top[col(methods, 'Traces with it')] === `${per} / ${per}`,
      `its row counts the traces of each side (${top[col(methods, 'Traces with it')]})`);
    const others = methods.rows.slice(1).map((r) => parseFloat(r[col(methods, 'Self ratio')]));
    check(others.every((x) => !(x > 1.5)), `no other method looks slower (${others.join(', ')})`);
    const chains = await table(page, 'regress-chains');
    check(chains && chains.rows.length >= 1 && chains.rows[0][0].includes(planted),
      `the slowest chain ends in the planted method (${chains && chains.rows.length && chains.rows[0][0]})`);
    await page.screenshot({ path: path.join(shots, '1-regressions.png'), fullPage: true });

    // The automatic comparison found the same, and its alert was delivered.
    const runs = await table(page, 'regress-runs');
    const run = runs.rows.find((r) => r[col(runs, 'Versions')] === '4.2 → 4.3');
    check(run && run[col(runs, 'Top method')].includes(planted) &&
      run[col(runs, 'Over the bar')] === 'alert',
    `the automatic comparison 4.2 → 4.3 names the planted method and alerted (${run && run.join(' | ')})`);
    const later = runs.rows.find((r) => r[col(runs, 'Versions')] === '4.3 → 4.4');
    check(!later || !later[col(runs, 'Top method')].includes(planted) ||
      later[col(runs, 'Over the bar')] !== 'alert', '4.3 → 4.4 (fixed) raises no alert for it');
    const dels = await table(page, 'deliveries');
    const del = dels.rows.find((r) => r[col(dels, 'URL')] === env('RVS_HOOK'));
    check(del && del[col(dels, 'State')] === 'delivered' && del[col(dels, 'Attempts')] === '2' &&
      del[col(dels, 'Last status')] === '200',
    `the alert's delivery to the receiver shows delivered after 2 attempts (${del && del.join(' | ')})`);
    await page.locator('#deliveries').screenshot({ path: path.join(shots, '1b-deliveries.png') });

    // Its link leads to a 4.3 trace where the method tops the self time.
    const link = page.locator('#regress-methods tbody tr').first().locator('a[href^="/traces/"]').first();
    const href = await link.getAttribute('href');
    await Promise.all([page.waitForURL(new RegExp(`${href}$`)), link.click()]);
    // (Its top by self time in this one trace may be another method a
    // preemption inflated: the statistics are over the traces.)
    const selfTop = await table(page, 'top-self');
    const pjRow = selfTop.rows.find((r) => r[col(selfTop, 'Method')].includes(planted));
    const pjSelf = pjRow && parseFloat(pjRow[col(selfTop, 'Self ms')]);
    const medA = parseFloat(top[col(methods, 'Self median A')]);
    const medB = parseFloat(top[col(methods, 'Self median B')]);
    check(pjRow && pjSelf >= medB - 0.0015 && pjSelf > 2 * medA,
      `the linked trace (${href}, among 4.3's slowest for it) shows the method's self time ` +
      `${pjSelf} ms (medians: 4.3 ${medB}, 4.2 ${medA} ms)`);
    check((await page.locator('body').innerText()).includes('4.3'), 'the linked trace is of version 4.3');
    await page.screenshot({ path: path.join(shots, '1c-slowest-trace.png'), fullPage: true });

    // 2. The aggregate flame graph over 4.3 draws the planted method wider
    // than its sibling build_item (4.2: narrower).
    const widths = {};
    for (const ver of ['4.2', '4.3']) {
      await page.goto(`${base}/aggregate?app=${encodeURIComponent(app)}&version=${ver}`);
      const nodes = await flameNodes(page);
      const pj = nodes.find((nd) => nd.name.includes(planted));
      const bi = nodes.find((nd) => nd.name.includes('rvs_fleet_build_item'));
      check(pj && bi && pj.y === bi.y, `the ${ver} aggregate draws ${planted} beside build_item`);
      widths[ver] = pj.w / bi.w;
      await page.screenshot({ path: path.join(shots, `2-aggregate-${ver}.png`), fullPage: true });
    }
    // (Means per trace: a preemption in one trace moves them, so no fixed bar.)
    check(widths['4.3'] > widths['4.2'],
      `the planted method is drawn wider in 4.3 (${widths['4.3'].toFixed(2)}× build_item) ` +
      `than in 4.2 (${widths['4.2'].toFixed(2)}×)`);
    // The diff flame graph 4.2 vs 4.3 colours it slower, the reddest.
    await page.goto(`${base}/aggregate/diff?app=${encodeURIComponent(app)}&a.version=4.2&b.version=4.3`);
    const dnodes = await flameNodes(page);
    const dpj = dnodes.find((nd) => nd.name.includes(planted));
    check(dpj && dpj.cls.split(' ').includes('slower') && dpj.fill[0] === 255 &&
      dpj.fill[1] === dpj.fill[2] && dpj.fill[1] < 200,
    `the diff flame graph draws ${planted} red, class slower (${dpj && dpj.cls}, rgb ${dpj && dpj.fill})`);
    await page.screenshot({ path: path.join(shots, '2-aggregate-diff.png'), fullPage: true });

    // 3. The worst traces: sorted by severity through the form, the order
    // the JSON API gives; by duration the slow version's traces first.
    await page.goto(`${base}/traces`);
    await page.fill('form.filters input[name=app]', app);
    await page.selectOption('form.filters select[name=sort]', 'severity');
    await Promise.all([page.waitForURL(/sort=severity/), page.click('form.filters button')]);
    let traces = await table(page, 'traces');
    const ids = traces.rows.map((r) => r[col(traces, 'Trace')]);
    check(ids.length === worst.length && ids.every((id, i) => id === worst[i]),
      `the worst traces by severity come in the JSON API's order (${ids.length} rows)`);
    const sev = traces.rows.map((r) => Number(r[col(traces, 'Severity')]));
    check(sev.every((s, i) => i === 0 || s <= sev[i - 1]) && sev[0] > sev[sev.length - 1],
      `severity falls down the page (${sev.slice(0, 5).join(', ')} … ${sev[sev.length - 1]})`);
    await page.screenshot({ path: path.join(shots, '3-worst-severity.png'), fullPage: true });
    await page.selectOption('form.filters select[name=sort]', 'duration');
    await Promise.all([page.waitForURL(/sort=duration/), page.click('form.filters button')]);
    traces = await table(page, 'traces');
    const longIds = traces.rows.map((r) => r[col(traces, 'Trace')]);
    const dur = traces.rows.map((r) => parseFloat(r[col(traces, 'Duration')]));
    check(longIds.length === longest.length && longIds.every((id, i) => id === longest[i]) &&
      dur.every((d, i) => i === 0 || d <= dur[i - 1]),
    `by duration the longest come first, in the JSON API's order (${dur[0]} … ${dur[dur.length - 1]} ms)`);
    await page.screenshot({ path: path.join(shots, '3-worst-duration.png'), fullPage: true });

    // 4. The chain search with a wildcard: every 4.3 trace, each hit's
    // matched frames marked; a chain no trace has finds nothing.
    await page.goto(`${base}/search`);
    await page.fill('form.filters input[name=chain]', `* > ${planted}`);
    await page.fill('form.filters input[name=app]', app);
    await page.fill('form.filters input[name=version]', '4.3');
    await Promise.all([page.waitForURL(/\/search\?/), page.click('form.filters button')]);
    let hits = await table(page, 'hits');
    const marked = await page.locator('#hits tbody tr').evaluateAll((rs) => rs.map(
      (r) => [...r.querySelectorAll('mark')].map((m) => m.textContent)));
    check(hits.rows.length === per && hits.rows.every((r) => r[col(hits, 'Version')] === '4.3'),
      `the chain search finds the ${per} traces of 4.3 and no other (${hits.rows.length})`);
    check(marked.every((m) => m.length >= 1 && m[m.length - 1].includes(planted)),
      `each hit marks its matched frames, ending in the planted method (${marked[0]})`);
    await page.screenshot({ path: path.join(shots, '4-search.png'), fullPage: true });
    await page.goto(`${base}/search?chain=${encodeURIComponent(`rvs_fleet_measure_text > ${planted}`)}` +
      `&app=${encodeURIComponent(app)}`);
    hits = await table(page, 'hits');
    check(hits.rows.length === 0, `a chain no trace contains finds nothing (${hits.rows.length})`);
    await page.goto(`${base}/search?chain=${encodeURIComponent(`rvs_fleet_layout_pass > * > ${planted}`)}` +
      `&app=${encodeURIComponent(app)}`);
    hits = await table(page, 'hits');
    check(hits.rows.length === 3 * per, `layout_pass > * > ${planted} finds every version's traces (${hits.rows.length})`);

    // 5. Top issues (/issues), ranked by impact in the JSON API's order:
    // the jank while parsing JSON (4.3's) and while building an item; the
    // first one's worst traces are 4.3's, most severe first.
    const issueIds = env('RVS_ISSUES').split(',');
    await page.goto(`${base}/issues?app=${encodeURIComponent(app)}`);
    const iss = await table(page, 'issues');
    const ranked = await page.locator('#issues tbody tr a[href^="/traces?sort=severity"]').evaluateAll(
      (as) => as.map((a) => new URL(a.href).searchParams.get('issue')));
    check(ranked.length === issueIds.length && ranked.every((x, i) => x === issueIds[i]),
      `the issues come in the JSON API's order (${ranked.length})`);
    const impact = iss.rows.map((r) => parseFloat(r[col(iss, 'Impact')]));
    check(impact.every((x, i) => i === 0 || x <= impact[i - 1]), `impact falls down the page (${impact})`);
    const pjAt = iss.rows.findIndex((r) => r[col(iss, 'Chain')].includes(planted));
    const biAt = iss.rows.findIndex((r) => r[col(iss, 'Chain')].includes('rvs_fleet_build_item'));
    check(pjAt >= 0 && biAt >= 0 && iss.rows[pjAt][col(iss, 'Traces')] === String(per) &&
      iss.rows[biAt][col(iss, 'Traces')] === String(2 * per),
    `the JSON jank is an issue of ${per} traces, the build_item one of ${2 * per}`);
    await page.screenshot({ path: path.join(shots, '5-issues.png'), fullPage: true });
    await Promise.all([page.waitForURL(/\/traces\?sort=severity&issue=/),
      page.locator('#issues tbody tr').nth(pjAt).locator('a[href^="/traces?sort=severity"]').click()]);
    traces = await table(page, 'traces');
    const isev = traces.rows.map((r) => Number(r[col(traces, 'Severity')]));
    check(traces.rows.length === per && traces.rows.every((r) => r[col(traces, 'Version')] === '4.3') &&
      isev.every((x, i) => i === 0 || x <= isev[i - 1]),
    `its worst traces are the ${per} of 4.3, most severe first (${isev})`);
    await page.screenshot({ path: path.join(shots, '5-issue-worst.png'), fullPage: true });

    // 6. The zoomable timeline of the linked 4.3 trace: the anomaly marker
    // drawn (its label, its red line) on a parse_json box; zoomed in with
    // the wheel at the marker, the nested calls too narrow to name in the
    // whole trace are named.
    await page.goto(base + href);
    await page.waitForFunction(() => document.getElementById('tlz').hasAttribute('data-items'),
      null, { timeout: 30000 });
    await page.locator('#tlz').scrollIntoViewIfNeeded();
    check(await page.locator('svg#timeline line title').evaluateAll(
      (ts) => ts.filter((t) => t.textContent === 'anomaly').length) === 1,
    'the timeline before the anomaly draws its marker');
    const frame = async () => page.evaluate(() => window.rvsDrawn.slice());
    // Depth of a label: draw() writes it at TOP + depth * ROW + ROW / 2.
    const depthOf = (d) => Math.round((d.y - 18 - 8) / 16);
    const names = (f) => f.filter((d) => d.t !== 'anomaly' && !/ ms$/.test(d.t));
    const whole = await frame();
    const mark = whole.find((d) => d.t === 'anomaly');
    check(mark, 'the zoomable timeline draws the anomaly marker');
    // The marker's line: the red columns of the canvas's bottom row.  Its
    // label stands 3 px right of it, or at the right edge's last 50 px when
    // the anomaly is that close to the end (the label is clamped there).
    const line = await page.evaluate(() => {
      const c = document.getElementById('tlz-canvas');
      const dpr = window.devicePixelRatio || 1;
      const row = c.getContext('2d').getImageData(0, c.height - Math.ceil(2 * dpr), c.width, 1).data;
      const red = [];
      for (let i = 0; i < c.width; i++) {
        if (row[4 * i] > 150 && row[4 * i + 1] < 80 && row[4 * i + 2] < 100) red.push(i / dpr);
      }
      return { red, w: c.width / dpr };
    });
    check(line.red.length > 0, 'the marker\'s line is drawn red');
    // (its middle: an antialiased line covers two or three pixels)
    const ax = (line.red[0] + line.red[line.red.length - 1]) / 2;
    check(line.red[line.red.length - 1] - line.red[0] < 4 &&
      (Math.abs(mark.x - 3 - ax) <= 2 || Math.abs(mark.x - (line.w - 50)) <= 1),
    `the marker's line (x ${ax}) stands under its label (x ${mark.x})`);
    // The first frame is drawn at the width it shows at (it was drawn at
    // the canvas's 1200-pixel width attribute and stretched).
    const cbox = await page.locator('#tlz-canvas').boundingBox();
    const drawnWidth = await page.evaluate(() => {
      const c = document.getElementById('tlz-canvas');
      return c.width / (window.devicePixelRatio || 1);
    });
    check(Math.abs(drawnWidth - cbox.width) < 1,
      `the first frame is drawn at the canvas's shown width (${drawnWidth} of ${cbox.width} px)`);
    await page.mouse.click(cbox.x + ax, cbox.y + 18 + 16 + 8);
    const at = await page.locator('#tlz-info').innerText();
    check(at.startsWith(planted), `the anomaly falls in a ${planted} call (${at.split(' — ')[0]})`);
    await page.locator('#tlz-canvas').screenshot({ path: path.join(shots, '6-timeline-whole.png') });
    const before = await page.evaluate(() => {
      const b = document.getElementById('tlz');
      return { loaded: +b.getAttribute('data-loaded'), items: +b.getAttribute('data-items') };
    });
    // The wheel at a nested call (where timeline.json puts it, as the
    // canvas reads it).
    const nested = await page.evaluate(async (h) => {
      const c = document.getElementById('tlz-canvas');
      const d = await (await fetch(`${h}/timeline.json?width=${c.clientWidth}`)).json();
      const it = d.items.find((i) => i[0] === 2);
      return { x: it && (it[1] + it[2]) / 2 * c.clientWidth / d.end, end: d.end,
        count: d.items.filter((i) => i[0] >= 2).length };
    }, href);
    check(nested.x > 0, `timeline.json has a nested call (at x ${nested.x})`);
    // Level of detail: the whole trace leaves most nested calls unnamed
    // (one stretched by a preemption on a loaded machine may be wide
    // enough for a label: not all).
    const wholeDeep = names(whole).filter((d) => depthOf(d) >= 2);
    check(wholeDeep.length < nested.count,
      `the whole trace names ${wholeDeep.length} of its ${nested.count} nested calls ` +
      `(${wholeDeep.map((d) => d.t)})`);
    await page.mouse.move(cbox.x + nested.x, cbox.y + 18 + 2 * 16 + 8);
    await page.mouse.wheel(0, -1000);
    await page.waitForFunction((n) => +document.getElementById('tlz').getAttribute('data-loaded') > n,
      before.loaded, { timeout: 30000 });
    const zoomed = await frame();
    const view = await page.evaluate(() => {
      const b = document.getElementById('tlz');
      return { from: +b.getAttribute('data-from'), to: +b.getAttribute('data-to') };
    });
    const deep = names(zoomed).filter((d) => depthOf(d) >= 2);
    check(view.to - view.from > 0 && view.to - view.from < 0.5 * nested.end &&
      deep.length >= 1 && deep.every((d) => 'rvs_fleet_measure_text'.startsWith(d.t.replace(/…$/, ''))),
    `zoomed in (${((view.to - view.from) / 1e6).toFixed(3)} ms shown) the nested measure_text ` +
      `calls are named (${deep.map((d) => d.t)})`);
    await page.locator('#tlz-canvas').screenshot({ path: path.join(shots, '6-timeline-zoomed.png') });
    await page.screenshot({ path: path.join(shots, '6-trace.png'), fullPage: true });


    // 7. The trace's exports open in speedscope with the fixture's call
    // tree: layout_pass holds everything, the leaves' self time is their
    // total, the planted method is there.
    const id = href.split('/').pop();
    for (const fmt of ['speedscope', 'chrome']) {
      await page.goto('about:blank'); // speedscope reads its hash only at load
      await page.goto(`${base}/static/speedscope/index.html#profileURL=${encodeURIComponent(
        `/traces/${id}/export?format=${fmt}`)}&title=${id}-${fmt}`);
      await page.waitForFunction((t) => document.body.innerText.includes(t), `${id}-${fmt}`,
        { timeout: 30000 });
      check(!/went wrong|error/i.test(await page.evaluate(() => document.body.innerText)),
        `speedscope opens the ${fmt} export`);
      const sw = await sandwich(page, planted);
      const lp = sw.rvs_fleet_layout_pass;
      const pj = sw[planted];
      const mt = sw.rvs_fleet_measure_text;
      check(lp && pj && mt && sw.rvs_fleet_build_item && lp.total >= 99 && pj.self === pj.total &&
        mt.self === mt.total && sw.rvs_fleet_build_item.total > sw.rvs_fleet_build_item.self,
      `the ${fmt} export in speedscope: layout_pass ${lp && lp.total} %, ${planted} ` +
        `${pj && pj.self} % self, build_item holds measure_text`);
      await page.screenshot({ path: path.join(shots, `7-speedscope-${fmt}.png`) });
    }

    // 8. The planted method's trend per version, and its brush: a column
    // dragged over becomes side A, another side B of the diff, whose page
    // then draws the two sets.
    await page.goto(`${base}/trend?method=${encodeURIComponent(planted)}` +
      `&app=${encodeURIComponent(app)}&by=version`);
    const keys = await page.$$eval('#trend-chart rect.tb', (rs) => rs.map((r) => r.getAttribute('data-key')));
    check(keys.join(',') === '4.2,4.3,4.4', `the trend's buckets are the versions in order (${keys})`);
    const drag = async (from, to) => {
      const a = await page.locator(`#trend-chart rect.tb[data-i="${from}"]`).boundingBox();
      const b = await page.locator(`#trend-chart rect.tb[data-i="${to}"]`).boundingBox();
      await page.mouse.move(a.x + a.width / 2, a.y + a.height / 2);
      await page.mouse.down();
      await page.mouse.move(b.x + b.width / 2, b.y + b.height / 2, { steps: 5 });
      await page.mouse.up();
    };
    await drag(0, 0);
    check(await page.textContent('#brush-sel') === '4.2', 'dragging over 4.2 selects it');
    await page.click('#brush-a');
    await drag(1, 1);
    await page.click('#brush-b');
    const common = `method=${encodeURIComponent(planted)}&app=${encodeURIComponent(app)}`;
    const diffHref = await page.getAttribute('#brush-diff', 'href');
    check(diffHref === `/aggregate/diff?${common}&a.version=4.2&b.version=4.3`,
      `the brushed A (4.2) and B (4.3) become the diff's sets (${diffHref})`);
    await drag(2, 0);
    const sel = await page.textContent('#brush-sel');
    const aggHref = await page.getAttribute('#brush-agg', 'href');
    check(sel === '4.2 … 4.4' && /^\/aggregate\?method=[^&]+&app=[^&]+&since=\d+&until=\d+$/.test(aggHref),
      `a drag across three versions selects them as the days they were seen (${sel}: ${aggHref})`);
    await page.screenshot({ path: path.join(shots, '8-trend.png'), fullPage: true });
    await Promise.all([page.waitForURL(/\/aggregate\/diff\?/), page.click('#brush-diff')]);
    const bnodes = await flameNodes(page);
    check(bnodes.some((n) => n.name === planted) && bnodes.some((n) => n.name === 'rvs_fleet_layout_pass'),
      `the brushed diff's page draws the sets' flame graph (${bnodes.length} frames)`);

    // 8b. The onset (issue 32): another app whose planted method got 4x
    // slower in 1.1, released three days ago: the trend page marks the
    // onset at 1.1 by version and at that day by day, sure of it.
    const onsetApp = env('RVS_ONSET_APP');
    const onsetDay = new Date(Number(env('RVS_ONSET_DAY')) * 86400000).toISOString().slice(0, 10);
    for (const [by, want] of [['version', '1.1'], ['day', onsetDay]]) {
      await page.goto(`${base}/trend?method=${encodeURIComponent(planted)}` +
        `&app=${encodeURIComponent(onsetApp)}&by=${by}`);
      const key = await page.textContent('#onset-key').catch(() => null);
      const line = await page.locator('#onset-line').count();
      const par = await page.textContent('#onset');
      check(key === want && line === 1,
        `the trend by ${by} marks the onset at ${want} (${key}; ${par && par.slice(0, 120)})`);
      // The weighted onset on the chart too: this app's uploads carry no
      // selection, so every weight is 1 (unknown) and the weighted test
      // finds the same split; the weighted lines equal the others (one set
      // drawn) and the page says the weights are not exact.
      const wline = await page.locator('#onset-weighted-line').count();
      const wkey = wline === 1 ? await page.getAttribute('#onset-weighted-line', 'data-key') : null;
      const wlegend = await page.locator('#legend-onset-weighted').count();
      const drawn = await page.getAttribute('#trend-chart', 'data-weighted');
      const whref = await page.getAttribute('a:has(#onset-weighted-line)', 'href').catch(() => null);
      const note = await page.textContent('#weighted-note').catch(() => null);
      check(wline === 1 && wkey === want && wlegend === 1 && whref === '#onset-weighted' &&
        drawn === 'same' &&
        note !== null && /partly unweighted/.test(note),
        `the trend by ${by} draws the weighted onset at ${want} with its legend entry` +
        ` (${wkey}; weighted lines ${drawn}; ${note && note.slice(0, 100)})`);
      await page.screenshot({ path: path.join(shots, `8-onset-${by}.png`), fullPage: true });
    }

    // 9. The heatmap's three clicks: a cell opens the merged flame graph of
    // exactly its captures (the diff against the rest of the range one
    // link away), a frame there lists the captures where it is heaviest,
    // and one of them opens its timeline at the anomaly with the frame's
    // method outlined.  Each step's time is printed, never compared (the
    // budget is bench_web's and bench_pg_views').
    let t = Date.now();
    const step = (what) => { console.log(`heatmap step ${what}: ${Date.now() - t} ms`); t = Date.now(); };
    await page.goto(`${base}/heatmap?app=${encodeURIComponent(app)}`);
    step('heatmap page');
    const total = Number(await page.getAttribute('#heatmap-count', 'data-traces'));
    const cells = await page.$$eval('#heatmap rect[data-count]', (rs) => rs.map((r) => ({
      col: r.getAttribute('data-col'),
      row: r.getAttribute('data-row'),
      n: Number(r.getAttribute('data-count')),
      dmin: Number(r.getAttribute('data-dur-min')),
      dmax: Number(r.getAttribute('data-dur-max')),
    })));
    check(total === 3 * per && cells.reduce((a, c) => a + c.n, 0) === total,
      `the heatmap counts every capture once (${total} in ${cells.length} cells)`);
    await page.screenshot({ path: path.join(shots, '9-heatmap.png'), fullPage: true });
    const cell = cells.reduce((a, c) => (c.n > a.n ? c : a));
    const cellSel = `#heatmap rect[data-col="${cell.col}"][data-row="${cell.row}"]`;
    await Promise.all([page.waitForURL(/\/aggregate\?.*dur_min=/), page.click(cellSel)]);
    step('click 1: the cell\'s flame graph');
    const aggUrl = page.url();
    const cellTraces = Number((await page.textContent('#agg-traces b')).trim());
    check(cellTraces === cell.n, `the cell's flame graph merges its ${cell.n} captures (${cellTraces})`);
    const cnodes = await flameNodes(page);
    check(cnodes.some((n) => n.name === planted), `the cell's flame graph draws ${planted}`);
    const diffLink = await page.getAttribute('#cell-diff', 'href');
    check(/^\/aggregate\/diff\?b\.since=\d+&b\.until=\d+/.test(diffLink || ''),
      `the diff against the rest of the range is one link away (${diffLink})`);
    await page.goto(base + diffLink);
    const sideN = async (id) => Number((await page.textContent(`#${id} b`)).trim());
    check(await sideN('agg-a') === cell.n && await sideN('agg-b') === total - cell.n,
      `the diff's A is the cell (${cell.n}) and B the rest of the range (${total - cell.n})`);
    await page.goto(aggUrl);
    const frames = await page.$$eval('svg.aggflame a.frame', (as) => as.map((a) => a.querySelector('title').textContent.split(' — ')[0]));
    const fi = frames.indexOf(planted);
    check(fi >= 0, `the frame of ${planted} links to where it is heaviest`);
    t = Date.now();
    await Promise.all([page.waitForURL(/\/heaviest\?/), page.locator('svg.aggflame a.frame').nth(fi).click()]);
    step('click 2: where the frame is heaviest');
    const heavy = await table(page, 'heaviest');
    const fms = heavy.rows.map((r) => parseFloat(r[col(heavy, 'Frame ms')]));
    check(heavy.rows.length === Math.min(20, cell.n) && fms.every((v, i) => i === 0 || v <= fms[i - 1]),
      `the captures where ${planted} is heaviest, heaviest first (${fms.join(', ')})`);
    // All of the cell's captures when asked for enough rows: exactly as
    // many as the cell counts, each with an anomaly inside its durations
    // (shown in ms to 3 decimals: within 600 ns).
    const heavyUrl = page.url();
    await page.goto(heavyUrl.replace(/\?/, '?limit=200&'));
    const all = await table(page, 'heaviest');
    const durs = all.rows.map((r) => parseFloat(r[col(all, 'Anomaly ms')]) * 1e6);
    check(all.rows.length === cell.n && durs.every((d) => d >= cell.dmin - 600 && (cell.dmax < 0 || d < cell.dmax + 600)),
      `every one of the cell's ${cell.n} captures has the frame, its duration in the cell's rows (${all.rows.length})`);
    await page.goto(heavyUrl);
    await page.screenshot({ path: path.join(shots, '9-heaviest.png'), fullPage: true });
    const heavyHref = await page.getAttribute('#heaviest a.heavy', 'href');
    t = Date.now();
    await Promise.all([page.waitForURL(/\/traces\/t-[0-9a-f]+\?focus=anomaly/), page.click('#heaviest a.heavy')]);
    await page.waitForFunction(() => {
      const b = document.getElementById('tlz');
      return b && b.dataset.focused === 'anomaly' && b.dataset.loaded !== '0' &&
        Number(b.dataset.highlight) > 0;
    }, null, { timeout: 30000 });
    step('click 3: the capture at the anomaly');
    const box = await page.evaluate(() => ({ ...document.getElementById('tlz').dataset }));
    check(heavyHref.includes(`method=${encodeURIComponent(planted)}`) &&
      Number(box.from) <= Number(box.anomaly) && Number(box.anomaly) <= Number(box.to) &&
      Number(box.to) - Number(box.from) <= 2.2e9,
    `the capture opens zoomed to the anomaly (${box.from}..${box.to} ns holds ${box.anomaly})`);
    const hl = await page.$$eval('#timeline rect.hl', (rs) => rs.map((r) => r.getAttribute('data-name')));
    check(Number(box.highlight) > 0 && hl.length > 0 && hl.every((n) => n === planted) &&
      (await page.textContent('#tlz-hl')).includes(planted),
    `the frame's method is highlighted (${box.highlight} boxes on the canvas, ${hl.length} in the timeline)`);
    await page.screenshot({ path: path.join(shots, '9-capture-at-anomaly.png'), fullPage: true });

    check(errors.length === 0, `no script errors (${errors.join(' | ')})`);
  } finally {
    await ctx.close();
  }
}

main().then(() => { console.log('fleet browser test passed'); process.exit(0); },
  (e) => { console.error(String(e && e.stack || e)); process.exit(1); });
