// kind "text" (nle, introspect): one sentence. Payload: {text}.
import { h } from "../dom.js";

export function render(explanation) {
  const text = explanation.payload && explanation.payload.text;
  return h("p", {class: "explanation-text", text: text || "(no text)"});
}
