// The rounds of a game so far, newest first: question, answer, cost, rating, and for rounds with
// explanations a button that shows them on the grid again.
import { h, plural } from "../dom.js";

export function historyView(game, ui, shown, ctx) {
  const rounds = game.rounds.map((round, index) => ({round, index})).reverse();
  return h("section", {class: "history", "aria-labelledby": "history-title"},
    h("h2", {id: "history-title", text: "Your questions (newest first)"}),
    rounds.length ? null : h("p", {class: "muted", text: "No questions yet."}),
    h("ol", {id: "history", class: "round-list"}, rounds.map(({round, index}) => roundItem(round, index, ui, shown, ctx))));
}

function roundItem(round, index, ui, shown, ctx) {
  const isShown = shown && shown.index === index;
  const meta = [`cost ${plural(round.cost, "point")}`];
  if (round.explained) meta.push("with explanations");
  meta.push(round.rating ? `rated “${round.rating}”` : "not rated yet");
  return h("li", {class: `round${isShown ? " shown" : ""}`, dataset: {index: String(index)}},
    h("div", {class: "round-question"},
      h("span", {class: "round-no", text: `Q${index + 1}`}),
      h("span", {class: "question", text: round.question})),
    h("div", {class: "round-answer"},
      h("span", {class: "answer-label", text: "Answer: "}),
      h("strong", {class: "answer", text: round.answer})),
    h("div", {class: "round-meta", text: meta.join(" · ")}),
    round.explanations ? h("button", {
      type: "button", class: "link-button", dataset: {round: String(index)}, "aria-pressed": String(Boolean(isShown)),
      text: isShown ? "Its explanations are shown" : "Show its explanations",
      onclick: () => {
        ui.shownRound = index;
        ctx.rerender();
      },
    }) : null);
}
