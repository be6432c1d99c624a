// Stage "screened_out": a check the study screens with (comprehension or colour vision; game/checks.py)
// ended this participation. Thanks, and the platform's "screened out" code and link when the study gives them.
import { h } from "../dom.js";
import { platformReturn } from "../platform_return.js";

export function render(state) {
  const out = state.screened_out || {};
  return h("section", {class: "page screened-out"},
    h("h1", {tabindex: "-1", text: "Thank you for your time"}),
    h("p", {text: "Unfortunately this study cannot continue with you: your answers to the questions before the games did not meet its requirements. This is no judgement of you."}),
    platformReturn(out.completion_code, out.redirect_url, "screened-out"));
}

export function focusTarget(root, state, previous) {
  return previous && previous.stage === state.stage ? null : root.querySelector("h1");
}
