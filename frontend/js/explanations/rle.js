// Object masks travel as row-major run lengths that start with a run of false pixels:
// {"size": [height, width], "counts": [n_false, n_true, n_false, ...]} (explainers/attention.py), or, in a
// player's state, packed as text: {"size": [height, width], "rle": "..."} (server/player_safe.py pack_counts).

const DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const DIGIT_BITS = 5, MORE = 32;

// The run lengths of packed text: each digit holds 5 bits (least significant first, MORE on all but a
// number's last digit) of a zigzag-signed difference to the count two before.
export function unpackCounts(text) {
  const counts = [];
  let value = 0, scale = 1;
  for (const char of String(text)) {
    const digit = DIGITS.indexOf(char);
    if (digit < 0) return [];
    value += (digit & (MORE - 1)) * scale;
    scale *= 2 ** DIGIT_BITS;
    if (!(digit & MORE)) {
      const delta = value % 2 ? -(value + 1) / 2 : value / 2;
      counts.push(delta + (counts.length >= 2 ? counts[counts.length - 2] : 0));
      value = 0;
      scale = 1;
    }
  }
  return counts;
}

// Returns {mask: Uint8Array(height * width), height, width, bounds: [x0, y0, x1, y1] | null}.
export function decodeRle(rle) {
  const [height, width] = rle.size;
  const mask = new Uint8Array(height * width);
  let position = 0;
  let x0 = width, y0 = height, x1 = -1, y1 = -1;
  const counts = Array.isArray(rle.counts) ? rle.counts : unpackCounts(rle.rle || "");
  counts.forEach((count, i) => {
    const end = Math.min(position + count, mask.length);
    if (i % 2 === 1 && end > position) {
      mask.fill(1, position, end);
      const firstRow = Math.floor(position / width), lastRow = Math.floor((end - 1) / width);
      y0 = Math.min(y0, firstRow);
      y1 = Math.max(y1, lastRow);
      if (firstRow === lastRow) {
        x0 = Math.min(x0, position % width);
        x1 = Math.max(x1, (end - 1) % width);
      } else {
        x0 = 0;
        x1 = width - 1;
      }
    }
    position = end;
  });
  return {mask, height, width, bounds: x1 < 0 ? null : [x0, y0, x1, y1]};
}

// Calls paint(index) for every mask pixel within `thickness` pixels (along rows and columns) of the
// mask's edge, i.e. an inner outline. Only the mask's bounding box is visited.
export function forEachOutlinePixel(decoded, thickness, paint) {
  const {mask, height, width, bounds} = decoded;
  if (!bounds) return;
  const [x0, y0, x1, y1] = bounds;
  const inside = (x, y) => x >= 0 && y >= 0 && x < width && y < height && mask[y * width + x] === 1;
  for (let y = y0; y <= y1; y++) {
    for (let x = x0; x <= x1; x++) {
      if (!mask[y * width + x]) continue;
      let edge = false;
      for (let d = 1; d <= thickness && !edge; d++) {
        edge = !inside(x - d, y) || !inside(x + d, y) || !inside(x, y - d) || !inside(x, y + d);
      }
      if (edge) paint(y * width + x);
    }
  }
}
