// Opens a compare.html from disk in Debian's chromium (headless, through playwright-core) and
// checks what a reader would: no console errors, no network, every figure decodes, and, through
// the page's own index of plot areas and run colours, that every run is drawn in every per-layer
// figure (its colour's pixels inside a plot area) and nothing is drawn in a colour no run has.
//   node compare_test.js COMPARE.html --figures a,b,c [--max-bytes N]
'use strict';
const { fail, commandLine, withPage } = require('./page');

async function main() {
  const { file, figures, size } = commandLine(process.argv);
  await withPage(file, figures, async ({ page, imgs }) => {
    // Pixels: for each figure, the number of pixels near each run's colour inside its plot areas.
    const counts = await page.evaluate(() => {
      const index = JSON.parse(document.getElementById('index').textContent);
      const near = (d, c) => Math.abs(d[0] - c[0]) + Math.abs(d[1] - c[1]) + Math.abs(d[2] - c[2]) < 24;
      const probe = [255, 0, 255];  // a colour no run has
      const out = {};
      for (const f of index.figures) {
        const img = document.querySelector(`#fig-${f.stem} img`);
        const canvas = document.createElement('canvas');
        canvas.width = img.naturalWidth;
        canvas.height = img.naturalHeight;
        const ctx = canvas.getContext('2d');
        ctx.drawImage(img, 0, 0);
        const per = index.runs.map(() => 0);
        let stray = 0;
        for (const p of f.panels) {
          const data = ctx.getImageData(Math.round(p.x), Math.round(p.y), Math.round(p.w), Math.round(p.h)).data;
          for (let i = 0; i < data.length; i += 4) {
            const px = [data[i], data[i + 1], data[i + 2]];
            index.runs.forEach((r, k) => { if (near(px, r.rgb)) per[k]++; });
            if (near(px, probe)) stray++;
          }
        }
        out[f.stem] = { per, stray, panels: f.panels.length, width: img.naturalWidth, expected: f.width };
      }
      return { out, runs: index.runs.map(r => r.label) };
    });
    for (const [stem, c] of Object.entries(counts.out)) {
      if (c.width !== c.expected) fail(`${stem}: the PNG is ${c.width} px wide, the index says ${c.expected}`);
      if (c.panels === 0) fail(`${stem}: no plot area in the index`);
      c.per.forEach((n, k) => { if (n < 20) fail(`${stem}: run ${counts.runs[k]} is not drawn (${n} pixels of its colour)`); });
      if (c.stray > 0) fail(`${stem}: ${c.stray} pixels of a colour no run has`);
    }
    const rows = await page.$$eval('#runs tr', rs => rs.length - 1);
    if (rows !== counts.runs.length) fail(`the run table lists ${rows} runs, the index ${counts.runs.length}`);
    console.log('browser: ' + JSON.stringify({ bytes: size, figures: imgs.length, runs: counts.runs, pixels: counts.out }));
  });
}

main().catch(e => { fail(String(e && e.stack || e)); });
