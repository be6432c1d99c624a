// One renderer per explanation kind (docs/protocol.md). renderExplanation wraps a renderer's output in
// the common container: class "explanation", data-kind, data-explainer, and a label naming the explainer.
// The labels come from the server's explainer table (explainers/registry.py, GET /api/explainers): the
// built-ins and the explainers this page's study shows, third-party ones included. A sham comes with the
// label and description of the explainer it imitates, so nothing here tells the two apart.
import { h } from "../dom.js";
import * as attention from "./attention.js";
import * as qaPairs from "./qa_pairs.js";
import * as text from "./text.js";
import * as words from "./words.js";

export const RENDERERS = {attention, words, qa_pairs: qaPairs, text};

// Fetched once, before any view renders (modules that import this one wait for it). Without it (an old
// server, a failed request) explanations still draw by kind and are labelled by their names.
const EXPLAINERS = await loadTable();

async function loadTable() {
  const study = new URLSearchParams(window.location.search).get("study");
  try {
    const response = await fetch(`/api/explainers${study ? `?${new URLSearchParams({study})}` : ""}`,
                                 {headers: {Accept: "application/json"}});
    return response.ok ? await response.json() : {};
  } catch {
    return {};
  }
}

export function labelFor(explanation) {
  const row = EXPLAINERS[explanation.explainer];
  return (row && row.label) || explanation.explainer || explanation.kind || "Explanation";
}

// The instructions' line about an explainer a participant will see.
export function describe(name) {
  const row = EXPLAINERS[name];
  return (row && row.description) || name;
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
