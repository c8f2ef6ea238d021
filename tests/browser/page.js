// What the page tests share: their command line (PAGE.html --figures a,b,c [--max-bytes N] …),
// the size budget, and the page opened from disk in Debian's chromium (headless, through
// playwright-core), recording console errors, page errors and any network request, with every
// listed figure checked to be embedded and to decode.
'use strict';
const fs = require('fs');
const path = require('path');
const { chromium } = require('playwright-core');

function fail(msg) { console.log(`FAIL [browser] ${msg}`); process.exitCode = 1; }

// The page's path, its listed figures and size (over --max-bytes fails), and `opt` for the
// test's own options.
function commandLine(argv) {
  const args = argv.slice(2);
  const opt = (name, dflt) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : dflt; };
  const file = path.resolve(args[0]);
  const figures = (opt('--figures', '') || '').split(',').filter(Boolean);
  const maxBytes = Number(opt('--max-bytes', 25 * 1024 * 1024));
  const size = fs.statSync(file).size;
  if (size > maxBytes) fail(`${file} is ${size} bytes, over the budget of ${maxBytes}`);
  return { args, opt, file, figures, size };
}

// Opens `file`, checks its figures, runs check({ page, loadMs, imgs }), then fails on every
// console error, page error or network request seen meanwhile.
async function withPage(file, figures, check) {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--allow-file-access-from-files'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1300, height: 1000 } });
    const errors = [];
    page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', e => errors.push(String(e)));
    page.on('request', r => { const u = r.url(); if (!u.startsWith('file:') && !u.startsWith('data:')) errors.push(`network request: ${u}`); });
    const t0 = Date.now();
    await page.goto('file://' + file, { waitUntil: 'load', timeout: 120000 });
    const loadMs = Date.now() - t0;

    // Every figure is embedded and decodes.
    const imgs = await page.$$eval('figure img', xs => xs.map(x => ({ id: x.parentElement.id, ok: x.complete && x.naturalWidth > 0 })));
    for (const f of figures)
      if (!imgs.some(i => i.id === 'fig-' + f && i.ok)) fail(`figure ${f} is missing or does not decode`);
    if (imgs.some(i => !i.ok)) fail('an embedded figure does not decode: ' + imgs.filter(i => !i.ok).map(i => i.id).join(' '));

    await check({ page, loadMs, imgs });
    for (const e of errors) fail(`console: ${e}`);
  } finally {
    await browser.close();
  }
}

module.exports = { fail, commandLine, withPage };
