// Pages made from hostile strings (issue 22, item 13): a store whose vocabulary holds markup in
// an example's tokens, and compare labels, title and note that are markup. Each page must show
// the strings as text and run none of them: hostile_test.js PAGE.html --expect TEXT [--expect …]
// [--figures a,b]. The markup sets window.__pwned or adds an element with id "pwned" if it runs.
'use strict';
const { fail, commandLine, withPage } = require('./page.js');

const { args, file, figures } = commandLine(process.argv);
const expect = [];
for (let i = 0; i < args.length; i++) if (args[i] === '--expect') expect.push(args[i + 1]);

withPage(file, figures, async ({ page }) => {
  await page.waitForTimeout(500);  // an onload or a timer would have run by now
  const state = await page.evaluate(() => ({
    pwned: window.__pwned === undefined ? null : String(window.__pwned),
    element: document.getElementById('pwned') !== null,
    scripts: document.scripts.length,
    text: document.body.textContent + ' ' + (typeof EX === 'undefined' ? '' : EX.map(e => e.tokens.join(' ')).join(' ')),
  }));
  if (state.pwned !== null) fail(`injected script ran: window.__pwned = ${state.pwned}`);
  if (state.element) fail('injected markup became an element');
  for (const t of expect) if (!state.text.includes(t)) fail(`the page does not show ${JSON.stringify(t)} as text`);
  console.log(JSON.stringify({ file, scripts: state.scripts, shown: expect.length }));
}).catch(e => fail(String(e)));
