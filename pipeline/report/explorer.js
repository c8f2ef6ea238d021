// The explorer of report.html (embedded into the page by `ctxsim report`; see report.cpp).
// The page defines before this script: L, H (layers, heads), CAUSAL (a decoder's attention: no
// query attends to a later key), LUT (256 x [viridis rgb, diverging
// rgb]) and EX, one object per stored example:
//   {sample, n (tokens), m (cells a side after pooling), block (pooling), tokens[],
//    attMax, rolloutMax,                     colour scales of the byte-quantised matrices
//    simLo[L*H], simHi[L*H], simSeq[L*H]:    each head's similarity scale (simSeq 1: viridis over
//                                            lo..hi, its values share a sign; 0: diverging, lo = -hi)
//    attention[L*H], similarity[L*H]: base64 m*m bytes (0..255 over 0..attMax / simLo..simHi)
//    selected[L*H], highAttention[L*H]: base64 bit masks of m*m cells (pairs i < j)
//    rollout: base64 m*m bytes over 0..rolloutMax}
'use strict';
const $ = id => document.getElementById(id);
const MARGIN = 90;  // pixels left of and above the heatmap, for token labels

function fill(sel, n, prefix) {
  sel.innerHTML = '';
  for (let i = 0; i < n; i++) {
    const o = document.createElement('option');
    o.value = i;
    o.text = prefix + i;
    sel.appendChild(o);
  }
}

function bytes(b64) {
  const s = atob(b64);
  const a = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) a[i] = s.charCodeAt(i);
  return a;
}

function bit(b, k) { return (b[k >> 3] >> (k & 7)) & 1; }

const cache = new Map();
function data(ex, q, k) {
  const key = ex.sample + q + k;
  if (!cache.has(key)) cache.set(key, bytes(q === 'rollout' ? ex.rollout : ex[q][k]));
  return cache.get(key);
}

// Whether head k's similarity uses the diverging map (else viridis, like every other quantity).
function diverging(ex, q, k) { return q === 'similarity' && !ex.simSeq[k]; }

// Paints an m x m byte matrix at (x0, y0), `cell` pixels per entry, without smoothing.
function paint(ctx, v, m, div, x0, y0, cell) {
  const off = document.createElement('canvas');
  off.width = m;
  off.height = m;
  const o = off.getContext('2d');
  const img = o.createImageData(m, m);
  const c = div ? 3 : 0;  // the LUT's diverging colours, else viridis
  for (let i = 0; i < m * m; i++) {
    const k = v[i] * 6 + c;
    img.data[4 * i] = LUT[k];
    img.data[4 * i + 1] = LUT[k + 1];
    img.data[4 * i + 2] = LUT[k + 2];
    img.data[4 * i + 3] = 255;
  }
  o.putImageData(img, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(off, x0, y0, m * cell, m * cell);
}

// A causal model's attention has no entry above the diagonal (key after query): those cells are
// hatched grey, so that they do not read as low attention. A block on the diagonal stays (it
// pools both).
function maskCausal(ctx, q, m, x0, y0, cell) {
  if (!CAUSAL || q === 'similarity') return;
  for (let i = 0; i < m; i++) {
    ctx.fillStyle = '#d9d9d9';
    ctx.fillRect(x0 + (i + 1) * cell, y0 + i * cell, (m - i - 1) * cell, cell);
    if (cell < 4) continue;
    ctx.strokeStyle = '#bbb';
    ctx.lineWidth = 1;
    for (let j = i + 1; j < m; j++) {
      ctx.beginPath();
      ctx.moveTo(x0 + j * cell, y0 + (i + 1) * cell);
      ctx.lineTo(x0 + (j + 1) * cell, y0 + i * cell);
      ctx.stroke();
    }
  }
}

function value(ex, q, t, k) {
  if (q === 'similarity') return ex.simLo[k] + t * (ex.simHi[k] - ex.simLo[k]);
  return q === 'rollout' ? t * ex.rolloutMax : t * ex.attMax;
}

let cur = null;

function draw() {
  if (!EX.length) {
    $('note').textContent = 'This store has no examples (set statistics.examples in the config).';
    return;
  }
  const ex = EX[+$('ex').value], l = +$('layer').value, h = +$('head').value, q = $('qty').value, k = l * H + h, m = ex.m;
  const v = data(ex, q, k);
  const cell = Math.max(1, Math.floor(640 / m));
  const c = $('view'), ctx = c.getContext('2d');
  c.width = MARGIN + m * cell + 4;
  c.height = MARGIN + m * cell + 4;
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, c.width, c.height);
  paint(ctx, v, m, diverging(ex, q, k), MARGIN, MARGIN, cell);
  maskCausal(ctx, q, m, MARGIN, MARGIN, cell);
  if (q !== 'rollout') {
    const sel = $('ovSel').checked ? bytes(ex.selected[k]) : null;
    const ha = $('ovAtt').checked ? bytes(ex.highAttention[k]) : null;
    for (let i = 0; i < m; i++) {
      for (let j = i + 1; j < m; j++) {
        const b = i * m + j;
        if (sel && bit(sel, b)) {
          ctx.strokeStyle = diverging(ex, q, k) ? '#000' : '#fff';
          ctx.lineWidth = Math.max(1, cell / 6);
          ctx.strokeRect(MARGIN + j * cell, MARGIN + i * cell, cell, cell);
        }
        if (ha && bit(ha, b)) {
          ctx.fillStyle = '#ff5000';
          ctx.beginPath();
          ctx.arc(MARGIN + (j + 0.5) * cell, MARGIN + (i + 0.5) * cell, Math.max(1, cell * 0.28), 0, 7);
          ctx.fill();
        }
      }
    }
  }
  // Token labels, thinned to stay legible.
  const fs = Math.min(11, Math.max(7, cell - 1)), step = Math.max(1, Math.ceil((fs + 1) / cell));
  ctx.fillStyle = '#222';
  ctx.font = fs + 'px sans-serif';
  for (let i = 0; i < m; i += step) {
    const t = (ex.tokens[i * ex.block] || '').slice(0, 12);
    ctx.textAlign = 'right';
    ctx.fillText(t, MARGIN - 3, MARGIN + (i + 0.5) * cell + fs * 0.35);
    ctx.save();
    ctx.translate(MARGIN + (i + 0.5) * cell + fs * 0.35, MARGIN - 3);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = 'left';
    ctx.fillText(t, 0, 0);
    ctx.restore();
  }
  cur = { ex, v, m, q, cell, k };
  const scale = diverging(ex, q, k)
    ? 'blue -' + ex.simHi[k].toPrecision(3) + ', white 0, red +' + ex.simHi[k].toPrecision(3) + ' (99th percentile of |v|)'
    : q === 'similarity'
      ? 'dark ' + ex.simLo[k].toPrecision(3) + ' to yellow ' + ex.simHi[k].toPrecision(3) + ' (1st-99th percentile)'
      : 'dark 0 to yellow ' + (q === 'rollout' ? ex.rolloutMax : ex.attMax).toPrecision(3);
  $('note').textContent = (ex.block > 1 ? 'Block-pooled ' + ex.block + 'x' + ex.block + ' (mean) to fit the view and the size budget. ' : '') +
    'Sample ' + ex.sample + ', ' + ex.n + ' tokens; colour ' + scale + '; ' +
    (q === 'rollout' ? 'rollout over all layers (layer/head do not apply).' : 'layer ' + l + ', head ' + h + '.') +
    (CAUSAL && q !== 'similarity' ? ' Grey: keys after the query, which causal attention cannot see (not low attention).' : '');
  $('view').dataset.state = [ex.sample, q, l, h].join('/');
  bars(q === 'rollout' ? (CAUSAL ? m - 1 : 0) : null);  // a causal model's last token sees every other
  thumbs();
}

// Rollout relevance of every input token for one position (a row of the rollout).
function bars(row) {
  const ex = EX[+$('ex').value];
  const c = $('bars'), ctx = c.getContext('2d');
  const v = data(ex, 'rollout', 0), m = ex.m;
  if (row === null && cur && cur.barRow !== undefined) row = cur.barRow;
  if (row === null || row === undefined) row = CAUSAL ? m - 1 : 0;
  const w = Math.max(2, Math.floor(900 / m));
  c.width = m * w + 60;
  c.height = 160;
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, c.width, c.height);
  let mx = 1;
  for (let j = 0; j < m; j++) mx = Math.max(mx, v[row * m + j]);
  ctx.fillStyle = '#1f77b4';
  for (let j = 0; j < m; j++) {
    const hgt = v[row * m + j] / mx * 120;
    ctx.fillRect(50 + j * w, 130 - hgt, Math.max(1, w - 1), hgt);
  }
  ctx.fillStyle = '#222';
  ctx.font = '11px sans-serif';
  ctx.fillText('rollout relevance of each input token for position ' + row + ' (' + (ex.tokens[row * ex.block] || '') + ')', 50, 150);
  if (cur) cur.barRow = row;
}

// Model view: a thumbnail per (layer, head) of the current example and quantity.
function thumbs() {
  const ex = EX[+$('ex').value], q = $('qty').value === 'rollout' ? 'attention' : $('qty').value, g = $('grid');
  if (g.dataset.key === ex.sample + q) return;
  g.dataset.key = ex.sample + q;
  g.innerHTML = '';
  g.style.gridTemplateColumns = '32px repeat(' + H + ',60px)';
  g.appendChild(document.createElement('span'));
  for (let h = 0; h < H; h++) {
    const s = document.createElement('span');
    s.textContent = 'H' + h;
    g.appendChild(s);
  }
  for (let l = 0; l < L; l++) {
    const s = document.createElement('span');
    s.textContent = 'L' + l;
    g.appendChild(s);
    for (let h = 0; h < H; h++) {
      const c = document.createElement('canvas');
      c.width = ex.m;
      c.height = ex.m;
      c.title = 'layer ' + l + ' head ' + h;
      paint(c.getContext('2d'), data(ex, q, l * H + h), ex.m, diverging(ex, q, l * H + h), 0, 0, 1);
      maskCausal(c.getContext('2d'), q, ex.m, 0, 0, 1);
      c.addEventListener('click', () => {
        $('layer').value = l;
        $('head').value = h;
        if ($('qty').value === 'rollout') $('qty').value = 'attention';
        draw();
      });
      g.appendChild(c);
    }
  }
}

// The cell under the mouse, in pooled coordinates.
function cellAt(e) {
  const r = e.target.getBoundingClientRect(), sx = e.target.width / r.width;
  return [Math.floor(((e.clientY - r.top) * sx - MARGIN) / cur.cell), Math.floor(((e.clientX - r.left) * sx - MARGIN) / cur.cell)];
}

$('view').addEventListener('mousemove', e => {
  if (!cur) return;
  const [i, j] = cellAt(e);
  if (i < 0 || j < 0 || i >= cur.m || j >= cur.m) {
    $('hover').textContent = '';
    return;
  }
  const b = cur.ex.block;
  $('hover').textContent = (cur.ex.tokens[i * b] || '') + ' (' + i * b + ') -> ' + (cur.ex.tokens[j * b] || '') + ' (' + j * b + '): ' +
    value(cur.ex, cur.q, cur.v[i * cur.m + j] / 255, cur.k).toPrecision(3);
});

$('view').addEventListener('click', e => {
  if (!cur || cur.q !== 'rollout') return;
  const [i] = cellAt(e);
  if (i >= 0 && i < cur.m) bars(i);
});

fill($('ex'), EX.length, '#');
EX.forEach((x, i) => { $('ex').options[i].text = 'sample ' + x.sample + ' (' + x.n + ' tokens)'; });
fill($('layer'), L, 'layer ');
fill($('head'), H, 'head ');
['ex', 'layer', 'head', 'qty', 'ovSel', 'ovAtt'].forEach(id => $(id).addEventListener('change', () => {
  if (cur) cur.barRow = undefined;
  draw();
}));
draw();
