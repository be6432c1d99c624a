// Stage "game": status, image grid, the controls of the current phase (asking, rating, finished),
// the explanations about the secret image, and the history of rounds.
import { h, plural } from "../dom.js";
import { renderExplanation } from "../explanations/index.js";
import { gridView } from "./grid.js";
import { historyView } from "./history.js";
import { explanationsOf } from "./round_explanations.js";

const PROTOCOL_MAX_QUESTION_CHARS = 300;   // the server refuses longer questions whatever the study's setting (docs/protocol.md)

// What the page remembers about the current game and the server does not need to know, among it the
// earlier rounds' explanations (round_explanations.js).
function gameUi(ctx, game) {
  if (!ctx.ui.game || ctx.ui.game.id !== game.game_id) {
    ctx.ui.game = {id: game.game_id, selected: null, draft: "", shownRound: null, explanations: new Map(), fetching: new Set()};
  }
  return ctx.ui.game;
}

// The round whose explanations are on screen: the one picked in the history, else the latest one.
function shownRound(game, ui) {
  const pick = (index) => {
    const explanations = explanationsOf(game, ui, index);
    return explanations ? {index, round: game.rounds[index], explanations} : null;
  };
  return (ui.shownRound !== null && pick(ui.shownRound)) || pick(game.rounds.length - 1);
}

export function onState(state, previous, ctx) {
  const game = state.game;
  if (!game) return;
  const ui = gameUi(ctx, game);
  const before = previous && previous.game && previous.game.game_id === game.game_id ? previous.game : null;
  if (before && game.rounds.length > before.rounds.length) {
    const last = before.rounds.length - 1;     // its explanations are final now: keep them
    if (last >= 0 && before.rounds[last].explanations) ui.explanations.set(last, before.rounds[last].explanations);
    ui.draft = "";
    ui.shownRound = null;
    ctx.announce(`The agent answered: ${game.rounds[game.rounds.length - 1].answer}`);
  }
}

// The answer to `history`: {game_id, round, explanations}.
export function onRound(data, state, ctx) {
  const ui = ctx.ui.game;
  if (!ui || !data || data.game_id !== ui.id || !Number.isInteger(data.round)) return;
  ui.fetching.delete(data.round);
  ui.explanations.set(data.round, data.explanations || null);
}

export function onError(error, state, ctx) {
  if (ctx.ui.game && error && error.event === "history") ctx.ui.game.fetching.clear();
}

export function render(state, ctx) {
  const game = state.game;
  if (!game) return h("section", {}, h("h1", {tabindex: "-1", text: "Preparing the next game…"}));
  const ui = gameUi(ctx, game);
  const shown = shownRound(game, ui);
  const rated = ratedExplanations(game);
  // The rating box comes after every explanation of the round it rates (style.css): on one column (phones,
  // narrow windows) the answer, the explanations about the secret, the board when it carries the round's
  // explanations, then the rating; on two columns the board on the left, and on the right the answer, the
  // explanations about the secret, then the rating.
  return h("div", {class: `game phase-${game.phase}${rated.onBoard ? " rated-on-board" : ""}`},
    statusBar(state, game),
    h("div", {class: "game-layout"},
      h("div", {class: "game-main"}, gridView(game, ui, shown, ctx)),
      h("aside", {class: "game-side", "aria-label": "Ask, rate and guess"},
        latestAnswer(game, rated, ctx), secretPanel(game, shown), controls(state, game, ui, ctx),
        historyView(game, ui, shown, ctx))));
}

// Where the explanations of the latest round (the one a rating is about) lie: on the board (every image's) and
// in the panel about the secret.
function ratedExplanations(game) {
  const last = game.rounds[game.rounds.length - 1];
  const explanations = (last && last.explanations) || {};
  return {onBoard: Object.values(explanations.for_every_image || {}).some((list) => (list || []).length > 0),
          aboutTheSecret: (explanations.for_the_secret || []).length > 0};
}

function statusBar(state, game) {
  const p = state.participant || {};
  const items = [
    h("span", {class: "stat"}, "Points left ", h("strong", {id: "points", text: String(game.points)})),
    h("span", {class: "stat", text: `A question costs ${plural(game.question_cost, "point")}`}),
    // what the points pay for within the game's limit: the server's count (`questions_allowed`)
    h("span", {class: "stat", id: "questions-left", text: `${plural(questionsAllowed(game), "question")} left`}),
  ];
  // an at-will study that randomizes the offer (`offered` false) says so from the game's start
  if (game.explanations_at_will && game.offered === false) items.push(h("span", {class: "stat", id: "not-offered", text: "No explanations in this game"}));
  else if (game.explanations_at_will) items.push(h("span", {class: "stat", text: `Explanations cost ${plural(game.explanation_cost, "point")} more`}));
  else if (game.with_explanations) items.push(h("span", {class: "stat highlight", text: "This game shows explanations"}));
  return h("header", {class: "status-bar"},
    h("h1", {tabindex: "-1", text: "Find the secret image"}),
    Number.isInteger(p.game_number) && p.games_total ? h("span", {class: "game-count", id: "game-count",
      text: `Game ${p.game_number + 1} of ${p.games_total}`}) : null,
    h("div", {class: "stats"}, items));
}

// A server from before `questions_allowed` sends only the game's limit (`questions_left`).
function questionsAllowed(game) {
  return Number.isInteger(game.questions_allowed) ? game.questions_allowed : game.questions_left;
}

function latestAnswer(game, rated, ctx) {
  const last = game.rounds[game.rounds.length - 1];
  if (ctx.ui.busy === "ask") {
    return h("div", {class: "latest thinking", "aria-busy": "true"},
      h("span", {class: "spinner", "aria-hidden": "true"}), "The agent is thinking…");
  }
  if (!last) return null;
  const where = rated.onBoard && rated.aboutTheSecret ? "on the images and about the secret image"
    : rated.onBoard ? "on the images" : "about the secret image";
  return h("div", {class: "latest"},
    h("div", {class: "latest-question"}, "You asked: ", h("q", {text: last.question})),
    h("div", {class: "latest-answer"}, "The agent says: ", h("strong", {id: "latest-answer", text: last.answer})),
    // the server's word when the agent could not read the question exactly (game/unread_question.py)
    last.notice ? h("p", {class: "question-notice", id: "question-notice", role: "note", text: last.notice}) : null,
    game.phase === "rating" && (rated.onBoard || rated.aboutTheSecret) ?
      h("p", {class: "hint", id: "rated-hint", text: `Look at its explanations ${where} before you rate.`}) : null);
}

function controls(state, game, ui, ctx) {
  if (game.phase === "finished") return outcome(state, game, ctx);
  return h("div", {class: "controls"},
    game.phase === "rating" ? ratingBox(state, game, ctx) : null,
    askForm(state, game, ui, ctx),
    guessBox(state, game, ui, ctx));
}

function askForm(state, game, ui, ctx) {
  const setting = (state.instructions && state.instructions.setting) || {};
  const limit = Math.min(setting.max_question_chars || PROTOCOL_MAX_QUESTION_CHARS, PROTOCOL_MAX_QUESTION_CHARS);
  const busy = Boolean(ctx.ui.busy);
  const broke = game.points < game.question_cost;
  const disabled = game.phase !== "asking" || game.questions_left <= 0 || broke || busy;
  const help = game.phase === "rating" ? "Rate the last answer before you ask again."
    : game.questions_left <= 0 ? "No questions left: make your guess."
    : broke ? "Not enough points for another question: make your guess." : "Press Enter to ask.";
  // No maxlength: a browser would cut a longer paste silently (mid-word, and the agent then reads the
  // fragment). The length is counted as the player types and a longer question is refused with a
  // message here, as the server refuses it (server/schemas.py).
  // counted as sent: without the spaces around it
  const tooLong = (length) => `Your question is longer than ${limit} characters (it has ${length}); please shorten it.`;
  const hint = h("p", {class: "hint", id: "question-help", text: help});
  const count = h("span", {class: "char-count", id: "question-count", "aria-hidden": "true"});
  const showCount = (text) => {
    const length = text.trim().length;
    count.textContent = `${length}/${limit}`;
    count.classList.toggle("over", length > limit);
    if (!disabled) hint.textContent = length > limit ? tooLong(length) : help;
    hint.classList.toggle("over", !disabled && length > limit);
  };
  const input = h("input", {
    id: "question", name: "question", type: "text", autocomplete: "off", value: ui.draft, disabled,
    placeholder: "Is there a red cube?", "aria-describedby": "question-help",
    oninput: (event) => {
      ui.draft = event.target.value;
      showCount(ui.draft);
    },
  });
  showCount(ui.draft);
  const submit = (event) => {
    event.preventDefault();
    const question = input.value.trim();
    if (!question) return ctx.alert("Type a question first.");
    if (question.length > limit) return ctx.alert(tooLong(question.length));
    ctx.emit("ask", {game_id: game.game_id, question});
  };
  return h("form", {class: "ask-form", onsubmit: submit},
    h("label", {for: "question", text: "Ask a question about the secret image"}),
    h("div", {class: "ask-row"}, input,
      // a short label (the header says what a question costs), so that the box shows its whole placeholder
      h("button", {id: "ask", type: "submit", class: "primary", disabled,
                   "aria-label": ctx.ui.busy === "ask" ? null : `Ask (costs ${plural(game.question_cost, "point")})`,
                   text: ctx.ui.busy === "ask" ? "Asking…" : `Ask (−${game.question_cost})`})),
    h("div", {class: "ask-meta"}, hint, count));
}

function ratingBox(state, game, ctx) {
  const last = game.rounds[game.rounds.length - 1];
  const busy = Boolean(ctx.ui.busy);
  const canBuy = game.explanations_at_will && last && !last.explained;
  // the server refuses to sell explanations in a game its study's randomized offer left them out of
  const unavailable = canBuy && game.offered === false;
  return h("div", {class: "rating-box"},
    unavailable ? h("div", {class: "buy"},
      h("p", {class: "hint", id: "explain-unavailable", text: "Explanations are not available in this game."})) :
    canBuy ? h("div", {class: "buy"},
      h("button", {id: "explain", type: "button", disabled: busy, onclick: () => ctx.emit("explain", {game_id: game.game_id}),
                   text: ctx.ui.busy === "explain" ? "Getting explanations…" : `Get explanations (costs ${plural(game.explanation_cost, "point")})`}),
      h("p", {class: "hint", text: "See why the agent answered, before you rate."})) : null,
    // the group, not a button, takes the focus after an answer (focusTarget): no rating is preselected, so a
    // stray Enter rates nothing; a rating takes a deliberate Tab to a button then Enter or Space, or a key 1-5
    h("fieldset", {class: "rating-group", id: "rating-group", tabindex: "-1"},
      h("legend", {text: `How helpful was this answer${last && last.explained ? " and its explanations" : ""} for finding the secret image?`}),
      h("div", {class: "rating-buttons"}, (state.ratings || []).map((rating, i) =>
        h("button", {type: "button", class: "rating", dataset: {rating}, disabled: busy,
                     onclick: () => ctx.emit("rate", {game_id: game.game_id, rating})},
          h("kbd", {"aria-hidden": "true", text: String(i + 1)}), " ", rating))),
      h("p", {class: "hint", text: "Keys 1–5 choose. A rating is needed before the next question or the guess."})));
}

function guessBox(state, game, ui, ctx) {
  const setting = (state.instructions && state.instructions.setting) || {};
  const needed = (setting.min_questions || 0) - game.rounds.length;
  const index = game.images.indexOf(ui.selected);
  const ready = game.phase === "asking" && index >= 0 && needed <= 0 && !ctx.ui.busy;
  const note = game.phase === "rating" ? "Rate the last answer before you guess."
    : needed > 0 ? `Ask ${needed === 1 ? "a question" : `${needed} more questions`} before you guess.`
    : index >= 0 ? `Selected: image ${index + 1}. You have one guess.` : "Select an image, then guess. You have one guess.";
  return h("div", {class: "guess-box"},
    h("p", {class: "hint", id: "guess-help", text: note}),
    h("button", {id: "guess", type: "button", class: "guess", disabled: !ready, "aria-describedby": "guess-help",
                 onclick: () => ctx.emit("guess", {game_id: game.game_id, image: ui.selected}),
                 text: ctx.ui.busy === "guess" ? "Guessing…" : "Guess this image"}));
}

function outcome(state, game, ctx) {
  const p = state.participant || {};
  const won = game.won === true;
  const right = game.guess === game.secret;
  const message = won ? `You found it! Score: ${plural(game.score, "point")}.`
    : right ? "Right image, but with no points left the score is 0."
    : "Not this one. The secret image is outlined in green, your guess in red. Score: 0.";
  const last = Number.isInteger(p.game_number) && p.games_total && p.game_number + 1 >= p.games_total;
  return h("div", {class: "controls"},
    h("div", {id: "outcome", class: `outcome ${won ? "won" : "lost"}`, dataset: {won: String(won)}, tabindex: "-1", role: "status"},
      h("strong", {text: won ? "You won" : "You lost"}), h("p", {text: message})),
    h("button", {id: "next-game", type: "button", class: "primary", disabled: Boolean(ctx.ui.busy),
                 onclick: () => ctx.emit("next_game", {game_id: game.game_id}),
                 text: last ? "Continue to the last questions" : "Next game"}));
}

function secretPanel(game, shown) {
  const list = (shown && shown.explanations.for_the_secret) || [];
  if (!list.length) return null;
  return h("section", {class: "secret-panel", "aria-labelledby": "secret-title"},
    h("h2", {id: "secret-title", text: "About the secret image (which one is not revealed)"}),
    h("p", {class: "hint"}, `For question ${shown.index + 1}: `, h("q", {text: shown.round.question}), " → ",
      h("strong", {text: shown.round.answer})),
    h("div", {class: "secret-explanations"}, list.map((e, k) =>
      renderExplanation(e, {mode: "panel", cacheKey: `${game.game_id}/${shown.index}/secret/${k}`}))));
}

// Focus follows the game: the rating group when a rating is due, the question box after rating or in a
// new game, the outcome at the reveal. Otherwise main.js restores the element that had focus.
export function focusTarget(root, state, previous, ctx) {
  const game = state.game;
  if (!game || ctx.ui.busy) return null;
  const before = previous && previous.stage === "game" && previous.game && previous.game.game_id === game.game_id ? previous.game : null;
  const last = game.rounds[game.rounds.length - 1];
  const lastBefore = before && before.rounds[before.rounds.length - 1];
  if (game.phase === "rating" && (!before || before.phase !== "rating" || (lastBefore && lastBefore.explained !== last.explained))) {
    showWhatIsRated(root, ctx);
    return root.querySelector("#rating-group");
  }
  if (game.phase === "asking" && (!before || before.phase !== "asking")) return root.querySelector("#question");
  if (game.phase === "finished" && (!before || before.phase !== "finished")) return root.querySelector("#outcome");
  return null;
}

// What a rating is about in view. On one column (style.css: the side's parts are laid out among the board's) the
// answer from its top, below the sticky header (style.css scroll-padding), with the explanations it rates after
// it and the rating box after them, never a rating above explanations off-screen; where the answer and the
// explanations about the secret do not fit on the screen together, those explanations from their top. On two
// columns the answer, the explanations about the secret and the rating box lie in that order beside the board:
// the answer comes into view. main.js then focuses the rating group without scrolling.
function showWhatIsRated(root, ctx) {
  const box = root.querySelector(".rating-box");
  const latest = root.querySelector(".latest");
  const side = root.querySelector(".game-side");
  if (!box || !latest || !side) return;
  ctx.ui.scrolled = true;
  if (getComputedStyle(side).display !== "contents") {
    latest.scrollIntoView({block: "nearest"});
    return;
  }
  const rect = (el) => el.getBoundingClientRect();
  const panel = root.querySelector(".secret-panel");
  const header = root.querySelector(".status-bar");
  const room = window.innerHeight - (header ? rect(header).height : 0);
  const panelFirst = panel && rect(panel).bottom <= rect(box).top + 1 && rect(panel).bottom - rect(latest).top > room;
  (panelFirst ? panel : latest).scrollIntoView({block: "start"});
}

export function onKey(event, state, ctx) {
  const game = state.game;
  if (!game || game.phase !== "rating" || ctx.ui.busy) return;
  if (event.altKey || event.ctrlKey || event.metaKey || (event.target.closest && event.target.closest("input, textarea, select, dialog"))) return;
  const rating = (state.ratings || [])[Number(event.key) - 1];
  if (!/^[1-9]$/.test(event.key) || !rating) return;
  event.preventDefault();
  ctx.emit("rate", {game_id: game.game_id, rating});
}
