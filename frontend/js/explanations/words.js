// kind "words" (ObjScene): the object and scene words most relevant to the answer, most relevant first.
// Payload: {words: [{word, score, probability}]} (server/player_safe.py); the bar shows p(word | image), the agent's
// belief that the word is in the image; the score (lower = more relevant) is in the tooltip.
import { h, percent } from "../dom.js";

const COMPACT_WORDS = 5;

export function render(explanation, options = {}) {
  const words = (explanation.payload && explanation.payload.words) || [];
  const shown = options.mode === "compact" ? words.slice(0, COMPACT_WORDS) : words;
  if (!shown.length) return h("p", {class: "muted", text: "No words."});
  return h("ol", {class: "word-list"}, shown.map(wordRow));
}

function wordRow(item) {
  const probability = Math.min(Math.max(Number(item.probability) || 0, 0), 1);
  const score = Number(item.score);
  return h("li", {title: Number.isFinite(score) ? `relevance score ${score.toPrecision(3)} (lower = more relevant)` : null},
    h("span", {class: "word", text: item.word}),
    h("span", {class: "bar", "aria-hidden": "true"}, h("span", {class: "bar-fill", style: {width: percent(probability)}})),
    h("span", {class: "bar-value", text: `${percent(probability)} seen`}));
}
