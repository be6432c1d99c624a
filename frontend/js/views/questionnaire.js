// Stage "questionnaire": the items of state.questionnaire; scale items as radio groups (required),
// text items as an optional textarea. Submits `questionnaire {answers: {key: value}}`.
import { h } from "../dom.js";

const MAX_TEXT = 2000;

export function render(state, ctx) {
  const answers = ctx.ui.answers || (ctx.ui.answers = {});   // kept across re-renders (e.g. after an error)
  const items = state.questionnaire || [];
  const submit = (event) => {
    event.preventDefault();
    const form = event.currentTarget;
    if (!form.reportValidity()) return;
    ctx.emit("questionnaire", {answers: collect(items, answers)});
  };
  return h("section", {class: "page questionnaire"},
    h("h1", {tabindex: "-1", text: "A few last questions"}),
    h("form", {id: "questionnaire", onsubmit: submit},
      items.map((item, i) => (item.type === "scale" ? scaleItem(item, i, answers) : textItem(item, i, answers))),
      h("button", {id: "questionnaire-submit", type: "submit", class: "primary", disabled: Boolean(ctx.ui.busy),
                   text: ctx.ui.busy ? "Sending…" : "Submit"})));
}

function collect(items, answers) {
  const result = {};
  for (const item of items) result[item.key] = answers[item.key] !== undefined ? answers[item.key] : "";
  return result;
}

function scaleItem(item, i, answers) {
  return h("fieldset", {class: "question-item scale", dataset: {key: item.key}},
    h("legend", {text: item.text}),
    h("div", {class: "scale-options"}, (item.options || []).map((option, k) => {
      const id = `q${i}-${k}`;
      return h("label", {for: id, class: "scale-option"},
        h("input", {type: "radio", id, name: item.key, value: option, required: k === 0, checked: answers[item.key] === option,
                    onchange: () => { answers[item.key] = option; }}),
        " ", option);
    })));
}

function textItem(item, i, answers) {
  const id = `q${i}`;
  return h("div", {class: "question-item text"},
    h("label", {for: id, text: item.text}),
    h("textarea", {id, name: item.key, rows: "3", maxlength: String(MAX_TEXT), dataset: {key: item.key},
                   oninput: (event) => { answers[item.key] = event.target.value; }}, answers[item.key] || ""));
}
