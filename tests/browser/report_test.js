// Opens a report.html from disk in Debian's chromium (headless, through playwright-core) and
// checks what a reader would: no console errors, no network, every figure decodes, the
// explorer redraws when the layer, head or quantity changes, hover values, the model view.
//   node report_test.js REPORT.html --figures a,b,c [--max-bytes N] [--screenshot out.png] [--no-examples]
'use strict';
const { fail, commandLine, withPage } = require('./page');

async function main() {
  const { args, opt, file, figures, size } = commandLine(process.argv);
  const shot = opt('--screenshot', '');
  await withPage(file, figures, async ({ page, loadMs, imgs }) => {
    // The explorer: a drawn heatmap that changes with layer, head and quantity.
    const state = () => page.$eval('#view', c => c.toDataURL());
    const options = sel => page.$$eval(`#${sel} option`, os => os.map(o => o.value));
    const layers = await options('layer'), heads = await options('head'), examples = await options('ex');
    if (args.includes('--no-examples')) {
      // A store without examples: the page says so, and nothing breaks.
      if (examples.length !== 0) fail('expected a store without examples');
      if (!/no examples/.test(await page.textContent('#note'))) fail('the explorer does not say the store has no examples');
      console.log('browser: ' + JSON.stringify({ bytes: size, figures: imgs.length, examples: 0 }));
      return;
    }
    if (examples.length === 0) fail('the explorer lists no example');
    // Heatmap pixels alone first (overlays off), then the overlay must add marks.
    await page.uncheck('#ovSel');
    await page.uncheck('#ovAtt');
    const bare = await state();
    await page.check('#ovSel');
    if ((await state()) === bare) fail('the selected-pairs overlay drew nothing');
    await page.uncheck('#ovSel');
    const s0 = await state();
    if (layers.length > 1) {
      await page.selectOption('#layer', layers[layers.length - 1]);
      if ((await state()) === s0) fail('changing the layer did not change the heatmap');
    }
    const s1 = await state();
    if (heads.length > 1) {
      await page.selectOption('#head', heads[1]);
      if ((await state()) === s1) fail('changing the head did not change the heatmap');
    }
    // The colour bar with its values, and the axes' names.
    const barLabels = () => page.$$eval('#cbar text.tick', ts => ts.map(t => t.textContent));
    const axes = async () => [await page.textContent('#yname'), await page.textContent('#xname')];
    const labels = await barLabels();
    if (labels.length < 2 || !labels.every(t => /^-?[0-9][0-9.e+-]*$/.test(t)))
      fail(`the colour bar's labels are not values: ${JSON.stringify(labels)}`);
    if ((await page.$$eval('#cbar rect', rs => rs.length)) < 16) fail('the colour bar shows no colours');
    if (!/attention/.test(await page.textContent('#cbar text.name'))) fail('the colour bar does not say what it shows');
    if (JSON.stringify(await axes()) !== JSON.stringify(['query token i', 'key token j'])) fail(`attention axes: ${await axes()}`);
    // The colour scale: clipped at the 99th percentile by default; the whole map's range and
    // each row's own draw other colours, and the colour bar follows.
    if ((await page.$eval('#scale', s => s.value)) !== 'clip') fail('the default scale is not the clipped 99th percentile');
    const clipped = await state();
    await page.selectOption('#scale', 'map');
    const whole = await state();
    if (whole === clipped) fail('the whole-map scale draws the same colours as the clipped one');
    if (JSON.stringify(await barLabels()) === JSON.stringify(labels)) fail('the colour bar did not follow the scale');
    await page.selectOption('#scale', 'row');
    if ((await state()) === whole) fail('the per-row scale draws the same colours as the whole-map one');
    if (!(await barLabels()).includes('row max')) fail(`the per-row colour bar: ${await barLabels()}`);
    await page.selectOption('#scale', 'clip');
    if ((await state()) !== clipped) fail('back on the clipped scale, the map is not as before');

    const s2 = await state();
    await page.selectOption('#qty', 'similarity');
    if ((await state()) === s2) fail('switching to similarity did not change the heatmap');
    if (JSON.stringify(await axes()) !== JSON.stringify(['token i', 'token j'])) fail(`similarity axes: ${await axes()}`);
    await page.selectOption('#qty', 'rollout');
    const note = await page.textContent('#note');
    if (!/rollout/.test(note)) fail(`rollout note missing: ${note}`);
    if ((await axes())[1] !== 'input token j') fail(`rollout axes: ${await axes()}`);
    // Rollout bars: a value axis with ticks and the input tokens under the bars.
    const barTokens = await page.$$eval('#bars text.token', ts => ts.map(t => t.textContent));
    if (barTokens.length < 2 || !barTokens[0].startsWith('[CLS]'))
      fail(`rollout bars' token labels: ${JSON.stringify(barTokens.slice(0, 5))}`);
    if ((await page.$$eval('#bars text.tick', ts => ts.length)) < 2) fail('the rollout bars have no value axis');
    if ((await page.$$eval('#bars rect', rs => rs.length)) < 2) fail('no rollout bars');
    await page.selectOption('#qty', 'attention');
    await page.check('#ovSel');

    // Hover shows the token pair and a value.
    const box = await page.locator('#view').boundingBox();
    await page.mouse.move(box.x + box.width * 0.6, box.y + box.height * 0.6);
    const hover = await page.textContent('#hover');
    if (!/->.*: -?[0-9.e-]+/.test(hover)) fail(`hover shows no value: "${hover}"`);

    // Model view: one thumbnail per (layer, head); a click selects it.
    const thumbs = await page.$$('#grid canvas');
    if (thumbs.length !== layers.length * heads.length) fail(`model view has ${thumbs.length} thumbnails, want ${layers.length * heads.length}`);
    if (thumbs.length > 1) {
      await thumbs[1].click();
      const [l, h] = [await page.$eval('#layer', s => s.value), await page.$eval('#head', s => s.value)];
      if (l !== '0' || h !== '1') fail(`clicking thumbnail (0,1) selected layer ${l} head ${h}`);
    }
    // Every example renders.
    for (const e of examples) {
      await page.selectOption('#ex', e);
      const n = await page.$eval('#view', c => c.width);
      if (!(n > 100)) fail(`example ${e} did not render`);
    }
    const info = { bytes: size, load_ms: loadMs, figures: imgs.length, examples: examples.length, layers: layers.length, heads: heads.length,
                   note: (await page.textContent('#note')).trim() };
    if (shot) {
      await page.selectOption('#ex', examples[0]);
      await page.selectOption('#layer', layers[Math.floor(layers.length / 2)] || '0');
      await page.selectOption('#head', heads[0]);
      await page.locator('#explorer').screenshot({ path: shot });
    }
    console.log('browser: ' + JSON.stringify(info));
  });
}

main().catch(e => { fail(String(e && e.stack || e)); });
