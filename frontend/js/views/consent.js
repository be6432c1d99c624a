// Stage "consent": the study's information sheet and consent form (state.consent, the study's data:
// game/consent_form.py): who runs the study and how to reach them, its ethics approval, how long it takes and
// what it pays, what happens and what is recorded, and one box per statement, all ticked before agreeing.
// Agreeing sends `consent {agree: true}`; declining sends `consent {agree: false}` and ends the participation.
import { h } from "../dom.js";

export function render(state, ctx) {
  const form = state.consent || {};
  const facts = [["Researcher", form.researcher], ["Contact", form.contact], ["Ethics approval", form.ethics],
                 ["Duration", form.duration_minutes ? `about ${form.duration_minutes} minutes` : ""],
                 ["Payment", form.payment]].filter(([, value]) => value);
  const agree = (event) => {
    event.preventDefault();
    if (event.currentTarget.reportValidity()) ctx.emit("consent", {agree: true});
  };
  return h("section", {class: "page consent"},
    h("h1", {tabindex: "-1", text: form.title || "Consent to take part"}),
    facts.length ? h("dl", {class: "study-facts"},
      facts.map(([name, value]) => [h("dt", {text: name}), h("dd", {text: String(value)})])) : null,
    (form.information || []).map((text) => h("p", {text})),
    form.data ? h("section", {class: "data-use", "aria-labelledby": "data-use"},
      h("h2", {id: "data-use", text: "Your data"}), h("p", {text: form.data})) : null,
    h("form", {id: "consent", onsubmit: agree},
      (form.statements || []).map((text, i) => h("p", {class: "statement"},
        h("label", {for: `consent-statement-${i}`},
          h("input", {type: "checkbox", id: `consent-statement-${i}`, name: `consent-${i}`, required: true}), " ", text))),
      h("p", {class: "consent-buttons"},
        h("button", {id: "consent-agree", type: "submit", class: "primary", disabled: Boolean(ctx.ui.busy),
                     text: form.agree || "I agree, continue"}),
        h("button", {id: "consent-decline", type: "button", disabled: Boolean(ctx.ui.busy),
                     onclick: () => ctx.emit("consent", {agree: false}), text: form.decline || "I do not want to take part"}))));
}

export function focusTarget(root) {
  return root.querySelector("h1");
}
