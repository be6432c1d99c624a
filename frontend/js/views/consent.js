// Stage "consent": what the study is and what is recorded; agreeing sends `consent {agree: true}`.
import { h } from "../dom.js";

const PARAGRAPHS = [
  "This is a research study about how explanations help people work with an AI system that answers questions about images.",
  "You will play a short guessing game several times: a computer picks one image out of a set in secret, and you find it by asking an AI agent questions about that image. The agent is not always right. After every answer you say how helpful it was.",
  "We record what you do in the game: your questions, the agent's answers, which explanations you saw, your ratings, your guesses, the times of these actions, and your answers to a few questions at the end. We record no name or contact details; the platform's anonymous id links your answers.",
  "Taking part is voluntary. You may stop at any time by closing this page. The data are used for research only and are published only in anonymous, aggregated form.",
];

export function render(state, ctx) {
  return h("section", {class: "page consent"},
    h("h1", {tabindex: "-1", text: "Welcome: consent to take part"}),
    PARAGRAPHS.map((text) => h("p", {text})),
    h("p", {text: "If you agree to take part, press the button below."}),
    h("button", {id: "consent-agree", type: "button", class: "primary", disabled: Boolean(ctx.ui.busy),
                 onclick: () => ctx.emit("consent", {agree: true}), text: "I agree, continue"}));
}

export function focusTarget(root) {
  return root.querySelector("#consent-agree");
}
