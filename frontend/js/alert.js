// The dismissible message region (#alert, role="alert") shared by the game and the rating page.
import { h } from "./dom.js";

export function createAlert(box) {
  const hide = () => {
    box.hidden = true;
    box.replaceChildren();
  };
  const show = (message) => {
    box.hidden = false;
    box.replaceChildren(
      h("p", {class: "alert-message", text: message || "Something went wrong."}),
      h("button", {type: "button", class: "alert-close", "aria-label": "Dismiss message", text: "×", onclick: hide}));
  };
  return {show, hide};
}
