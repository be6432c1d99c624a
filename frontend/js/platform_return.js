// A participation that ends without the completion code (screened out, declined): the platform's code for that
// ending and the link back to it, each when the study gives it (`id`: the prefix of the elements' ids).
import { h, safeUrl } from "./dom.js";

export function platformReturn(code, url, id) {
  const redirect = safeUrl(url);
  return [
    code ? h("div", {class: "completion"},
      h("p", {text: "Please give the study platform this code:"}),
      h("p", {class: "code-row"}, h("code", {id: `${id}-code`, text: String(code)}))) : null,
    redirect ? h("p", {}, h("a", {id: `${id}-redirect`, class: "button primary", href: redirect, rel: "noopener",
                                 text: "Return to the study platform"})) : null];
}
