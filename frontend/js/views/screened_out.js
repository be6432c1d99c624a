// Stage "screened_out": a check the study screens with (comprehension or colour vision; game/checks.py)
// ended this participation. Thanks, and the platform's "screened out" code and link when the study gives them.
import { h, safeUrl } from "../dom.js";

export function render(state) {
  const out = state.screened_out || {};
  const redirect = safeUrl(out.redirect_url);
  const code = out.completion_code ? String(out.completion_code) : "";
  return h("section", {class: "page screened-out"},
    h("h1", {tabindex: "-1", text: "Thank you for your time"}),
    h("p", {text: "Unfortunately this study cannot continue with you: your answers to the questions before the games did not meet its requirements. This is no judgement of you."}),
    code ? h("div", {class: "completion"},
      h("p", {text: "Please give the study platform this code:"}),
      h("p", {class: "code-row"}, h("code", {id: "screened-out-code", text: code}))) : null,
    redirect ? h("p", {}, h("a", {id: "screened-out-redirect", class: "button primary", href: redirect, rel: "noopener",
                                 text: "Return to the study platform"})) : null);
}

export function focusTarget(root, state, previous) {
  return previous && previous.stage === state.stage ? null : root.querySelector("h1");
}
