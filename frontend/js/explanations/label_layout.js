// Where the weight badges of an attention overlay go (attention.js draws them): beside the object each
// one labels, never on it, never on another badge, on another object's centre or on a control drawn
// over the image, and always wholly inside the image. Pure and deterministic: the same sizes give the
// same places. Objects are placed in the order given (strongest first), so the strongest get the places
// next to their objects; a badge with no free place next to its object goes to the nearest free place
// with a leader line to the object, and one with no free place at all is left out (its weight is still in
// the overlay's text alternative and in the enlarged image, where there is more room).
//
// Every rectangle is [x1, y1, x2, y2] in display pixels of the image, origin at its top left.

const GAP = 2;            // between a badge and the box of its object
const EDGE = 1;           // kept free along the image's edge
const BADGE_GAP = 1;      // between two badges
const CENTRE_CLEAR = 4;   // half the side of the square around each object's centre that no badge covers
const SCAN_STEP = 3;      // between the places tried away from the object

// objects: [{box, label: {width, height} | null}] in placing order; area: {width, height}; keepClear:
// rectangles no badge may cover. Returns, per object, null (no badge, or no room) or
// {rect, leader: null | [xFrom, yFrom, xTo, yTo]} (the leader runs from the badge to the object's box).
export function placeLabels(objects, area, keepClear = []) {
  const centres = objects.map(({box}) => {
    const [cx, cy] = centre(box);
    return [cx - CENTRE_CLEAR, cy - CENTRE_CLEAR, cx + CENTRE_CLEAR, cy + CENTRE_CLEAR];
  });
  const placed = [];
  return objects.map((object, i) => {
    if (!object.label) return null;
    const {width, height} = object.label;
    const free = (rect, clearOfOtherBoxes) =>
      inside(rect, area) && !overlaps(rect, object.box) &&
      !placed.some((other) => overlaps(rect, other, BADGE_GAP)) &&
      !keepClear.some((other) => overlaps(rect, other)) &&
      !centres.some((other) => overlaps(rect, other)) &&
      !(clearOfOtherBoxes && objects.some((other, j) => j !== i && overlaps(rect, other.box)));
    let rect = null;
    for (const clearOfOtherBoxes of [true, false]) {
      rect = besideBox(object.box, width, height).find((candidate) => free(candidate, clearOfOtherBoxes)) || null;
      if (rect) break;
    }
    let leader = null;
    if (!rect) {
      rect = nearestFree(object.box, width, height, area, (candidate) => free(candidate, false));
      if (rect) leader = leaderLine(rect, object.box);
    }
    if (!rect) return null;
    placed.push(rect);
    return {rect, leader};
  });
}

// The places touching the box, best first: the middle of the right side, of the left, above, below,
// then the ends of those sides and the corners.
function besideBox([x1, y1, x2, y2], width, height) {
  const [cx, cy] = centre([x1, y1, x2, y2]);
  const right = x2 + GAP, left = x1 - GAP - width, above = y1 - GAP - height, below = y2 + GAP;
  const places = [
    [right, cy - height / 2], [left, cy - height / 2], [cx - width / 2, above], [cx - width / 2, below],
    [right, y1], [right, y2 - height], [left, y1], [left, y2 - height],
    [x1, above], [x2 - width, above], [x1, below], [x2 - width, below],
    [right, above], [left, above], [right, below], [left, below],
  ];
  return places.map(([x, y]) => rectAt(x, y, width, height));
}

// The free place nearest the box (scanned row by row; the first of equally near ones wins).
function nearestFree(box, width, height, area, free) {
  let best = null, bestDistance = Infinity;
  for (let y = EDGE; y + height <= area.height - EDGE; y += SCAN_STEP) {
    for (let x = EDGE; x + width <= area.width - EDGE; x += SCAN_STEP) {
      const rect = rectAt(x, y, width, height);
      const distance = gap(rect, box);
      if (distance < bestDistance && free(rect)) {
        best = rect;
        bestDistance = distance;
      }
    }
  }
  return best;
}

// From the point of the badge nearest the box to the point of the box nearest the badge.
function leaderLine(rect, box) {
  const [cx, cy] = centre(rect);
  const to = [clamp(cx, box[0], box[2]), clamp(cy, box[1], box[3])];
  const from = [clamp(to[0], rect[0], rect[2]), clamp(to[1], rect[1], rect[3])];
  return [...from, ...to];
}

function rectAt(x, y, width, height) {
  const left = Math.round(x), top = Math.round(y);
  return [left, top, left + width, top + height];
}

function centre([x1, y1, x2, y2]) {
  return [(x1 + x2) / 2, (y1 + y2) / 2];
}

function inside([x1, y1, x2, y2], area) {
  return x1 >= EDGE && y1 >= EDGE && x2 <= area.width - EDGE && y2 <= area.height - EDGE;
}

export function overlaps(a, b, margin = 0) {
  return a[0] < b[2] + margin && b[0] < a[2] + margin && a[1] < b[3] + margin && b[1] < a[3] + margin;
}

// The distance between two rectangles (0 when they touch or overlap).
function gap(a, b) {
  const dx = Math.max(0, b[0] - a[2], a[0] - b[2]);
  const dy = Math.max(0, b[1] - a[3], a[1] - b[3]);
  return Math.hypot(dx, dy);
}

function clamp(value, low, high) {
  return Math.min(Math.max(value, low), high);
}
