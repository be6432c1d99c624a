// Stage "instructions": the rules for this participant's setting (state.instructions), a worked example
// drawn with HTML and CSS, and the Start button (`begin {}`).
import { h, plural } from "../dom.js";
import { describe } from "../explanations/index.js";   // each explainer's line, from the server's table

export function render(state, ctx) {
  const info = state.instructions || {};
  const s = info.setting || {};
  const modes = info.modes || [];
  const p = state.participant || {};
  const explained = Boolean(s.explanations_at_will) || modes.length > 0;
  return h("section", {class: "page instructions"},
    h("h1", {tabindex: "-1", text: "How the game works"}),
    h("ul", {class: "rules"},
      h("li", {text: `You see ${s.images || "several"} images. One of them is the secret image, picked at random.`}),
      h("li", {text: "Find it by asking an AI agent questions about the secret image in your own words, for example “Is there a red cube?” or “How many spheres are there?”. The agent answers about the secret image only, and it is not always right."}),
      pointsRule(s),
      explanationRule(s, modes, info.offer),
      h("li", {text: `After every answer, rate how helpful the answer${explained ? " (and its explanations, when you have them)" : ""} was for finding the secret image, from “${(state.ratings || [])[0] || "Helping a lot"}” to “${(state.ratings || [])[4] || "Completely confusing"}”. The rating is needed before your next question or your guess.`}),
      h("li", {text: "When you think you know, select the image and press “Guess this image”. You have one guess per game."}),
      h("li", {text: "If your guess is right, your score is the points you have left; if it is wrong, your score is 0. A game is won with a right guess and points left, so every question you save counts."}),
      p.games_total ? h("li", {text: `You will play ${plural(p.games_total, "game")}.`}) : null),
    modes.length ? h("section", {class: "modes"},
      h("h2", {text: "The explanations"}),
      h("ul", {}, modes.map((mode) => h("li", {text: describe(mode)})))) : null,
    example(s, explained),
    retryNote(info.comprehension),
    h("button", {id: "begin", type: "button", class: "primary", disabled: Boolean(ctx.ui.busy),
                 onclick: () => ctx.emit("begin", {}),
                 text: info.comprehension ? "Continue to a few questions about the rules" : "Start the first game"}));
}

// The study's numbers as they play out: what a question costs, how many questions the start points pay for
// (the game's limit only where it is the smaller; game/state.py questions_allowed), what explanations take
// from that, and what 0 points mean (no more questions, and a right guess then scores 0: game/rules.py).
function pointsRule(s) {
  const start = s.start_points, cost = s.question_cost ?? 1, limit = s.max_questions;
  if (!Number.isInteger(start)) return h("li", {id: "points-rule", text: `You start each game with some points. Each question costs ${plural(cost, "point")}.`});
  const paid = cost > 0 ? Math.floor(start / cost) : Infinity;
  const most = Number.isInteger(limit) ? Math.min(paid, limit) : paid;
  const fewer = s.explanations_at_will && s.explanation_cost > 0 ? ", fewer if you buy explanations" : "";
  const questions = cost > 0
    ? `Each question costs ${plural(cost, "point")}, so your points pay for at most ${plural(most, "question")} in a game${fewer}${most < paid ? ` (a game allows no more than ${plural(limit, "question")})` : ""}.`
    : `Questions are free; you can ask up to ${plural(most, "question")} in a game.`;
  return h("li", {id: "points-rule", text: `You start each game with ${plural(start, "point")}. ${questions}${cost > 0 ? " When your points run out you can ask no more questions, and a right guess with 0 points left scores 0." : ""}`});
}

// After a comprehension check with a wrong answer (the server does not say which): read again, answer again.
function retryNote(comprehension) {
  if (!comprehension || !comprehension.failures) return null;
  return h("p", {id: "comprehension-retry", class: "notice", role: "status",
                 text: "Some of your answers to the questions about the rules were not right. Please read the rules above again, then answer the questions once more."});
}

function explanationRule(s, modes, offer) {
  if (s.explanations_at_will) {
    const secret = (s.for_the_secret || []).length ? " and more about the secret image (without saying which image it is)" : "";
    // a study that randomizes the offer (its `offer`, game/offer.py) tells the participant so, before the games
    const randomized = offer === "randomized" ? " In some games explanations are not available; which games is decided at random." : "";
    return h("li", {id: randomized ? "offer-rule" : null, text: `After an answer you may buy explanations of it for ${plural(s.explanation_cost ?? 0, "more point")}: they show why the agent answered as it did, on every image${secret}.${randomized}`});
  }
  if (modes.length) {
    return h("li", {text: "In some games every answer comes with explanations, at no cost, on every image. Games with and without explanations come in blocks."});
  }
  return null;
}

// A tiny illustrated round: ask -> answer -> explanations -> rate -> guess.
function example(s, explained) {
  const start = s.start_points || 20, cost = s.question_cost || 1;
  const extra = s.explanations_at_will ? s.explanation_cost || 0 : 0;
  const shapes = [["cube", "red"], ["sphere", "blue"], ["cylinder", "yellow"], ["cube", "green"], ["sphere", "red"]];
  const mini = (shape, color, extraClass = "") => h("span", {class: `mini-tile ${extraClass}`},
    h("span", {class: `shape ${shape} ${color}`}));
  return h("section", {class: "example", "aria-labelledby": "example-title"},
    h("h2", {id: "example-title", text: "An example round"}),
    h("ol", {class: "steps"},
      step("Ask", h("span", {class: "mini-input", text: "Is there a red cube?"}),
        `You ask. ${start} points become ${start - cost}.`),
      step("Answer", h("span", {class: "bubble", text: "yes"}), "The agent answers about the secret image."),
      explained
        ? step("Explanations", h("span", {class: "mini-tile heat"}, h("span", {class: "shape cube red"}), h("span", {class: "mini-label", text: "62%"})),
          extra ? `You buy explanations (−${plural(extra, "point")}): the agent looked at the cube.` : "The explanations show where the agent looked.")
        : step("Think", h("span", {class: "mini-row"}, mini("cube", "red"), mini("sphere", "blue")), "Which images have a red cube?"),
      step("Rate", h("span", {class: "mini-row"}, ["1", "2", "3", "4", "5"].map((n) =>
        h("span", {class: n === "2" ? "pill on" : "pill", text: n}))), "You rate: “Mostly helping”."),
      step("Guess", h("span", {class: "mini-row"}, shapes.map(([shape, color], i) => mini(shape, color, i === 0 ? "picked" : ""))),
        "You pick the image with the red cube and guess.")));
}

function step(title, picture, caption) {
  return h("li", {class: "step"},
    h("span", {class: "step-title", text: title}),
    h("span", {class: "step-picture", "aria-hidden": "true"}, picture),
    h("span", {class: "step-caption", text: caption}));
}

export function focusTarget(root, state, previous) {
  return previous && previous.stage === "instructions" ? null : root.querySelector("h1");
}
