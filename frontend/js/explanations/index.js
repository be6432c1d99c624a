// One renderer per explanation kind (docs/protocol.md). renderExplanation wraps a renderer's output in
// the common container: class "explanation", data-kind, data-explainer, and a label naming the explainer.
import { h } from "../dom.js";
import * as attention from "./attention.js";
import * as qaPairs from "./qa_pairs.js";
import * as text from "./text.js";
import * as words from "./words.js";

export const RENDERERS = {attention, words, qa_pairs: qaPairs, text};

export const LABELS = {
  attention: "Where the agent looked",
  objscene: "Relevant words",
  relqa: "Related questions",
  nle: "Generated explanation",
  introspect: "What the agent looked at",
};

// Sham explainers (explainers/sham.py, sanity checks) -> the real explainer they imitate: the participant
// must not be able to tell them apart, so they get its label and its description in the instructions.
export const SHAMS = {"attention-shuffled": "attention", "nle-other": "nle"};

export function shownAs(explainer) {
  return SHAMS[explainer] || explainer;
}

export function labelFor(explanation) {
  return LABELS[shownAs(explanation.explainer)] || explanation.explainer || explanation.kind || "Explanation";
}

// options.mode: "overlay" (attention drawn over an image: no label, positioned by CSS), "compact"
// (under an image tile) or "panel" (full size); options.cacheKey lets attention reuse its drawing.
export function renderExplanation(explanation, options = {}) {
  const renderer = explanation && RENDERERS[explanation.kind];
  const body = renderer
    ? renderer.render(explanation, options)
    : h("p", {class: "muted", text: `(an explanation of kind "${explanation && explanation.kind}" cannot be shown)`});
  if (options.mode === "overlay") {
    body.classList.add("explanation");
    body.dataset.kind = explanation.kind;
    body.dataset.explainer = explanation.explainer || "";
    return body;
  }
  const heading = options.mode === "compact" ? "span" : "h3";
  return h("section", {class: `explanation ${options.mode || "panel"}`,
                       dataset: {kind: explanation.kind || "", explainer: explanation.explainer || ""}},
    h(heading, {class: "explanation-label", text: labelFor(explanation)}), body);
}
