// The researcher's console (/admin): the studies update in place (live.js) while the forms beside them keep
// what is typed; each form is answered beside its fields: a study config checked as it is typed (the same
// checks as creating it, POST /admin/studies/check), participants found and released after a confirmation,
// rater links with a copy button. Without this script every form still posts and the page answers.
//
// ?poll=SECONDS in the console's address sets how often the studies update (default 5 s).

import {h} from "../js/dom.js";
import {call, fields} from "./api.js";
import {startLive} from "./live.js";

const POLL_S = 5;
const CHECK_AFTER_MS = 350;      // typing pauses this long before the config is checked
const NOTICE_MS = 10_000;

const $ = (id) => document.getElementById(id);
const pollS = Number.parseFloat(new URLSearchParams(location.search).get("poll"));
const live = startLive({section: $("studies"), status: $("live"), everyMs: 1000 * (pollS > 0.05 ? pollS : POLL_S),
                        onUpdate: listStudies});

// --- answers beside the fields, and a notice that stays in view -------------------------------------

function say(element, text, kind = "") {
  element.textContent = text;
  element.className = `field-check ${kind}`.trim();
}

let noticeTimer = null;
function notice(text, bad = false) {
  const box = $("notice");
  box.textContent = text;
  box.classList.toggle("bad", bad);
  box.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => { box.hidden = true; }, NOTICE_MS);
}
$("notice").addEventListener("click", () => { $("notice").hidden = true; });

// The study ids the study fields offer (a datalist: updating it leaves what is typed alone).
function listStudies(section) {
  const ids = [...section.querySelectorAll("article[data-study]")].map((a) => a.dataset.study);
  $("study-ids").replaceChildren(...ids.map((id) => h("option", {value: id})));
}

// --- a study: checked as it is typed, created beside its field ----------------------------------------

const config = $("config");
const configCheck = $("config-check");
let checking = 0;
let checkTimer = null;
// One check at a time: a check proves the study's agent as creating it does (a warm-up question on a worker,
// seconds for an agent no worker has loaded yet), so what is typed meanwhile is checked once that answer is in.
let checkRunning = false;
let checkAgain = false;

async function checkConfig() {
  if (checkRunning) {
    checkAgain = true;
    return;
  }
  checkRunning = true;
  const asked = ++checking;
  try {
    const answer = await call("POST", "/admin/studies/check", {config: config.value});
    if (asked !== checking) return;        // created meanwhile: that answer stays
    config.classList.toggle("bad", !answer.ok);
    if (!answer.ok) say(configCheck, answer.error, "bad");
    else if (answer.warnings.length) say(configCheck, `Can be created here. Warning: ${answer.warnings.join(" ")}`, "warn");
    else say(configCheck, "Can be created here.", "good");
  } catch (error) {
    if (asked === checking) say(configCheck, error.message, "bad");
  } finally {
    checkRunning = false;
    if (checkAgain) {
      checkAgain = false;
      checkConfig();
    }
  }
}

config.addEventListener("input", () => {
  clearTimeout(checkTimer);
  checkTimer = setTimeout(checkConfig, CHECK_AFTER_MS);
});

$("create-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  clearTimeout(checkTimer);
  checking += 1;                             // no check in flight overwrites this answer
  checkAgain = false;                        // nor one waiting for it
  try {
    const answer = await call("POST", "/admin/studies", {config: config.value});
    config.classList.remove("bad");
    say(configCheck, `Created study ${answer.created}.${answer.warnings.length ? " Warning: " + answer.warnings.join(" ") : ""}`,
        answer.warnings.length ? "warn" : "good");
    notice(`Created study ${answer.created}.`);
    live.refresh();
  } catch (error) {
    config.classList.add("bad");
    say(configCheck, error.message, "bad");
  }
  configCheck.scrollIntoView({block: "nearest"});
});

// --- the studies' own buttons: open or close, copy a config into the form ------------------------------

$("studies").addEventListener("submit", async (event) => {
  const form = event.target;
  if (!form.classList.contains("study-status")) return;
  event.preventDefault();
  try {
    const answer = await call("POST", form.getAttribute("action"));
    notice(`Study ${answer.study} is ${answer.status}.`);
  } catch (error) {
    notice(error.message, true);
  }
  live.refresh();
});

$("studies").addEventListener("click", (event) => {
  const button = event.target.closest("button.copy-config");
  if (!button) return;
  const copy = JSON.parse(button.dataset.config);
  delete copy.seed;                          // a new study draws its own assignment
  copy.study_id = `${copy.study_id}-2`;
  config.value = JSON.stringify(copy, null, 1);
  config.focus();
  config.scrollIntoView({block: "nearest"});
  checkConfig();
});

// --- participants: found, and released after a confirmation ------------------------------------------

const dialog = $("confirm-release");
const releaseResult = $("release-result");

function confirmRelease(study, participant) {
  dialog.querySelector('[data-field="study"]').textContent = study;
  dialog.querySelector('[data-field="participant"]').textContent = participant;
  dialog.returnValue = "";
  dialog.showModal();
  return new Promise((resolve) => dialog.addEventListener("close", () => resolve(dialog.returnValue === "release"),
                                                          {once: true}));
}

// every Release button of the page (the monitor's, the bound-elsewhere list's, the search's, the form's)
document.addEventListener("submit", async (event) => {
  const form = event.target;
  if (form.getAttribute("action") !== "/admin/release" || form.method !== "post") return;
  event.preventDefault();
  const {study, participant} = fields(form);
  if (!study || !participant) {
    say(releaseResult, "Give the study and the participant id (e.g. pid:ID, as in the monitor).", "bad");
    releaseResult.scrollIntoView({block: "nearest"});
    return;
  }
  if (!await confirmRelease(study, participant)) return;
  try {
    await call("POST", "/admin/release", {study, participant});
    const text = `Released ${participant} of ${study}: their open tabs are closed, and their next join takes the ` +
                 "participation over.";
    say(releaseResult, text, "good");
    notice(text);
  } catch (error) {
    say(releaseResult, error.message, "bad");
    notice(error.message, true);
  }
  live.refresh();
  if ($("found").childElementCount) search();
});

async function search() {
  const {study, q} = fields($("search-form"));
  if (!study) {
    say($("search-check"), "Give a study id.", "bad");
    return;
  }
  try {
    const found = await call("GET", `/admin/participants.json?${new URLSearchParams({study, q})}`);
    say($("search-check"), found.length ? `${found.length} found (latest first)` : "No participant matches.");
    $("found").replaceChildren(...found.map((p) => h("li", {},
      h("code", {text: p.pid}),
      h("span", {class: "muted", text: `${p.arm} · ${p.stage} · game ${p.game}`}),
      p.bound ? releaseButton(study, p.pid) : h("span", {class: "muted", text: "released"}))));
  } catch (error) {
    say($("search-check"), error.message, "bad");
  }
}

function releaseButton(study, participant) {
  return h("form", {class: "inline", method: "post", action: "/admin/release"},
    h("input", {type: "hidden", name: "study", value: study}),
    h("input", {type: "hidden", name: "participant", value: participant}),
    h("button", {text: "Release"}));
}

$("search-form").addEventListener("submit", (event) => {
  event.preventDefault();
  search();
});

// --- rater links, each with a copy button ------------------------------------------------------------

$("raters-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const check = $("raters-check");
  try {
    const {links} = await call("POST", "/admin/raters", {raters: $("rater-ids").value});
    const raters = Object.keys(links);
    say(check, `${raters.length} link${raters.length === 1 ? "" : "s"}: give each rater their own; whoever has a ` +
               "link rates as that rater.", "good");
    $("rater-links").replaceChildren(...raters.map((rater) => h("li", {},
      h("code", {text: rater}),
      h("input", {type: "text", readonly: true, value: links[rater], "aria-label": `link of ${rater}`}),
      h("button", {type: "button", class: "copy", dataset: {link: links[rater]}, text: "Copy"}))));
  } catch (error) {
    say(check, error.message, "bad");
  }
});

$("rater-links").addEventListener("click", async (event) => {
  const button = event.target.closest("button.copy");
  if (!button) return;
  try {
    await navigator.clipboard.writeText(button.dataset.link);
  } catch (error) {            // no clipboard API (plain http off localhost): select the link and copy that
    const field = button.parentElement.querySelector("input");
    field.select();
    document.execCommand("copy");
  }
  button.textContent = "Copied";
  button.dataset.copied = "true";
  setTimeout(() => { button.textContent = "Copy"; }, 2000);
});

listStudies($("studies"));
checkConfig();
