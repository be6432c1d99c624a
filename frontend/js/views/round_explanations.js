// A game's rounds' explanations as the page keeps them (used by game.js and history.js). The state
// carries only the latest round's explanations (docs/protocol.md): earlier rounds' are kept in the
// game's `ui` (`ui.explanations`: round index -> explanations), from the state that carried them or
// fetched with `history` when the player opens them (`ui.fetching`: the requests in flight).

// A round's explanations: the state's for the latest round, else the kept ones (undefined: not here yet).
export function explanationsOf(game, ui, index) {
  const round = game.rounds[index];
  if (!round) return null;
  if (index === game.rounds.length - 1) return round.explanations || null;
  return round.explained ? ui.explanations.get(index) : null;
}

// Asks the server for an earlier round's explanations (answered by `round`, see game.js onRound).
export function fetchRound(game, ui, index, ctx) {
  if (ui.explanations.has(index) || ui.fetching.has(index)) return;
  ui.fetching.add(index);
  ctx.request("history", {game_id: game.game_id, round: index});
}
