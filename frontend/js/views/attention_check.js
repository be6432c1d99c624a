// Stage "attention_check" (between games): one question whose answer the question itself states
// (state.check); the server grades it. Sends `attention_check {answer}`, then the next game starts.
import { choiceGroup } from "../choices.js";
import { h } from "../dom.js";

export function onState(state, previous, ctx) {
  if (!previous || previous.stage !== state.stage) ctx.ui.checkAnswers = {};
}

export function render(state, ctx) {
  const item = state.check || {};
  const answers = ctx.ui.checkAnswers || (ctx.ui.checkAnswers = {});
  const submit = (event) => {
    event.preventDefault();
    if (!event.currentTarget.reportValidity()) return;
    ctx.emit("attention_check", {answer: answers[item.key]});
  };
  return h("section", {class: "page check attention-check"},
    h("h1", {tabindex: "-1", text: "A quick question before the next game"}),
    h("form", {id: "attention-check", onsubmit: submit},
      choiceGroup(item, "a", answers),
      h("button", {id: "attention-submit", type: "submit", class: "primary", disabled: Boolean(ctx.ui.busy),
                   text: "Continue to the next game"})));
}

export function focusTarget(root, state, previous) {
  return previous && previous.stage === state.stage ? null : root.querySelector("h1");
}
