// The rating task for independent raters (/rate?rater=ID&sig=SIG, a link the researcher issues): one item at a
// time from GET /api/rate/next, the secret image with its question, answer and explanation, two ratings,
// POST /api/rate, next item. The server checks the link's signature and that this browser rates as no other rater.
import { createAlert } from "./alert.js";
import { h, plural, safeUrl } from "./dom.js";
import { labelFor, renderExplanation } from "./explanations/index.js";

const EXPLANATION_SCALE = ["Exactly on-point", "Mostly on-point", "Indifferent", "Somewhat off", "Completely wrong"];
const ANSWER_SCALE = ["correct", "somewhat correct", "completely wrong"];
const ID_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

const root = document.getElementById("rate");
const alert = createAlert(document.getElementById("alert"));
const link = new URLSearchParams(window.location.search);
const rater = link.get("rater");
const sig = link.get("sig");
let rated = 0;
let overlaysHidden = false;

function show(...children) {
  root.replaceChildren(h("h1", {tabindex: "-1", text: "Rate the agent's explanations"}), ...children);
}

function noLink() {
  show(h("p", {class: "refused", text: "This page needs your personal rating link. Please open the link the researcher gave you."}));
}

async function requestJson(url, options) {
  const response = await fetch(url, {headers: {Accept: "application/json", "Content-Type": "application/json"}, ...options});
  let data = {};
  try {
    data = await response.json();
  } catch {
    data = {};
  }
  if (!response.ok || data.error) throw new Error(data.error || `The server answered ${response.status}.`);
  return data;
}

async function next() {
  show(progress(), h("p", {class: "loading", text: "Loading the next item…"}));
  try {
    const data = await requestJson(`/api/rate/next?${new URLSearchParams({rater, sig})}`);
    if (Number.isInteger(data.rated)) rated = data.rated;   // the server counts this rater's items over all visits
    if (data.done) show(progress(), h("p", {class: "done-message", text: "There is nothing more to rate. Thank you!"}));
    else showItem(data);
  } catch (error) {
    alert.show(error.message);
    show(progress(), h("button", {type: "button", text: "Try again", onclick: next}));
  }
}

function progress() {
  return h("p", {id: "progress", class: "progress", text: `Rater ${rater}: rated ${plural(rated, "item")} so far.`});
}

function showItem(item) {
  const explanation = item.explanation || {};
  const attention = explanation.kind === "attention";
  const form = h("form", {class: "rate-form", onsubmit: (event) => submit(event, item)},
    scale("explanation_rating", "How good is the explanation?", EXPLANATION_SCALE),
    scale("answer_rating", "Is the answer correct for this image?", ANSWER_SCALE),
    h("button", {id: "rate-submit", type: "submit", class: "primary", text: "Submit and next"}));
  show(progress(),
    h("div", {class: "rate-item"},
      h("figure", {class: `rate-figure${overlaysHidden ? " overlays-hidden" : ""}`},
        h("span", {class: "image-box"}, h("img", {src: safeUrl(item.image_url), alt: "The image the question was asked about"}),
          attention ? renderExplanation(explanation, {mode: "overlay"}) : null),
        attention ? h("figcaption", {},
          h("label", {class: "toggle"}, h("input", {type: "checkbox", checked: !overlaysHidden, onchange: (event) => {
            overlaysHidden = !event.target.checked;
            event.target.closest("figure").classList.toggle("overlays-hidden", overlaysHidden);
          }}), ` Show the explanation (${labelFor(explanation).toLowerCase()})`)) : null),
      h("div", {class: "rate-text"},
        h("p", {class: "rate-question"}, "Question: ", h("q", {class: "question", text: item.question})),
        h("p", {class: "rate-answer"}, "Agent's answer: ", h("strong", {class: "answer", text: item.answer})),
        attention ? null : renderExplanation(explanation, {mode: "panel"}),
        form)));
  root.querySelector("h1").focus();
}

function scale(name, legend, options) {
  return h("fieldset", {class: "rating-scale"},
    h("legend", {text: legend}),
    options.map((option, i) => h("label", {class: "scale-option"},
      h("input", {type: "radio", name, value: option, required: i === 0}), " ", option)));
}

async function submit(event, item) {
  event.preventDefault();
  const form = event.currentTarget;
  if (!form.reportValidity()) return;
  const values = new FormData(form);
  const button = form.querySelector("#rate-submit");
  button.disabled = true;
  try {
    await requestJson("/api/rate", {method: "POST", body: JSON.stringify({
      rater, sig, item: item.item, explanation_rating: values.get("explanation_rating"), answer_rating: values.get("answer_rating"),
    })});
    rated += 1;
    alert.hide();
    next();
  } catch (error) {
    alert.show(error.message);
    button.disabled = false;
  }
}

if (rater && sig && ID_PATTERN.test(rater)) next();
else noLink();
