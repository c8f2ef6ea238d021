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
// The colour scale is the reader's choice (#scale): clipped at the map's 99th percentile (the
// default: one near-1 cell does not darken the rest), the whole map's range, or each row's own;
// a colour bar beside the map gives its values.
'use strict';
const $ = id => document.getElementById(id);
const MARGIN = 90;  // pixels left of and above the heatmap, for token labels
const SVGNS = $('cbar').namespaceURI;  // SVG's, from the page's own <svg> (the page names no URL)

// An SVG element with attributes (and text), appended to parent.
function svgEl(parent, name, attrs, text) {
  const e = document.createElementNS(SVGNS, name);
  for (const [a, v] of Object.entries(attrs)) e.setAttribute(a, v);
  if (text !== undefined) e.textContent = text;
  parent.appendChild(e);
  return e;
}

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

// The colour range of each row of a map under scale mode `mode`, in the bytes' units: {lo, hi}
// (arrays of m), a byte b drawn at (b - lo) / (hi - lo) of the colour map. Attention and rollout
// run from 0; a diverging similarity is symmetric around its 0 (byte 127.5); cells no value
// covers (the diagonal of a similarity, keys after the query of causal attention) do not count.
// clip: 99th percentile (1st to 99th for a one-signed similarity); map: smallest to largest;
// row: the same per row.
function ranges(ex, q, k, v, m, mode) {
  const div = diverging(ex, q, k), fromZero = q !== 'similarity';
  const skip = (i, j) => (q === 'similarity' ? i === j : CAUSAL && j > i);
  const rangeOf = (r0, r1) => {
    const hist = new Uint32Array(256);
    let count = 0;
    for (let i = r0; i < r1; i++)
      for (let j = 0; j < m; j++) {
        if (skip(i, j)) continue;
        const b = v[i * m + j];
        hist[div ? Math.floor(Math.abs(b - 127.5)) : b]++;
        count++;
      }
    // The smallest bin whose cumulative count reaches p of all.
    const at = p => {
      let cum = 0;
      for (let b = 0; b < 256; b++) if ((cum += hist[b]) >= Math.max(1, p * count)) return b;
      return 255;
    };
    const top = mode === 'clip' ? at(0.99) : at(1), bottom = mode === 'clip' ? at(0.01) : at(0);
    if (div) {
      const d = Math.max(1, top + 0.5);  // bins of |b - 127.5|: bin d holds d + 0.5
      return [127.5 - d, 127.5 + d];
    }
    const lo = fromZero ? 0 : bottom;
    return [lo, Math.max(top, lo + 1)];
  };
  const lo = new Float64Array(m), hi = new Float64Array(m);
  const whole = mode === 'row' ? null : rangeOf(0, m);
  for (let i = 0; i < m; i++) [lo[i], hi[i]] = whole || rangeOf(i, i + 1);
  return { lo, hi, mode };
}

// Paints an m x m byte matrix at (x0, y0), `cell` pixels per entry, without smoothing, each row
// over its colour range (ranges()).
function paint(ctx, v, m, div, x0, y0, cell, range) {
  const off = document.createElement('canvas');
  off.width = m;
  off.height = m;
  const o = off.getContext('2d');
  const img = o.createImageData(m, m);
  const c = div ? 3 : 0;  // the LUT's diverging colours, else viridis
  for (let i = 0; i < m * m; i++) {
    const r = Math.floor(i / m), lo = range.lo[r], t = (v[i] - lo) / (range.hi[r] - lo);
    const k = Math.round(Math.min(1, Math.max(0, t)) * 255) * 6 + c;
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

// What the axes of each quantity's map are, and what its colour shows.
const AXES = {
  attention: { y: 'query token i', x: 'key token j', bar: 'attention weight A_ij' },
  similarity: { y: 'token i', x: 'token j', bar: 'context similarity o_i · o_j' },
  rollout: { y: 'position i after the last layer', x: 'input token j', bar: 'rollout weight' },
};

// The colour bar beside the map: the colour map from bottom to top with its values (per row:
// relative to each row's own range), and what the colour shows.
function colourBar(ex, q, k, range, height) {
  const svg = $('cbar'), div = diverging(ex, q, k), c = div ? 3 : 0, steps = 64, w = 14, top = MARGIN;
  svg.innerHTML = '';
  svg.setAttribute('width', 110);
  svg.setAttribute('height', top + height + 4);
  for (let s = 0; s < steps; s++) {
    const i = Math.round((s + 0.5) / steps * 255) * 6 + c;
    svgEl(svg, 'rect', { x: 4, y: top + height * (1 - (s + 1) / steps), width: w, height: height / steps + 0.5,
      fill: 'rgb(' + LUT[i] + ',' + LUT[i + 1] + ',' + LUT[i + 2] + ')' });
  }
  svgEl(svg, 'rect', { x: 4, y: top, width: w, height, fill: 'none', stroke: '#333', 'stroke-width': 0.6 });
  let labels;
  if (range.mode === 'row')
    labels = div ? ['−row max |v|', '0', '+row max |v|'] : [q === 'similarity' ? 'row min' : '0', '', 'row max'];
  else {
    const at = b => value(ex, q, b / 255, k);
    const lo = at(range.lo[0]), hi = at(range.hi[0]);
    labels = [lo, (lo + hi) / 2, hi].map(x => (Math.abs(x) < 1e-12 ? '0' : x.toPrecision(3)));
  }
  labels.forEach((t, i) => {
    if (!t) return;
    const y = top + height * (1 - i / 2);
    svgEl(svg, 'line', { x1: 4 + w, y1: y, x2: 8 + w, y2: y, stroke: '#333' });
    svgEl(svg, 'text', { x: 10 + w, y: y + 4, 'font-size': 11, class: 'tick' }, t);
  });
  const mid = top + height / 2;
  svgEl(svg, 'text', { x: 100, y: mid, 'font-size': 11, 'text-anchor': 'middle', transform: 'rotate(90 100 ' + mid + ')', class: 'name' },
    AXES[q].bar);
}

// How the chosen scale reads in the note.
function scaleText(ex, q, k, range) {
  const clipped = range.mode === 'clip', div = diverging(ex, q, k);
  const how = range.mode === 'row' ? 'each row over its own range' : clipped
    ? (div || q !== 'similarity' ? 'up to the 99th percentile of the map (brighter cells clipped)' : '1st to 99th percentile of the map')
    : 'over the whole map';
  return (div ? 'diverging around 0 (white), ' : 'viridis, ') + how;
}

let cur = null;

function draw() {
  if (!EX.length) {
    $('note').textContent = 'This store has no examples (set statistics.examples in the config).';
    return;
  }
  const ex = EX[+$('ex').value], l = +$('layer').value, h = +$('head').value, q = $('qty').value, k = l * H + h, m = ex.m;
  const v = data(ex, q, k), range = ranges(ex, q, k, v, m, $('scale').value);
  const cell = Math.max(1, Math.floor(640 / m));
  const c = $('view'), ctx = c.getContext('2d');
  c.width = MARGIN + m * cell + 4;
  c.height = MARGIN + m * cell + 4;
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, c.width, c.height);
  paint(ctx, v, m, diverging(ex, q, k), MARGIN, MARGIN, cell, range);
  maskCausal(ctx, q, m, MARGIN, MARGIN, cell);
  colourBar(ex, q, k, range, m * cell);
  $('yname').textContent = AXES[q].y;
  $('xname').textContent = AXES[q].x;
  $('xname').style.paddingLeft = MARGIN + 'px';
  $('xname').style.width = m * cell + 'px';
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
  const scale = scaleText(ex, q, k, range);
  $('note').textContent = (ex.block > 1 ? 'Block-pooled ' + ex.block + 'x' + ex.block + ' (mean) to fit the view and the size budget. ' : '') +
    'Sample ' + ex.sample + ', ' + ex.n + ' tokens; colour ' + scale + '; ' +
    (q === 'rollout' ? 'rollout over all layers (layer/head do not apply).' : 'layer ' + l + ', head ' + h + '.') +
    (CAUSAL && q !== 'similarity' ? ' Grey: keys after the query, which causal attention cannot see (not low attention).' : '');
  $('view').dataset.state = [ex.sample, q, l, h, range.mode].join('/');
  bars(q === 'rollout' ? (CAUSAL ? m - 1 : 0) : null);  // a causal model's last token sees every other
  thumbs();
}

// Rollout relevance of every input token for one position (a row of the rollout), as bars
// with a value axis and the tokens below them (thinned to stay legible).
function bars(row) {
  const ex = EX[+$('ex').value];
  const svg = $('bars');
  const v = data(ex, 'rollout', 0), m = ex.m;
  if (row === null && cur && cur.barRow !== undefined) row = cur.barRow;
  if (row === null || row === undefined) row = CAUSAL ? m - 1 : 0;
  const w = Math.max(2, Math.floor(900 / m)), left = 70, top = 24, ph = 120, tokenH = 80;
  const label = j => (ex.tokens[j * ex.block] || '').slice(0, 12) + (ex.block > 1 ? '…' : '');
  svg.innerHTML = '';
  svg.setAttribute('width', left + m * w + 20);
  svg.setAttribute('height', top + ph + tokenH + 24);
  let mx = 1;
  for (let j = 0; j < m; j++) mx = Math.max(mx, v[row * m + j]);
  for (let j = 0; j < m; j++) {
    const hgt = v[row * m + j] / mx * ph;
    svgEl(svg, 'rect', { x: left + j * w, y: top + ph - hgt, width: Math.max(1, w - 1), height: hgt, fill: '#1f77b4' });
  }
  // The value axis: 0, half and the row's largest weight.
  svgEl(svg, 'line', { x1: left - 2, y1: top, x2: left - 2, y2: top + ph, stroke: '#333' });
  svgEl(svg, 'line', { x1: left - 2, y1: top + ph, x2: left + m * w, y2: top + ph, stroke: '#333' });
  [0, 0.5, 1].forEach(f => {
    const y = top + ph * (1 - f), x = value(ex, 'rollout', f * mx / 255, 0);
    svgEl(svg, 'line', { x1: left - 6, y1: y, x2: left - 2, y2: y, stroke: '#333' });
    svgEl(svg, 'text', { x: left - 8, y: y + 4, 'font-size': 10, 'text-anchor': 'end', class: 'tick' }, f ? x.toPrecision(2) : '0');
  });
  const mid = top + ph / 2;
  svgEl(svg, 'text', { x: 12, y: mid, 'font-size': 11, 'text-anchor': 'middle', transform: 'rotate(-90 12 ' + mid + ')' }, 'rollout weight');
  // Token labels under the bars, rotated, at least 11 pixels apart.
  const step = Math.max(1, Math.ceil(11 / w));
  for (let j = 0; j < m; j += step) {
    const x = left + (j + 0.5) * w + 3, y = top + ph + 4;
    const turn = 'rotate(-90 ' + x + ' ' + y + ')';
    svgEl(svg, 'text', { x, y, 'font-size': 9, 'text-anchor': 'end', transform: turn, class: 'token' }, label(j));
  }
  svgEl(svg, 'text', { x: left, y: 14, 'font-size': 11 },
    'rollout relevance of each input token j for position ' + row * ex.block + ' (' + (ex.tokens[row * ex.block] || '') + ')');
  svgEl(svg, 'text', { x: left + m * w / 2, y: top + ph + tokenH + 18, 'font-size': 11, 'text-anchor': 'middle' }, 'input token j');
  if (cur) cur.barRow = row;
}

// Model view: a thumbnail per (layer, head) of the current example and quantity.
function thumbs() {
  const ex = EX[+$('ex').value], q = $('qty').value === 'rollout' ? 'attention' : $('qty').value, g = $('grid'), mode = $('scale').value;
  if (g.dataset.key === ex.sample + q + mode) return;
  g.dataset.key = ex.sample + q + mode;
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
      const v = data(ex, q, l * H + h);
      paint(c.getContext('2d'), v, ex.m, diverging(ex, q, l * H + h), 0, 0, 1, ranges(ex, q, l * H + h, v, ex.m, mode));
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
['ex', 'layer', 'head', 'qty', 'scale', 'ovSel', 'ovAtt'].forEach(id => $(id).addEventListener('change', () => {
  if (cur) cur.barRow = undefined;
  draw();
}));
draw();
