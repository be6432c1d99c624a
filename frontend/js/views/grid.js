// The image grid of a game: one focusable button.tile per image token. Attention explanations are drawn
// over the image, other kinds for every image go in a compact block under the tile. Each tile has a zoom
// button beside the tile's own button (zoom.js): enlarging an image never selects it.
import { h, safeUrl } from "../dom.js";
import { renderExplanation } from "../explanations/index.js";
import { closeZoomOf, openZoom } from "./zoom.js";

const MANY_IMAGES = 6;   // from this many images on, tiles are smaller and wrap five to a row

// Image elements are kept between renders so that a new state does not reload or flicker the images.
let images = {gameId: null, byUrl: new Map()};

function imageFor(gameId, url, alt) {
  if (images.gameId !== gameId) images = {gameId, byUrl: new Map()};
  const src = safeUrl(url);
  if (!images.byUrl.has(src)) {
    images.byUrl.set(src, h("img", {src, alt, draggable: "false", decoding: "async"}));
  }
  return images.byUrl.get(src);
}

export function gridView(game, ui, shown, ctx) {
  closeZoomOf(game.game_id);    // an enlarged image of a game that is over (another tab went on) closes
  const perImage = (shown && shown.explanations.for_every_image) || {};
  const hasOverlay = Object.values(perImage).some((list) => (list || []).some((e) => e.kind === "attention"));
  const count = game.images.length;
  const grid = h("div", {
    class: `image-grid ${count >= MANY_IMAGES ? "many" : "few"}${ctx.ui.overlaysHidden ? " overlays-hidden" : ""}`,
    style: {"--columns": Math.min(count, 5)},
    role: "group", "aria-label": "Images: select the one you think is the secret",
  }, game.images.map((token, index) => tile(game, token, index, perImage[token] || [], ui, shown, ctx)));
  return h("section", {class: "grid-section", "aria-label": "Images"}, toolbar(game, ui, shown, hasOverlay, ctx), grid);
}

function toolbar(game, ui, shown, hasOverlay, ctx) {
  const latest = game.rounds.length - 1;
  const older = shown && shown.index !== latest;
  if (!hasOverlay && !older) return null;
  return h("div", {class: "grid-toolbar"},
    older ? h("p", {class: "showing-round"},
      `Showing the explanations of question ${shown.index + 1}: `, h("q", {text: shown.round.question}), " ",
      h("button", {type: "button", class: "link-button", id: "show-latest", text: "Back to the latest",
                   onclick: () => { ui.shownRound = null; ctx.rerender(); }})) : null,
    hasOverlay ? h("label", {class: "toggle"},
      h("input", {type: "checkbox", id: "toggle-overlays", checked: !ctx.ui.overlaysHidden,
                  onchange: (event) => { ctx.ui.overlaysHidden = !event.target.checked; ctx.rerender(); }}),
      " Show attention overlays") : null);
}

function tile(game, token, index, explanations, ui, shown, ctx) {
  const finished = game.phase === "finished";
  const isSecret = finished && token === game.secret;
  const isGuess = finished && token === game.guess;
  const selected = !finished && ui.selected === token;
  const badge = isSecret && isGuess ? "Your guess: right!" : isSecret ? "The secret image" : isGuess ? "Your guess" : null;
  const classes = ["tile", selected && "selected", isSecret && "secret", isGuess && !isSecret && "wrong"].filter(Boolean);
  const overlays = explanations.filter((e) => e.kind === "attention").map((e, k) =>
    renderExplanation(e, {mode: "overlay", cacheKey: `${game.game_id}/${shown.index}/${token}/${k}`}));
  const others = explanations.filter((e) => e.kind !== "attention");
  const label = `Image ${index + 1}`;
  const button = h("button", {
    type: "button", class: classes.join(" "), dataset: {token},
    "aria-pressed": finished ? null : String(selected), "aria-disabled": finished ? "true" : null,
    "aria-label": `${label}${badge ? `, ${badge.toLowerCase()}` : ""}${selected ? ", selected" : ""}`,
    onclick: () => {
      if (finished) return;
      ui.selected = token;
      ctx.rerender();
    },
  },
  h("span", {class: "image-box"}, imageFor(game.game_id, game.image_urls[token], label), overlays),
  h("span", {class: "tile-number", "aria-hidden": "true", "data-keep-clear": true, text: String(index + 1)}),
  badge ? h("span", {class: "tile-badge", "aria-hidden": "true", "data-keep-clear": true, text: badge}) : null);
  const zoom = h("button", {
    type: "button", class: "zoom-button", id: `zoom-${index + 1}`, "data-keep-clear": true,
    "aria-label": `Enlarge image ${index + 1}${explanations.length ? " with its explanations" : ""}`,
    title: "Enlarge", text: "⤢",
    onclick: () => openZoom({
      gameId: game.game_id, opener: `zoom-${index + 1}`, title: badge ? `${label}: ${badge}` : label,
      src: safeUrl(game.image_urls[token]), alt: label, round: shown && explanations.length ? shown : null,
      overlays: explanations.filter((e) => e.kind === "attention").map((e, k) =>
        renderExplanation(e, {mode: "overlay", cacheKey: `${game.game_id}/${shown.index}/${token}/${k}/zoom`})),
      panels: others.map((e) => renderExplanation(e, {mode: "panel"})),
    }),
  });
  return h("div", {class: "tile-wrap"}, h("div", {class: "tile-frame", "data-overlay-scope": true}, button, zoom),
    others.length ? h("div", {class: "tile-explanations"}, others.map((e) => renderExplanation(e, {mode: "compact"}))) : null);
}
