// Stage "done" (sent only after the server stored everything): thanks, the completion code, and a link
// back to the recruiting platform when the study has one.
import { h, safeUrl } from "../dom.js";

export function render(state) {
  const done = state.done || {};
  const redirect = safeUrl(done.redirect_url);
  const code = done.completion_code ? String(done.completion_code) : "";
  return h("section", {class: "page done"},
    h("h1", {tabindex: "-1", text: "Thank you!"}),
    h("p", {text: "Your answers are saved. Thank you for taking part."}),
    code ? h("div", {class: "completion"},
      h("p", {text: "Your completion code:"}),
      h("p", {class: "code-row"},
        h("code", {id: "completion-code", text: code}),
        h("button", {type: "button", class: "copy", text: "Copy", onclick: (event) => copy(code, event.currentTarget)}))) : null,
    redirect ? h("p", {}, h("a", {id: "redirect", class: "button primary", href: redirect, rel: "noopener",
                                 text: "Finish and return to the study platform"})) : null);
}

function copy(text, button) {
  if (!navigator.clipboard) return;
  navigator.clipboard.writeText(text).then(() => { button.textContent = "Copied"; }, () => {});
}

export function focusTarget(root, state, previous) {
  return previous && previous.stage === "done" ? null : root.querySelector("h1");
}
