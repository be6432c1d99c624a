// kind "attention": the agent's spatial attention grid as a heatmap over the image, and the outline of
// every object proposal with its attention weight. Payload: {grid, objects: [{box, weight, mask: RLE}]};
// grid: rows of weights (the rating page), or packed in a player's state as {rows, cols, percent: base64,
// one byte a cell: its share of the largest cell in whole percent}. Canvases are drawn at the grid's and
// the image's natural size and scaled by CSS.
import { h, percent } from "../dom.js";
import { decodeRle, forEachOutlinePixel } from "./rle.js";

const HEAT_ALPHA = 0.62;            // opacity of the hottest grid cell
const MIN_LABELLED_WEIGHT = 0.005;  // objects below 0.5% are outlined but not labelled
const STRONG = 0.5;                 // share of the largest weight from which an object counts as strong
const WEAK_RGB = [210, 210, 210], STRONG_RGB = [0, 229, 255];
const CACHE_LIMIT = 300;
const cache = new Map();            // options.cacheKey -> overlay; states repeat, drawing need not

export function render(explanation, options = {}) {
  const payload = explanation.payload || {};
  const overlay = cachedOverlay(payload, options.cacheKey);
  if (options.mode === "overlay") return overlay;
  const [height, width] = imageSize(payload);
  return h("figure", {class: "attention-panel"},
    h("span", {class: "image-box backdrop", style: {aspectRatio: `${width} / ${height}`}}, overlay),
    h("figcaption", {text: "Heatmap: where the agent looked. Outlines: objects, with the share of attention each got."}));
}

function cachedOverlay(payload, key) {
  if (key && cache.has(key)) return cache.get(key);
  const overlay = drawOverlay(payload);
  if (key) {
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value);
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
  return h("span", {class: "attention-overlay overlay", role: "img", "aria-label": `Attention heatmap; ${summary}`},
    drawHeat(gridRows(payload.grid)),
    objects.length ? drawOutlines(objects, width, height) : null,
    labels(objects, width, height));
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

function drawHeat(grid) {
  const rows = grid.length, cols = rows ? grid[0].length : 0;
  const canvas = h("canvas", {class: "heat", width: Math.max(cols, 1), height: Math.max(rows, 1)});
  const values = grid.flat().map(Number).filter(Number.isFinite);
  const max = Math.max(0, ...values);
  if (!rows || !cols || max <= 0) return canvas;
  const context = canvas.getContext("2d");
  const image = context.createImageData(cols, rows);
  grid.forEach((row, r) => row.forEach((value, c) => {
    const t = Math.max(0, Number(value) || 0) / max;
    const i = 4 * (r * cols + c);
    image.data.set([255, Math.round(60 + 190 * t), Math.round(40 * (1 - t)), Math.round(255 * HEAT_ALPHA * t)], i);
  }));
  context.putImageData(image, 0, 0);
  return canvas;
}

function strength(weight, largest) {
  return largest > 0 ? Math.max(0, weight) / largest : 0;
}

function drawOutlines(objects, width, height) {
  const canvas = h("canvas", {class: "outlines", width, height});
  const context = canvas.getContext("2d");
  const image = context.createImageData(width, height);
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
  context.putImageData(image, 0, 0);
  return canvas;
}

function labels(objects, width, height) {
  const largest = Math.max(0, ...objects.map((o) => Number(o.weight)));
  return objects.filter((o) => Number(o.weight) >= MIN_LABELLED_WEIGHT && Array.isArray(o.box)).map((o) => {
    const [x1, y1] = o.box.map(Number);
    const strong = strength(Number(o.weight), largest) >= STRONG;
    return h("span", {
      class: strong ? "object-label strong" : "object-label",
      style: {left: `${clamp(x1 / width) * 100}%`, top: `${clamp(y1 / height) * 100}%`},
      text: percent(o.weight),
    });
  });
}

function clamp(value) {
  return Number.isFinite(value) ? Math.min(Math.max(value, 0), 0.92) : 0;
}
