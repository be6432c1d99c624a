// Stage "declined": the participant declined the consent form; nothing of theirs is kept but the decision. The
// study's message, and the platform's "no consent" code and link when the study gives them (state.consent).
import { h, safeUrl } from "../dom.js";

export function render(state) {
  const form = state.consent || {};
  const redirect = safeUrl(form.declined_url);
  const code = form.declined_code ? String(form.declined_code) : "";
  return h("section", {class: "page declined"},
    h("h1", {tabindex: "-1", text: "You have not taken part"}),
    h("p", {text: form.declined_message || "Thank you for your time. You may close this page."}),
    code ? h("div", {class: "completion"},
      h("p", {text: "Please give the study platform this code:"}),
      h("p", {class: "code-row"}, h("code", {id: "declined-code", text: code}))) : null,
    redirect ? h("p", {}, h("a", {id: "declined-redirect", class: "button primary", href: redirect, rel: "noopener",
                                 text: "Return to the study platform"})) : null);
}

export function focusTarget(root, state, previous) {
  return previous && previous.stage === state.stage ? null : root.querySelector("h1");
}
