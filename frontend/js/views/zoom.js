// One image of the grid enlarged, with its explanations, in a modal <dialog> (#zoom) outside #stage: the
// page's re-renders leave it alone, the browser keeps focus inside it and closes it with Escape. It only
// shows: selecting an image and guessing stay on the board (the tile's own button and #guess), so
// enlarging an image never selects or guesses it.
import { h } from "../dom.js";

let open = null;    // {gameId, opener}: the game of the enlarged image, and the id of the button that opened it

function dialog() {
  let box = document.getElementById("zoom");
  if (box) return box;
  box = h("dialog", {id: "zoom", class: "zoom", "aria-labelledby": "zoom-title"});
  // a click on the backdrop (the dialog itself, outside its content) closes it, as Escape does
  box.addEventListener("click", (event) => { if (event.target === box) box.close(); });
  box.addEventListener("close", () => {
    const opener = open && document.getElementById(open.opener);
    open = null;
    box.replaceChildren();
    if (opener) opener.focus();
  });
  document.body.append(box);
  return box;
}

// title: "Image 3"; src, alt: the image; overlays: attention overlays to draw over it; panels: the
// image's other explanations; round: {index, round} of the explanations shown, or null.
export function openZoom({gameId, opener, title, src, alt, overlays, panels, round}) {
  const box = dialog();
  open = {gameId, opener};
  box.replaceChildren(h("div", {class: "zoom-content"},
    h("div", {class: "zoom-head"},
      h("h2", {id: "zoom-title", text: title}),
      h("button", {type: "button", id: "zoom-close", class: "zoom-close", text: "Close", onclick: () => box.close()})),
    round ? h("p", {class: "hint"}, `Explanations of question ${round.index + 1}: `, h("q", {text: round.round.question}),
      " → ", h("strong", {text: round.round.answer})) : null,
    h("div", {class: "zoom-figure", "data-overlay-scope": true},
      h("span", {class: "image-box"}, h("img", {src, alt, draggable: "false"}), overlays)),
    panels.length ? h("div", {class: "zoom-explanations"}, panels) : null,
    h("p", {class: "hint", text: "To guess this image, close this view, select it on the board and press “Guess this image”."})));
  if (!box.open) box.showModal();
  box.querySelector("#zoom-close").focus();
}

// Closes the enlarged image when the board shows another game (or none).
export function closeZoomOf(gameId) {
  if (open && open.gameId !== gameId) {
    const box = document.getElementById("zoom");
    if (box && box.open) box.close();
  }
}
