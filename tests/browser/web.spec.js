// SPDX-License-Identifier: Apache-2.0
// web.spec.js — the engineer web UI in headless Chromium (Debian's
// /usr/bin/chromium) driven by playwright-core.  Plain node script, run by
// tests/server/test_web.c against a real rearview-server with ingested
// traces; it exits 0 when every check passes and prints what failed
// otherwise.  Screenshots go to RVS_SHOTS.
//
// Environment: RVS_URL (https://127.0.0.1:PORT), RVS_PASSWORD, RVS_TRACE
// (a decoded trace of app com.example.web), RVS_MODULES (node_modules with
// playwright-core), RVS_SHOTS, RVS_PROFILE (a fresh --user-data-dir);
// optional RVS_OFFCPU_TRACE (a trace with OFFCPU, THREAD_COUNTERS,
// LOCK_WAIT and FRAMES records: its "why the time went" section, its
// timeline's frames row, and its Chrome
// export — off-CPU slices, counter events, lock-wait flows — in speedscope);
// optional RVS_TIES_TRACE (calls sharing timestamps by the hundred: its
// Chrome export's self times in speedscope against the trace page's).
'use strict';

const path = require('path');
const fs = require('fs');

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const base = env('RVS_URL');
const trace = env('RVS_TRACE');
const shots = env('RVS_SHOTS');
const { chromium } = require(path.join(env('RVS_MODULES'), 'playwright-core'));

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
  console.log(`browser check passed: ${what}`);
}

// speedscope's Sandwich view (key 3) as drawn: its table's rows (DOM, not
// canvas), name -> { total, self } in per cent of the profile (speedscope
// prints "<0.01%" and ">99%" at the ends: read as 0.005 and 99.5) and the
// cells' text as drawn (totalText, selfText).  Waits for the row of `expect`.
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
  for (const [total, self, name] of rows) {
    out[name] = { total: pct(total), self: pct(self), totalText: total, selfText: self };
  }
  return out;
}

// The fixture's call tree drawn right: rvs_fixture_outer calls the two
// leaves, one after the other.  Leaves' self time is all their time (a
// staircase, each call nested in the one before, gives the earlier leaf the
// later one's time), and the caller's time holds both leaves'.  The folded
// export weighs stacks in whole microseconds, so its cold leaf (well under
// 1 µs) has no line there: `leaves` names the leaves the format must show.
function checkNesting(rows, what, leaves) {
  const o = rows.rvs_fixture_outer;
  check(o && leaves.every((l) => rows[l]), `${what}: speedscope lists rvs_fixture_outer and ` +
    `${leaves.join(', ')} (${Object.keys(rows).join(', ')})`);
  for (const l of leaves) {
    check(rows[l].totalText === rows[l].selfText,
      `${what}: ${l}'s self time is its total time (${rows[l].selfText} of ${rows[l].totalText})`);
  }
  const sum = leaves.reduce((a, l) => a + rows[l].total, 0);
  check(o.total + 1 >= sum && o.self < o.total,
    `${what}: rvs_fixture_outer holds the leaves (${o.total} % >= ${sum} %)`);
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
    acceptDownloads: true,
    viewport: { width: 1280, height: 900 },
  });
  const errors = [];
  try {
    const page = ctx.pages()[0] || await ctx.newPage();
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('response', (r) => { if (r.status() >= 400) errors.push(`${r.status()} ${r.url()}`); });

    // Sign in.
    await page.goto(`${base}/traces`);
    check(page.url().endsWith('/login'), 'an unauthenticated page redirects to /login');
    await page.fill('input[name=password]', env('RVS_PASSWORD'));
    await Promise.all([page.waitForURL(/\/traces$/), page.click('form.login button')]);
    check(await page.locator('#traces tbody tr').count() >= 2, 'the trace list shows traces');
    await page.screenshot({ path: path.join(shots, '1-traces.png'), fullPage: true });

    // Filter by app: only that app's traces remain.
    await page.fill('input[name=app]', 'com.example.web');
    await Promise.all([page.waitForURL(/app=com.example.web/), page.click('form.filters button')]);
    const apps = await page.locator('#traces tbody tr td:nth-child(2)').allTextContents();
    check(apps.length >= 1 && apps.every((a) => a === 'com.example.web'),
      `the app filter keeps only com.example.web (${apps.length} rows)`);
    await page.screenshot({ path: path.join(shots, '2-filtered.png'), fullPage: true });

    // Open the trace.
    await Promise.all([page.waitForURL(new RegExp(`/traces/${trace}$`)),
      page.click(`a[href="/traces/${trace}"]`)]);
    check((await page.locator('h1').textContent()) === trace, 'the trace page opens');
    check(await page.locator('#top-self tbody tr').count() >= 1, 'the top self-time table has rows');

    // Timeline: server-side SVG with one rect per call; clicking selects.
    const tl = page.locator('svg#timeline rect[data-name]');
    check(await tl.count() >= 3, `the timeline has rects (${await tl.count()})`);
    await tl.first().click();
    check((await page.locator('#tl-info').textContent()).includes('ms'),
      'clicking a timeline rect shows its method and duration');

    // The zoomable timeline (issue 16 question 5): a canvas over
    // timeline.json; each settled view fetches its own level of detail
    // (data-loaded counts the fetches, data-from/-to its range).
    const tlz = page.locator('#tlz');
    await page.waitForFunction(() => document.getElementById('tlz').hasAttribute('data-items'),
      null, { timeout: 30000 });
    await tlz.scrollIntoViewIfNeeded();
    const view = async () => page.evaluate(() => {
      const b = document.getElementById('tlz');
      return { from: +b.getAttribute('data-from') || 0, to: +b.getAttribute('data-to') || 0,
        loaded: +b.getAttribute('data-loaded'), items: +b.getAttribute('data-items') };
    });
    const settled = async (after) => page.waitForFunction((n) =>
      +document.getElementById('tlz').getAttribute('data-loaded') > n, after, { timeout: 30000 });
    check((await view()).items >= 1, 'the zoomable timeline draws boxes');
    await page.locator('#tlz-canvas').screenshot({ path: path.join(shots, '3a-timeline-whole.png') });
    let v = await view();
    await page.click('#tlz-in');
    await settled(v.loaded);
    const zin = await view();
    check(zin.to - zin.from > 0 && zin.to - zin.from < (v.to - v.from || Infinity),
      `the zoom-in button narrows the range (${zin.from}..${zin.to})`);
    await page.locator('#tlz-canvas').focus();
    await page.keyboard.press('ArrowRight');
    await settled(zin.loaded);
    const panned = await view();
    check(panned.from > zin.from, `the right arrow pans later (${zin.from} -> ${panned.from})`);
    const box = await page.locator('#tlz-canvas').boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + 20);
    await page.mouse.wheel(0, -400);
    await settled(panned.loaded);
    const wheeled = await view();
    check(wheeled.to - wheeled.from < panned.to - panned.from,
      `the mouse wheel zooms in (${panned.to - panned.from} -> ${wheeled.to - wheeled.from} ns)`);
    await page.mouse.move(box.x + box.width / 2, box.y + 26);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width / 2 - 200, box.y + 26, { steps: 5 });
    await page.mouse.up();
    await settled(wheeled.loaded);
    const dragged = await view();
    check(dragged.from !== wheeled.from, `dragging pans (${wheeled.from} -> ${dragged.from})`);
    await page.locator('#tlz-canvas').screenshot({ path: path.join(shots, '3b-timeline-zoomed.png') });
    await page.click('#tlz-all');
    await settled(dragged.loaded);
    await page.mouse.click(box.x + 3, box.y + 26);
    check((await page.locator('#tlz-info').textContent()).includes('ms'),
      'clicking a box of the zoomable timeline shows its method, duration and self time');
    await page.locator('#tlz').screenshot({ path: path.join(shots, '3c-timeline-selected.png') });
    const bf = page.locator('#tlz-butterfly');
    check(await bf.count() === 1, 'the selected call links to its callers and callees');
    await Promise.all([page.waitForURL(/\/butterfly\?method=/), bf.click()]);
    check(await page.locator('#bf-callers').count() === 1, 'the butterfly page lists callers');
    await page.screenshot({ path: path.join(shots, '3d-butterfly.png'), fullPage: true });
    await page.goBack();

    // Flame graph: the SVG inside the <object> has frames; a click zooms.
    await page.locator('#flame').scrollIntoViewIfNeeded();
    let flame = null;
    for (let i = 0; i < 100 && !flame; i++) {
      flame = page.frames().find((f) => f.url().endsWith('/flame.svg'));
      if (!flame) await page.waitForTimeout(100);
    }
    check(flame !== null, 'the flame graph document loads');
    await flame.waitForSelector('g.f rect');
    const nframes = await flame.locator('g.f').count();
    check(nframes >= 2, `the flame graph has frames (${nframes})`);
    // Click the deepest frame: it zooms to the full 1,200 units and its
    // ancestors fade (the SVG's own script).
    const depths = await flame.locator('g.f').evaluateAll((gs) => gs.map((g) => Number(g.dataset.d)));
    const deepest = depths.indexOf(Math.max(...depths));
    const target = flame.locator('g.f').nth(deepest);
    await target.dispatchEvent('click');
    const width = Number(await target.locator('rect').getAttribute('width'));
    const faded = await flame.locator('g.f').evaluateAll(
      (gs) => gs.filter((g) => g.style.opacity === '0.5').length);
    check(Math.abs(width - 1200) < 0.01 && faded >= 1,
      `clicking a frame zooms it (width ${width}, ${faded} ancestors faded)`);
    await page.screenshot({ path: path.join(shots, '3-trace.png'), fullPage: true });

    // Export download.
    const [dl] = await Promise.all([page.waitForEvent('download'),
      page.click('a.export[href$="format=folded"]')]);
    const saved = path.join(shots, `${trace}.folded`);
    await dl.saveAs(saved);
    check(fs.readFileSync(saved, 'utf8').includes('rvs_fixture_hot_spin'),
      'the folded export downloads with the trace\'s stacks');

    // speedscope, served locally, loads the trace from this origin.
    await Promise.all([page.waitForURL(/\/static\/speedscope\/index.html#profileURL=/),
      page.click('#speedscope')]);
    // The toolbar shows the profile's title; names and nesting are read from
    // the Sandwich view's table.
    await page.waitForFunction((t) => document.body.innerText.includes(t), trace,
      { timeout: 30000 });
    await page.screenshot({ path: path.join(shots, '4-speedscope.png') });
    const text = await page.evaluate(() => document.body.innerText);
    check(await page.locator('canvas').count() >= 1 && !/went wrong|error/i.test(text),
      'speedscope loads and shows the trace');
    checkNesting(await sandwich(page, 'rvs_fixture_outer'), 'the speedscope export',
      ['rvs_fixture_hot_spin', 'rvs_fixture_cold_leaf']);

    // Issue 16: every export speedscope reads opens there without its
    // "Something went wrong" (Chrome JSON as B/E events, folded), with the
    // names and nesting of the trace.
    for (const fmt of ['chrome', 'folded']) {
      const url = `/static/speedscope/index.html#profileURL=${encodeURIComponent(
        `/traces/${trace}/export?format=${fmt}`)}&title=${trace}-${fmt}`;
      await page.goto('about:blank'); // speedscope reads its hash only at load
      await page.goto(base + url);
      await page.waitForFunction((t) => document.body.innerText.includes(t), `${trace}-${fmt}`,
        { timeout: 30000 });
      await page.screenshot({ path: path.join(shots, `5-speedscope-${fmt}.png`) });
      const shown = await page.evaluate(() => document.body.innerText);
      check(!/went wrong|error/i.test(shown), `speedscope opens the ${fmt} export`);
      checkNesting(await sandwich(page, 'rvs_fixture_outer'), `the ${fmt} export`,
        fmt === 'folded' ? ['rvs_fixture_hot_spin'] : ['rvs_fixture_hot_spin', 'rvs_fixture_cold_leaf']);
      await page.screenshot({ path: path.join(shots, `5-speedscope-${fmt}-sandwich.png`) });
    }
    const off = process.env.RVS_OFFCPU_TRACE;
    if (off) {
      await page.goto(`${base}/traces/${off}`);
      check(await page.locator('#on-off-cpu tbody tr').count() === 4 &&
        await page.locator('#lock-waits tbody tr').count() === 1 &&
        await page.locator('#timeline rect.offcpu').count() === 3,
        'the off-CPU trace shows its methods\' on/off-CPU time, lock wait and intervals');
      const nframes = await page.locator('#timeline rect.frame').count();
      const nlate = await page.locator('#timeline rect.frame.late').count();
      check(nframes === 2 && nlate === 1,
        `the trace's timeline draws its frames row with the late frame marked (${nframes} frames, ${nlate} late)`);
      await page.locator('#timeline rect.frame.late').click();
      check((await page.locator('#tl-info').innerText()).includes('frame (late)'),
        'clicking a late frame names it');
      await page.locator('#timeline rect.offcpu').first().click();
      check((await page.locator('#tl-info').innerText()).includes('off-CPU'),
        'clicking an off-CPU interval names it');
      // The zoomable canvas draws the same rows below its calls (its
      // timeline.json, checked exactly by test_web.c), and a click on the
      // late frame there names it.
      await page.waitForFunction(() => {
        const b = document.getElementById('tlz');
        return b && b.getAttribute('data-frames') !== null;
      }, null, { timeout: 30000 });
      const tlz = await page.locator('#tlz').evaluate((b) => ({
        frames: b.getAttribute('data-frames'), late: b.getAttribute('data-late-frames'),
        offcpu: b.getAttribute('data-offcpu'), frRow: Number(b.getAttribute('data-frames-row')),
        offRow: Number(b.getAttribute('data-offcpu-row')),
      }));
      check(tlz.frames === '2' && tlz.late === '1' && tlz.offcpu === '3' &&
        tlz.frRow === tlz.offRow + 1 && tlz.offRow > 0,
      `the zoomable timeline draws an off-CPU row (3 intervals) and below it a frames row ` +
        `(2 frames, 1 late) (${JSON.stringify(tlz)})`);
      const doc = await page.evaluate(async (t) =>
        (await fetch(`/traces/${t}/timeline.json?width=1200`, { credentials: 'same-origin' })).json(), off);
      const lateFrame = doc.frames.find((f) => f[2] === 1);
      const box = await page.locator('#tlz-canvas').boundingBox();
      await page.mouse.click(box.x + box.width * ((lateFrame[0] + lateFrame[1]) / 2) / doc.end,
        box.y + 18 + tlz.frRow * 16 + 8);
      const said = await page.locator('#tlz-info').innerText();
      check(said.startsWith('frame (late) 0.040 ms'),
        `clicking the canvas's late frame names it and its 40 µs (${said})`);
      await page.screenshot({ path: path.join(shots, '6-offcpu-trace.png'), fullPage: true });
      const url = `/static/speedscope/index.html#profileURL=${encodeURIComponent(
        `/traces/${off}/export?format=chrome`)}&title=${off}-chrome`;
      await page.goto('about:blank');
      await page.goto(base + url);
      await page.waitForFunction((t) => document.body.innerText.includes(t), `${off}-chrome`,
        { timeout: 30000 }).catch(() => {});
      await page.waitForTimeout(500);
      const shown = await page.evaluate(() => document.body.innerText);
      await page.screenshot({ path: path.join(shots, '7-speedscope-offcpu-chrome.png') });
      check(shown.includes(`${off}-chrome`) && !/went wrong|error/i.test(shown),
        'speedscope opens the off-CPU trace\'s chrome export');
      // Its app's aggregate flame graph: read_pipe's frame tooltip splits
      // its self time on and off the CPU, and the page counts the traces
      // that carry CPU data.
      await page.goto(`${base}/aggregate?app=com.example.offcpu`);
      const tips = await page.locator('svg.aggflame g title').allTextContents();
      const tip = tips.find((t) => t.startsWith('read_pipe — ')) || '';
      check(tip.includes('; self on the CPU 0.002 ms, off it 0.028 ms per trace (over the '),
        `read_pipe's frame tooltip gives its on/off-CPU self time (${tip})`);
      check((await page.locator('#agg-traces .cpu-traces').innerText()).includes('carry CPU data'),
        'the aggregate page says how many traces carry CPU data');
    }
    const ties = process.env.RVS_TIES_TRACE;
    if (ties) {
      // The server's self times (the trace page's top-self table, ms with
      // three decimals) against speedscope's reading of the Chrome export,
      // whose hundreds of events at one timestamp its importer queues and
      // sorts by ts: a zero-length call opened but never closed there
      // swallows every later call and all the time after it.
      await page.goto(`${base}/traces/${ties}`);
      const server = {};
      for (const row of await page.locator('#top-self tbody tr').all()) {
        const cells = await row.locator('td').allInnerTexts();
        server[cells[1].trim()] = { self: Number(cells[3]) * 1000, incl: Number(cells[4]) * 1000 };
      }
      const url = `/static/speedscope/index.html#profileURL=${encodeURIComponent(
        `/traces/${ties}/export?format=chrome`)}&title=${ties}-chrome`;
      await page.goto('about:blank');
      await page.goto(base + url);
      await page.waitForFunction((t) => document.body.innerText.includes(t), `${ties}-chrome`,
        { timeout: 30000 });
      const rows = await sandwich(page, 'measure');
      await page.screenshot({ path: path.join(shots, '8-speedscope-ties-chrome.png') });
      const us = (t) => {
        const m = /^([\d.]+)(µs|ms|s)/.exec(t);
        return m ? Number(m[1]) * { 'µs': 1, ms: 1000, s: 1e6 }[m[2]] : NaN;
      };
      for (const name of ['measure', 'draw', 'idle', 'main']) {
        const got = rows[name] ? us(rows[name].selfText) : NaN;
        check(server[name] && Math.abs(got - server[name].self) < 0.01,
          `speedscope reads ${name}'s self time from the Chrome export with 400 events at one ` +
          `timestamp as the server does (${rows[name] && rows[name].selfText}, server ` +
          `${server[name] && server[name].self} µs)`);
      }
      // The leaf's total is its own time: nothing after it nests inside.
      check(rows.measure && Math.abs(us(rows.measure.totalText) - server.measure.incl) < 0.01,
        `measure's total in speedscope is the server's inclusive time (${rows.measure &&
          rows.measure.totalText}, server ${server.measure.incl} µs)`);
    }
    // Issue 16 question 2: the aggregate flame graph of the app's traces,
    // and the differential one of two versions (test_web.c uploads
    // com.example.agg 1.0 and 1.1, the hot loop run 3 and 9 times).
    await page.goto(`${base}/aggregate?app=com.example.web`);
    check(await page.locator('svg.aggflame rect').count() >= 3,
      'the aggregate page draws a flame graph');
    check((await page.locator('#bottom-up').textContent()).includes('rvs_fixture_hot_spin'),
      'the aggregate bottom-up table names the hot loop');
    await page.screenshot({ path: path.join(shots, '6-aggregate.png'), fullPage: true });
    await page.goto(`${base}/aggregate/diff?app=com.example.agg&a.version=1.0&b.version=1.1`);
    check(await page.locator('svg.aggflame g.n').count() >= 3,
      'the diff page draws a differential flame graph');
    // Shaded by the regression test of the two versions, the legend says
    // so, and a frame leads to its method's row on /regressions.
    check((await page.locator('#flame-legend').innerText()).includes('q < 0.05'),
      'the diff\'s legend says frames are coloured only where q < 0.05');
    const href = await page.locator('svg.aggflame a').first().getAttribute('href');
    check(href && href.startsWith('/regressions?') && href.includes('#m-'),
      `a frame links to its row on /regressions (${href})`);
    await page.goto(base + href);
    const anchor = href.slice(href.indexOf('#') + 1);
    check(await page.evaluate((a) => !!document.querySelector(`#regress-methods [id="${a}"]`),
      anchor), `the frame's method has its row there (${anchor})`);
    await page.screenshot({ path: path.join(shots, '7-aggregate-diff.png'), fullPage: true });
    // The fleet page ranks apps by jank rate, traced or not (test_web.c
    // plants com.jank.<b>untraced</b> at 40 % with no upload and
    // com.example.web, which has traces, at 10 %).
    await page.goto(`${base}/fleet`);
    const jank = await page.locator('#jank tbody tr').evaluateAll((trs) =>
      trs.map((tr) => Array.from(tr.querySelectorAll('td'), (td) => td.textContent)));
    const ui = jank.findIndex((r) => r[0] === 'com.jank.<b>untraced</b>');
    const wi = jank.findIndex((r) => r[0] === 'com.example.web');
    check(ui >= 0 && wi > ui, `the fleet's jank table ranks the untraced app (40 %) above the ` +
      `traced one (10 %) (${JSON.stringify(jank)})`);
    check(jank[ui][1] === '40%' && jank[ui][6] === 'no traces yet' && jank[wi][6] === 'yes',
      'the untraced app is marked "no traces yet", the traced one "yes"');
    check(await page.locator('#jank span.untraced').count() >= 1,
      'the mark is the span.untraced the page styles');
    // Each app's versions with their own rates, as test_web.c planted them
    // (most frames first; a hostile version name shown as text).
    const vers = await page.locator('#jank tbody tr').evaluateAll((trs) => trs.map((tr) =>
      Array.from(tr.querySelectorAll('ul.jank-versions li'), (li) => ({
        v: li.getAttribute('data-version'),
        shown: li.querySelector('.version').textContent,
        rate: li.querySelector('.rate').textContent,
        late: Number(li.querySelector('.late').textContent),
        frames: Number(li.querySelector('.frames').textContent),
      }))));
    check(JSON.stringify(vers[wi]) === JSON.stringify([
      { v: '2.0.0', shown: '2.0.0', rate: '3.3%', late: 5, frames: 150 },
      { v: '2.1.0', shown: '2.1.0', rate: '30.0%', late: 15, frames: 50 }]),
    `the traced app's versions: 2.0.0 5 late of 150, 2.1.0 15 of 50 (${JSON.stringify(vers[wi])})`);
    const hostile = '1.0"<script>x</script>';
    check(JSON.stringify(vers[ui]) === JSON.stringify([
      { v: '', shown: 'no version declared', rate: '50.0%', late: 30, frames: 60 },
      { v: hostile, shown: hostile, rate: '25.0%', late: 10, frames: 40 }]),
    `the untraced app's versions: none declared 30 of 60, a hostile name as text 10 of 40 ` +
      `(${JSON.stringify(vers[ui])})`);
    check(await page.locator('#jank script').count() === 0,
      'no version name became markup');
    await page.screenshot({ path: path.join(shots, '8-fleet-jank.png'), fullPage: true });
    check(errors.length === 0, `no script errors (${errors.join(' | ')})`);
  } finally {
    await ctx.close();
  }
}

main().then(() => { console.log('browser test passed'); process.exit(0); },
  (e) => { console.error(String(e && e.stack || e)); process.exit(1); });
