// Stage "declined": the participant declined the consent form; nothing of theirs is kept but the decision. The
// study's message, and the platform's "no consent" code and link when the study gives them (state.consent).
import { h } from "../dom.js";
import { platformReturn } from "../platform_return.js";

export function render(state) {
  const form = state.consent || {};
  return h("section", {class: "page declined"},
    h("h1", {tabindex: "-1", text: "You have not taken part"}),
    h("p", {text: form.declined_message || "Thank you for your time. You may close this page."}),
    platformReturn(form.declined_code, form.declined_url, "declined"));
}

export function focusTarget(root, state, previous) {
  return previous && previous.stage === state.stage ? null : root.querySelector("h1");
}
