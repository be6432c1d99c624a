// kind "qa_pairs" (RelQA): questions related to the asked one and the agent's answers to them on the
// same image. Payload: {pairs: [{question, answer, probability}]} (server/player_safe.py).
import { h, percent } from "../dom.js";

export function render(explanation) {
  const pairs = (explanation.payload && explanation.payload.pairs) || [];
  if (!pairs.length) return h("p", {class: "muted", text: "No related questions."});
  return h("ul", {class: "qa-list"}, pairs.map((pair) =>
    h("li", {title: Number.isFinite(Number(pair.probability)) ? `agent's confidence ${percent(pair.probability)}` : null},
      h("span", {class: "qa-question", text: pair.question}),
      h("span", {class: "qa-arrow", "aria-hidden": "true", text: " → "}),
      h("span", {class: "visually-hidden", text: " answer: "}),
      h("strong", {class: "qa-answer", text: pair.answer}))));
}
