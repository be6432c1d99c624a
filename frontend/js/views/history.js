// The rounds of a game so far, newest first: question, answer, whether the agent could read the question
// exactly (the round's `notice`), cost, rating, and for rounds with
// explanations a button that shows them on the grid again (an earlier round's are fetched from the
// server the first time, see round_explanations.js fetchRound).
import { h, plural } from "../dom.js";
import { explanationsOf, fetchRound } from "./round_explanations.js";

export function historyView(game, ui, shown, ctx) {
  const rounds = game.rounds.map((round, index) => ({round, index})).reverse();
  return h("section", {class: "history", "aria-labelledby": "history-title"},
    h("h2", {id: "history-title", text: "Your questions (newest first)"}),
    rounds.length ? null : h("p", {class: "muted", text: "No questions yet."}),
    h("ol", {id: "history", class: "round-list"}, rounds.map(({round, index}) => roundItem(game, round, index, ui, shown, ctx))));
}

function roundItem(game, round, index, ui, shown, ctx) {
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
    // the server's notice of a question the agent could not read exactly: in full under the latest answer (game.js)
    round.notice ? h("div", {class: "round-notice", title: round.notice, text: "Not read exactly: the answer is a guess"}) : null,
    h("div", {class: "round-meta", text: meta.join(" · ")}),
    explanationsButton(game, round, index, ui, isShown, ctx));
}

function explanationsButton(game, round, index, ui, isShown, ctx) {
  const explanations = explanationsOf(game, ui, index);
  if (!explanations && (index === game.rounds.length - 1 || !round.explained || ui.explanations.has(index))) return null;
  const loading = !explanations && ui.fetching.has(index);
  return h("button", {
    type: "button", class: "link-button", dataset: {round: String(index)}, "aria-pressed": String(Boolean(isShown)),
    "aria-busy": loading ? "true" : null,
    text: isShown ? "Its explanations are shown" : loading ? "Loading its explanations…" : "Show its explanations",
    onclick: () => {
      ui.shownRound = index;
      if (!explanations) fetchRound(game, ui, index, ctx);
      ctx.rerender();
    },
  });
}
