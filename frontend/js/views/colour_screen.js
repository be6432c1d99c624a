// Stage "colour_screen": plates of coloured dots, each showing a number, drawn here on canvases from
// the server's data (state.check: `plates[].dots` = x, y, radius, colour index into `palette`, ..., in
// units of a `size` x `size` plate). The participant types the number each shows; the server knows the
// numbers and grades. Sends `colour_screen {answers: {plate key: text}}` ("" = no number seen).
import { h } from "../dom.js";

const PLATE_PX = 240;     // a plate's width on screen (CSS pixels)

export function onState(state, previous, ctx) {
  if (!previous || previous.stage !== state.stage) ctx.ui.checkAnswers = {};
}

export function render(state, ctx) {
  const check = state.check || {};
  const plates = check.plates || [];
  const answers = ctx.ui.checkAnswers || (ctx.ui.checkAnswers = {});
  const submit = (event) => {
    event.preventDefault();
    const sent = {};
    for (const plate of plates) sent[plate.key] = (answers[plate.key] || "").trim();
    ctx.emit("colour_screen", {answers: sent});
  };
  return h("section", {class: "page check colour-screen"},
    h("h1", {tabindex: "-1", text: "Colour vision"}),
    h("p", {text: "Most questions in the game are about colours. Each circle below shows a number made of coloured dots. Type the number you see in the box under each circle; if you see no number, leave its box empty."}),
    h("form", {id: "colour-screen", onsubmit: submit},
      h("ol", {class: "plates"}, plates.map((plate, i) => h("li", {class: "plate"},
        drawPlate(plate, check, i),
        h("label", {for: `plate-${i}`, text: `Number in circle ${i + 1}`}),
        h("input", {type: "text", id: `plate-${i}`, inputmode: "numeric", maxlength: "3", autocomplete: "off",
                    dataset: {key: plate.key}, value: answers[plate.key] || "",
                    oninput: (event) => { answers[plate.key] = event.target.value; }})))),
      h("button", {id: "colour-submit", type: "submit", class: "primary", disabled: Boolean(ctx.ui.busy),
                   text: "Continue"})));
}

function drawPlate(plate, check, i) {
  const ratio = window.devicePixelRatio || 1;
  const canvas = h("canvas", {class: "plate-canvas", width: String(Math.round(PLATE_PX * ratio)),
                              height: String(Math.round(PLATE_PX * ratio)), role: "img",
                              "aria-label": `Circle ${i + 1} of coloured dots`});
  const g = canvas.getContext("2d");
  const scale = canvas.width / (check.size || 1000);
  const palette = check.palette || [];
  const dots = plate.dots || [];
  for (let k = 0; k + 3 < dots.length; k += 4) {
    g.beginPath();
    g.fillStyle = palette[dots[k + 3]] || "#999";
    g.arc(dots[k] * scale, dots[k + 1] * scale, dots[k + 2] * scale, 0, 2 * Math.PI);
    g.fill();
  }
  return canvas;
}

export function focusTarget(root, state, previous) {
  return previous && previous.stage === state.stage ? null : root.querySelector("h1");
}
