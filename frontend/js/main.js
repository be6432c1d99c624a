// The game page. The server owns the state (docs/protocol.md): after every message it sends `state`,
// and render() rebuilds #stage from it with one view per stage. The page keeps only what the server
// does not need: the selected image, the question being typed, which round's explanations are shown.
import { createAlert } from "./alert.js";
import { h } from "./dom.js";
import * as attention_check from "./views/attention_check.js";
import * as colour_screen from "./views/colour_screen.js";
import * as comprehension from "./views/comprehension.js";
import * as consent from "./views/consent.js";
import * as declined from "./views/declined.js";
import * as done from "./views/done.js";
import * as game from "./views/game.js";
import * as instructions from "./views/instructions.js";
import * as questionnaire from "./views/questionnaire.js";
import * as screened_out from "./views/screened_out.js";
import { closeZoomOf } from "./views/zoom.js";

const VIEWS = {consent, instructions, comprehension, colour_screen, game, attention_check, questionnaire, done, screened_out,
               declined};
const JOIN_PARAMS = ["study", "pid", "PROLIFIC_PID", "STUDY_ID", "SESSION_ID", "workerId", "assignmentId", "hitId", "arm"];
const PARTICIPANT_PARAMS = ["pid", "PROLIFIC_PID", "workerId"];
const ID_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
const ANSWER_TIMEOUT_MS = 30000;   // a request the server never answers stops blocking the page after this

const stage = document.getElementById("stage");
const {show: showAlert, hide: hideAlert} = createAlert(document.getElementById("alert"));
const banner = document.getElementById("connection");
const announcer = document.getElementById("announce");

let current = null;     // the last state from the server
let busyTimer = null;
let focusBeforeBusy = null;   // controls are disabled while busy; focus returns here if nothing else takes it

const ctx = {
  ui: {busy: null},     // busy: the event sent and not yet answered
  emit(event, payload) {
    if (!socket.connected) {
      showAlert("Not connected to the server. Please wait until the connection is back.");
      return;
    }
    hideAlert();
    focusBeforeBusy = focusKey(document.activeElement);
    ctx.ui.busy = event;
    waitForAnswer();
    socket.emit(event, payload);
    render();
  },
  // a read that changes nothing (`history`): no busy state, the answer comes as its own event
  request(event, payload) {
    if (!socket.connected) {
      showAlert("Not connected to the server. Please wait until the connection is back.");
      return;
    }
    socket.emit(event, payload);
  },
  rerender: () => render(),
  announce(text) {
    announcer.textContent = text;
  },
  alert: (message) => showAlert(message),
};

// A request the server never answers stops blocking the page after ANSWER_TIMEOUT_MS (restarted by a notice).
function waitForAnswer() {
  clearTimeout(busyTimer);
  busyTimer = setTimeout(() => {
    ctx.ui.busy = null;
    showAlert("The server did not answer. Please try again.");
    render();
  }, ANSWER_TIMEOUT_MS);
}

function joinPayload() {
  const params = new URLSearchParams(window.location.search);
  const payload = {};
  for (const name of JOIN_PARAMS) if (params.has(name)) payload[name] = params.get(name);
  return payload;
}

// Demo players without an id get one from the server; keeping it in the URL makes a refresh resume.
function rememberPid(state) {
  const params = new URLSearchParams(window.location.search);
  if (PARTICIPANT_PARAMS.some((name) => params.has(name))) return;
  const pid = String((state.participant && state.participant.pid) || "").replace(/^pid:/, "");
  if (!ID_PATTERN.test(pid)) return;
  params.set("pid", pid);
  history.replaceState(null, "", `${window.location.pathname}?${params}${window.location.hash}`);
}

// Which element had focus, described so that it can be found again in the rebuilt DOM.
function focusKey(el) {
  if (!el || el === document.body || !stage.contains(el)) return null;
  if (el.id) return {id: el.id};
  for (const attr of ["token", "rating", "round", "key"]) if (el.dataset[attr] !== undefined) return {attr, value: el.dataset[attr]};
  return null;
}

function findFocus(key) {
  if (!key) return null;
  if (key.id) return document.getElementById(key.id);
  return [...stage.querySelectorAll(`[data-${key.attr}]`)].find((el) => el.dataset[key.attr] === key.value) || null;
}

let previous = null;    // the state rendered last time, so that views can tell what changed

function render() {
  if (!current) return;
  const view = VIEWS[current.stage];
  const key = focusKey(document.activeElement) || (ctx.ui.busy ? null : focusBeforeBusy);
  stage.dataset.stage = current.stage;
  if (current.stage !== "game") closeZoomOf(null);   // an image enlarged in a game that is over
  stage.replaceChildren(view ? view.render(current, ctx) : h("p", {text: `Unknown stage "${current.stage}".`}));
  const moveTo = view && view.focusTarget ? view.focusTarget(stage, current, previous, ctx) : null;
  const scrolled = Boolean(ctx.ui.scrolled);   // the view brought what matters into view itself
  ctx.ui.scrolled = false;
  const target = moveTo || (previous && previous.stage !== current.stage ? stage.querySelector("h1") : findFocus(key));
  if (target && !target.disabled) {
    target.focus({preventScroll: !moveTo || scrolled});
    if (target.tagName === "INPUT" && target.type === "text") target.setSelectionRange(target.value.length, target.value.length);
  }
  if (!ctx.ui.busy) focusBeforeBusy = null;
  previous = current;
}

// timeout: a connection attempt that hangs (a WebSocket held by a proxy) fails after 10 s, not Socket.IO's 20 s,
// so a blocked browser is told why sooner; slower networks still connect on the next attempt
const socket = io({transports: ["websocket", "polling"], tryAllTransports: true, timeout: 10000});

socket.on("connect", () => {
  everConnected = true;
  banner.hidden = true;
  banner.classList.remove("blocked");
  banner.textContent = "Connection lost, reconnecting…";
  socket.emit("join", joinPayload());
});
socket.on("disconnect", (reason) => {
  // "io server disconnect": the server closed this tab on purpose (a researcher's release; its reason came
  // as an error and is in the alert) and Socket.IO does not reconnect, so "reconnecting" would be untrue
  if (reason !== "io client disconnect" && reason !== "io server disconnect") banner.hidden = false;
});
socket.on("connect_error", (error) => {
  banner.hidden = false;
  socket.io.opts.transports = ["polling", "websocket"];   // a blocked WebSocket: fall back to the classic upgrade
  // error.data: the server answered and refused the connection (its message says why); else no transport got through
  if (!everConnected && !(error && error.data)) explainBlockedConnection();
});

// A page that never connected over either transport while the server answers plain HTTP: the WebSocket is
// blocked on the way (a proxy, an antivirus web shield, a company network), and a server with several web
// processes takes no long-polling (docs/deploy.md). Saying "reconnecting" forever would not help anyone.
let everConnected = false;
const BLOCKED_MESSAGE = "Your browser or network blocks the live connection this game needs (a WebSocket). " +
  "Try another browser, switch off a VPN, proxy or antivirus web protection for this page, or use another network. " +
  "This page keeps trying.";
function explainBlockedConnection() {
  fetch("/healthz", {cache: "no-store"}).then((response) => {
    // 503: the server answers but no worker is ready yet; any other 5xx: a proxy whose server is down
    if (everConnected || (response.status >= 500 && response.status !== 503)) return;
    banner.textContent = BLOCKED_MESSAGE;
    banner.classList.add("blocked");
  }).catch(() => {});   // no HTTP either: the server is away, "reconnecting" is true
}
// The server sends the state as JSON text (see docs/protocol.md: cheaper than Socket.IO's object walk).
socket.on("state", (data) => {
  const state = typeof data === "string" ? JSON.parse(data) : data;
  clearTimeout(busyTimer);
  ctx.ui.busy = null;
  if (noticeShown) hideAlert();       // the wait it announced is over
  noticeShown = false;
  // a new game (or none): the screen reader's region no longer tells the last game's answer
  const gameId = (game) => (game && game.game_id) || null;
  if (current && gameId(current.game) !== gameId(state.game)) ctx.announce("");
  if (VIEWS[state.stage] && VIEWS[state.stage].onState) VIEWS[state.stage].onState(state, current, ctx);
  current = state;
  rememberPid(state);
  render();
});
// The server's word on a request that will wait (its agent is still starting): shown until the answer comes.
let noticeShown = false;
socket.on("notice", (notice) => {
  if (!notice || typeof notice.message !== "string") return;
  showAlert(notice.message);
  noticeShown = true;
  if (ctx.ui.busy) waitForAnswer();   // the server says the answer is coming: wait for it rather than call it lost
});
// The answer to `history`: an earlier round's explanations, kept by the game view.
socket.on("round", (data) => {
  const round = typeof data === "string" ? JSON.parse(data) : data;
  const view = current && VIEWS[current.stage];
  if (view && view.onRound) view.onRound(round, current, ctx);
  render();
});
socket.on("error", (error) => {
  const view = current && VIEWS[current.stage];
  if (view && view.onError) view.onError(error, current, ctx);
  if (!(error && error.event === "history")) {   // a refused read leaves a pending message pending
    clearTimeout(busyTimer);
    ctx.ui.busy = null;
  }
  const message = error && typeof error.message === "string" ? error.message : "The server refused that.";
  // a refused join (an unknown study or arm, another browser holds this participation, no cookie, a closed
  // study): nothing to play, so the message is the whole page, once (not also in #alert)
  if (!current && error && error.event === "join") {
    hideAlert();
    stage.dataset.stage = error.full ? "full" : "refused";
    stage.replaceChildren(error.full ? fullPage(message) : refusedPage(message));
    if (error.full) setTimeout(() => { if (!current && socket.connected) socket.emit("join", joinPayload()); }, FULL_RETRY_MS);
    return;
  }
  showAlert(message);
  render();
});

// The server is full (too many people play at once): nothing is lost, the page asks again every minute, and
// a Prolific participant who cannot wait is told how to give their place back without penalty.
const FULL_RETRY_MS = 60000;
function fullPage(message) {
  const fromProlific = new URLSearchParams(window.location.search).has("PROLIFIC_PID");
  return h("section", {class: "page refused full", role: "alert"},
    h("h1", {text: "The study is full right now"}),
    h("p", {id: "refused-message", class: "refused-message", text: message.charAt(0).toUpperCase() + message.slice(1) + "."}),
    h("p", {class: "hint", text: fromProlific
      ? "If you cannot wait, return the study on Prolific (\"Return submission\"): your place goes to someone else and it does not count against you."
      : "If you cannot wait, close this page; your link stays valid."}));
}

function refusedPage(message) {
  return h("section", {class: "page refused", role: "alert"},
    h("h1", {text: "The game cannot open"}),
    h("p", {id: "refused-message", class: "refused-message", text: message.charAt(0).toUpperCase() + message.slice(1)}),
    h("p", {class: "hint", text: "If you think this is a mistake, contact the researcher who gave you the link."}));
}

document.addEventListener("keydown", (event) => {
  const view = current && VIEWS[current.stage];
  if (view && view.onKey) view.onKey(event, current, ctx);
});
