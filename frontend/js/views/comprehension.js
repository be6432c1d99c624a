// Stage "comprehension": questions about the rules (state.check.questions), after the instructions and
// before the first game. The server grades them and never sends the right answers: a wrong answer brings
// the participant back to the instructions (the note there says so). Sends `comprehension {answers}`.
import { choiceGroup } from "../choices.js";
import { h } from "../dom.js";

export function onState(state, previous, ctx) {
  if (!previous || previous.stage !== state.stage) ctx.ui.checkAnswers = {};   // each attempt starts blank
}

export function render(state, ctx) {
  const questions = (state.check && state.check.questions) || [];
  const answers = ctx.ui.checkAnswers || (ctx.ui.checkAnswers = {});
  const submit = (event) => {
    event.preventDefault();
    if (!event.currentTarget.reportValidity()) return;
    ctx.emit("comprehension", {answers: {...answers}});
  };
  return h("section", {class: "page check comprehension"},
    h("h1", {tabindex: "-1", text: "A few questions about the rules"}),
    h("p", {text: "Please answer these questions before the first game. They check that the rules are clear."}),
    h("form", {id: "comprehension", onsubmit: submit},
      questions.map((question, i) => choiceGroup(question, `c${i}`, answers)),
      h("button", {id: "comprehension-submit", type: "submit", class: "primary", disabled: Boolean(ctx.ui.busy),
                   text: ctx.ui.busy ? "Checking…" : "Check my answers"})));
}

export function focusTarget(root, state, previous) {
  return previous && previous.stage === state.stage ? null : root.querySelector("h1");
}
