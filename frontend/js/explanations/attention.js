// kind "attention": the agent's spatial attention grid as a heatmap over the image, and the outline of
// every object proposal with its attention weight. Payload: {grid, objects: [{box, weight, mask: RLE}]};
// grid: rows of weights (the rating page), or packed in a player's state as {rows, cols, percent: base64,
// one byte a cell: its share of the largest cell in whole percent}. The canvas is drawn at the image's
// natural size and scaled by CSS; the weight badges are laid out in display pixels (label_layout.js)
// whenever the overlay's size changes, so they sit beside their objects on a thumbnail and enlarged alike.
import { h, percent } from "../dom.js";
import { placeLabels } from "./label_layout.js";
import { decodeRle, forEachOutlinePixel } from "./rle.js";

// The heatmap's colour map over t = a cell's share of the largest cell: transparent where the agent
// hardly looked (the image stays readable), then yellow to red with rising opacity, so that the hot spot
// reads at thumbnail size. The heat lies on the objects the answer read (vqa_agent/evidence_map.py), so it
// stays at most half opaque: a player must still see an attended object's own colour. Stops: [t, r, g, b, alpha].
const HEAT_STOPS = [[0.2, 255, 235, 59, 0], [0.45, 255, 193, 7, 0.3], [0.7, 255, 111, 0, 0.4], [1, 213, 0, 0, 0.5]];
const CONTOUR_LEVEL = 0.5;          // the line drawn around the cells with at least half the largest cell's weight
const CONTOUR_PX = 2;               // its width on each side (image pixels): white inside, dark outside
const MIN_LABELLED_WEIGHT = 0.005;  // objects below 0.5% are outlined but not labelled
const STRONG = 0.5;                 // share of the largest weight from which an object counts as strong
const WEAK_RGB = [210, 210, 210], STRONG_RGB = [0, 229, 255];
const CACHE_LIMIT = 300;
const cache = new Map();            // options.cacheKey -> overlay; states repeat, drawing need not
const layouts = new WeakMap();      // overlay -> what its badges are laid out from
const resized = typeof ResizeObserver === "function" ?
  new ResizeObserver((entries) => layOutLabels(entries.map((entry) => entry.target))) : null;
const due = new Set();              // overlays to lay out again in the next frame (shown again, maybe elsewhere)

export function render(explanation, options = {}) {
  const payload = explanation.payload || {};
  const overlay = cachedOverlay(payload, options.cacheKey);
  layOutSoon(overlay);
  if (options.mode === "overlay") return overlay;
  const [height, width] = imageSize(payload);
  return h("figure", {class: "attention-panel"},
    h("span", {class: "image-box backdrop", style: {aspectRatio: `${width} / ${height}`}}, overlay),
    h("figcaption", {text: "Heatmap: where the agent looked (red: most). Outlines: objects, with the share of attention each got."}));
}

function cachedOverlay(payload, key) {
  if (key && cache.has(key)) return cache.get(key);
  const overlay = drawOverlay(payload);
  if (key) {
    if (cache.size >= CACHE_LIMIT) {
      const oldest = cache.keys().next().value;
      if (resized) resized.unobserve(cache.get(oldest));
      cache.delete(oldest);
    }
    cache.set(key, overlay);
  }
  return overlay;
}

function imageSize(payload) {
  const sized = (payload.objects || []).find((o) => o.mask && Array.isArray(o.mask.size));
  return sized ? sized.mask.size : [240, 320];
}

function drawOverlay(payload) {
  const objects = (payload.objects || []).filter((o) => o && o.mask && Number.isFinite(Number(o.weight)));
  const [height, width] = imageSize(payload);
  const weights = objects.map((o) => Number(o.weight)).sort((a, b) => b - a);
  const summary = weights.length ? `object weights ${weights.slice(0, 5).map((w) => percent(w)).join(", ")}` : "no objects";
  const boxed = objects.filter((o) => Array.isArray(o.box) && o.box.length === 4 && o.box.every((v) => Number.isFinite(Number(v))))
    .map((o) => ({box: o.box.map(Number), weight: Number(o.weight)}))
    .sort((a, b) => b.weight - a.weight);     // strongest first: they get the places next to their objects
  const largest = Math.max(0, ...boxed.map((o) => o.weight));
  for (const object of boxed) {
    if (object.weight < MIN_LABELLED_WEIGHT) continue;
    const strong = strength(object.weight, largest) >= STRONG;
    object.label = h("span", {class: strong ? "object-label strong" : "object-label", dataset: {box: object.box.join(" ")},
                              text: percent(object.weight)});
  }
  const overlay = h("span", {
    class: "attention-overlay overlay", role: "img", "aria-label": `Attention heatmap; ${summary}`,
    dataset: {imageSize: `${width} ${height}`, boxes: boxed.map((o) => o.box.join(" ")).join(";")},
  },
  drawAttention(gridRows(payload.grid), objects, width, height),
  h("span", {class: "leaders", "aria-hidden": "true"}),
  boxed.map((o) => o.label || null));
  layouts.set(overlay, {objects: boxed, width, height});
  if (resized) resized.observe(overlay);
  return overlay;
}

// A cached overlay shown again may sit in a tile with other controls (the outcome's banner): its badges
// are laid out again once it is on the page. (A change of size alone is the ResizeObserver's.)
function layOutSoon(overlay) {
  if (!due.size) requestAnimationFrame(() => {
    layOutLabels([...due]);
    due.clear();
  });
  due.add(overlay);
}

// Places the overlays' badges for their sizes now (label_layout.js), clear of the controls that each tile
// marks `data-keep-clear` (the image's number, the zoom button, the outcome's banner): all measured first,
// then all moved, so that the page is laid out once, not once per overlay.
function layOutLabels(overlays) {
  const plans = overlays.map(planLabels);
  overlays.forEach((overlay, k) => { if (plans[k]) placeLabelsOf(overlay, plans[k]); });
}

function planLabels(overlay) {
  const layout = layouts.get(overlay);
  const area = overlay.getBoundingClientRect();
  if (!layout || !overlay.isConnected || area.width < 1 || area.height < 1) return null;
  const sx = area.width / layout.width, sy = area.height / layout.height;
  const scope = overlay.closest("[data-overlay-scope]");
  const keepClear = scope ? [...scope.querySelectorAll("[data-keep-clear]")].map((el) => {
    const r = el.getBoundingClientRect();
    return [r.left - area.left, r.top - area.top, r.right - area.left, r.bottom - area.top];
  }) : [];
  const objects = layout.objects.map((o) => {
    const size = o.label ? o.label.getBoundingClientRect() : null;
    return {box: [o.box[0] * sx, o.box[1] * sy, o.box[2] * sx, o.box[3] * sy],
            label: size ? {width: Math.ceil(size.width), height: Math.ceil(size.height)} : null};
  });
  return {places: placeLabels(objects, {width: area.width, height: area.height}, keepClear),
          size: `${Math.round(area.width)}x${Math.round(area.height)}`};
}

function placeLabelsOf(overlay, {places, size}) {
  const layout = layouts.get(overlay);
  const leaders = overlay.querySelector(".leaders");
  leaders.replaceChildren();
  layout.objects.forEach((o, k) => {
    if (!o.label) return;
    const place = places[k];
    o.label.dataset.placed = String(Boolean(place));
    if (!place) return;
    o.label.style.left = `${place.rect[0]}px`;
    o.label.style.top = `${place.rect[1]}px`;
    if (place.leader) leaders.append(leaderLine(place.leader));
  });
  overlay.dataset.laidOut = size;
}

function leaderLine([x1, y1, x2, y2]) {
  const length = Math.hypot(x2 - x1, y2 - y1);
  return h("span", {class: "leader", style: {left: `${x1}px`, top: `${y1}px`, width: `${length}px`,
                                              transform: `rotate(${Math.atan2(y2 - y1, x2 - x1)}rad)`}});
}

// The grid as rows of numbers, from either form.
export function gridRows(grid) {
  if (Array.isArray(grid)) return grid;
  if (!grid || typeof grid.percent !== "string") return [];
  let bytes;
  try {
    bytes = atob(grid.percent);
  } catch {
    return [];
  }
  const rows = Number(grid.rows) || 0, cols = Number(grid.cols) || 0;
  if (bytes.length !== rows * cols) return [];
  return Array.from({length: rows}, (_, r) => Array.from({length: cols}, (_, c) => bytes.charCodeAt(r * cols + c) / 100));
}

// One canvas at the image's size (one, not one per layer: a round's 20 overlays are kept, see CACHE_LIMIT):
// the grid interpolated bilinearly between cell centres and coloured by HEAT_STOPS, the CONTOUR_LEVEL line,
// and over them every object's outline.
function drawAttention(grid, objects, width, height) {
  const canvas = h("canvas", {class: "attention-canvas", width, height});
  const context = canvas.getContext("2d");
  const image = context.createImageData(width, height);
  paintHeat(image, grid, width, height);
  paintOutlines(image, objects, width, height);
  context.putImageData(image, 0, 0);
  return canvas;
}

function paintHeat(image, grid, width, height) {
  const rows = grid.length, cols = rows ? grid[0].length : 0;
  const values = grid.flat().map(Number).filter(Number.isFinite);
  const max = Math.max(0, ...values);
  // an even grid says the evidence lies nowhere in particular (vqa_agent/evidence_map.py): no heat
  if (!rows || !cols || max <= 0 || Math.min(...values) === max) return;
  const cell = (r, c) => Math.max(0, Number(grid[r][c]) || 0) / max;
  const t = new Float32Array(width * height);
  for (let y = 0; y < height; y++) {
    const gy = Math.min(Math.max((y + 0.5) * rows / height - 0.5, 0), rows - 1);
    const r0 = Math.floor(gy), r1 = Math.min(r0 + 1, rows - 1), fy = gy - r0;
    for (let x = 0; x < width; x++) {
      const gx = Math.min(Math.max((x + 0.5) * cols / width - 0.5, 0), cols - 1);
      const c0 = Math.floor(gx), c1 = Math.min(c0 + 1, cols - 1), fx = gx - c0;
      const top = cell(r0, c0) * (1 - fx) + cell(r0, c1) * fx, bottom = cell(r1, c0) * (1 - fx) + cell(r1, c1) * fx;
      t[y * width + x] = top * (1 - fy) + bottom * fy;
    }
  }
  for (let i = 0; i < t.length; i++) image.data.set(heatColour(t[i]), 4 * i);
  const hot = (i) => t[i] >= CONTOUR_LEVEL;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x, inside = hot(i);
      let edge = false;
      for (let d = 1; d <= CONTOUR_PX && !edge; d++) {
        edge = (x - d >= 0 && hot(i - d) !== inside) || (x + d < width && hot(i + d) !== inside) ||
          (y - d >= 0 && hot(i - d * width) !== inside) || (y + d < height && hot(i + d * width) !== inside);
      }
      if (edge) image.data.set(inside ? [255, 255, 255, 235] : [25, 25, 25, 150], 4 * i);
    }
  }
}

function heatColour(t) {
  if (t <= HEAT_STOPS[0][0]) return [0, 0, 0, 0];
  for (let k = 1; k < HEAT_STOPS.length; k++) {
    const [t1, ...high] = HEAT_STOPS[k];
    if (t <= t1 || k === HEAT_STOPS.length - 1) {
      const [t0, ...low] = HEAT_STOPS[k - 1];
      const f = Math.min(Math.max((t - t0) / (t1 - t0), 0), 1);
      const [r, g, b, a] = low.map((v, i) => v + (high[i] - v) * f);
      return [Math.round(r), Math.round(g), Math.round(b), Math.round(255 * a)];
    }
  }
  return [0, 0, 0, 0];
}

function strength(weight, largest) {
  return largest > 0 ? Math.max(0, weight) / largest : 0;
}

function paintOutlines(image, objects, width, height) {
  const largest = Math.max(0, ...objects.map((o) => Number(o.weight)));
  const weakestFirst = [...objects].sort((a, b) => a.weight - b.weight);
  for (const object of weakestFirst) {
    const decoded = decodeRle(object.mask);
    if (decoded.width !== width || decoded.height !== height) continue;
    const t = strength(Number(object.weight), largest);
    const rgb = WEAK_RGB.map((weak, k) => Math.round(weak + (STRONG_RGB[k] - weak) * t));
    const rgba = [...rgb, Math.round(255 * (0.35 + 0.65 * t))];
    forEachOutlinePixel(decoded, t >= STRONG ? 3 : 2, (index) => image.data.set(rgba, 4 * index));
  }
}
