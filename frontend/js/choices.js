// A question answered by choosing one option: a fieldset of radio buttons (questionnaire scales,
// demographics, the comprehension and attention checks). The choice is kept in `answers[item.key]`, so a
// re-render (busy, an error) keeps it; the first radio is `required` (unless the item says `required: false`), so
// the form asks for an answer.
import { h } from "./dom.js";

export function choiceGroup(item, idPrefix, answers) {
  return h("fieldset", {class: "question-item scale", dataset: {key: item.key}},
    h("legend", {text: item.text}),
    h("div", {class: "scale-options"}, (item.options || []).map((option, k) => {
      const id = `${idPrefix}-${k}`;
      return h("label", {for: id, class: "scale-option"},
        h("input", {type: "radio", id, name: item.key, value: option, required: k === 0 && item.required !== false, checked: answers[item.key] === option,
                    onchange: () => { answers[item.key] = option; }}),
        " ", option);
    })));
}
