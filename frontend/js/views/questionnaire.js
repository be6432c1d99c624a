// Stage "questionnaire": the items of state.questionnaire (the study's, game/consent_form.py); scale and choice
// items as radio groups, text items as a textarea, each required as the item says; then the study's demographics items (state.demographics: choices,
// each with "Prefer not to say", and optional text). Submits `questionnaire {answers: {key: value}}`.
import { choiceGroup } from "../choices.js";
import { h } from "../dom.js";

const MAX_TEXT = 2000;

export function render(state, ctx) {
  const answers = ctx.ui.answers || (ctx.ui.answers = {});   // kept across re-renders (e.g. after an error)
  const items = state.questionnaire || [];
  const about = state.demographics || [];
  const submit = (event) => {
    event.preventDefault();
    const form = event.currentTarget;
    if (!form.reportValidity()) return;
    ctx.emit("questionnaire", {answers: collect([...items, ...about], answers)});
  };
  return h("section", {class: "page questionnaire"},
    h("h1", {tabindex: "-1", text: "A few last questions"}),
    h("form", {id: "questionnaire", onsubmit: submit},
      items.map((item, i) => (item.type !== "text" ? choiceGroup(item, `q${i}`, answers) : textItem(item, `q${i}`, answers))),
      about.length ? h("section", {class: "demographics", "aria-labelledby": "about-you"},
        h("h2", {id: "about-you", text: "About you"}),
        h("p", {class: "hint", text: "These answers describe who took part. Choose “Prefer not to say” for anything you would rather not tell."}),
        about.map((item, i) => (item.type === "choice" ? choiceGroup(item, `d${i}`, answers) : textItem(item, `d${i}`, answers)))) : null,
      h("button", {id: "questionnaire-submit", type: "submit", class: "primary", disabled: Boolean(ctx.ui.busy),
                   text: ctx.ui.busy ? "Sending…" : "Submit"})));
}

function collect(items, answers) {
  const result = {};
  for (const item of items) result[item.key] = answers[item.key] !== undefined ? answers[item.key] : "";
  return result;
}

function textItem(item, id, answers) {
  return h("div", {class: "question-item text"},
    h("label", {for: id, text: item.text}),
    h("textarea", {id, name: item.key, rows: "3", maxlength: String(MAX_TEXT), dataset: {key: item.key},
                   required: Boolean(item.required),
                   oninput: (event) => { answers[item.key] = event.target.value; }}, answers[item.key] || ""));
}
