// The console's live part: every few seconds the studies as the server renders them (/admin/monitor.html,
// the page's own admin_studies.html) replace, in place, the studies that changed. Only the studies section
// is touched, so what the researcher types in the forms beside it stays; a study's open "Latest participants"
// and the focused button inside it are kept across a replacement.
//
// The HTML is the server's own (Jinja escapes every value) and is parsed by DOMParser, which runs nothing.

const PARSER = new DOMParser();

export function startLive({section, status, everyMs, onUpdate}) {
  const seen = new Map([...section.children].map((node) => [node.id, node.outerHTML]));   // what was received
  let updates = 0;
  let timer = null;

  async function poll() {
    clearTimeout(timer);
    try {
      const response = await fetch("/admin/monitor.html", {credentials: "same-origin", cache: "no-store"});
      if (response.status === 403) throw new Error("the admin token was refused: open the console's link again");
      if (!response.ok) throw new Error(`the server answered ${response.status}`);
      apply(await response.text());
      updates += 1;
      status.dataset.updates = String(updates);
      status.textContent = `Live: updated ${new Date().toLocaleTimeString()}`;
      status.classList.remove("stale");
      if (onUpdate) onUpdate(section);
    } catch (error) {
      status.classList.add("stale");
      status.textContent = `Live updates paused (${error.message}); trying again`;
    } finally {
      timer = setTimeout(poll, everyMs);
    }
  }

  function apply(html) {
    const fresh = [...PARSER.parseFromString(`<body>${html}</body>`, "text/html").body.children];
    const current = [...section.children];
    const sameStudies = fresh.length === current.length && fresh.every((node, i) => node.id && node.id === current[i].id);
    if (!sameStudies) {      // a study created: the list is laid out again
      const open = openDetails(section);
      seen.clear();
      fresh.forEach((node) => { seen.set(node.id, node.outerHTML); reopen(node, open); });
      section.replaceChildren(...fresh.map((node) => document.adoptNode(node)));
      return;
    }
    fresh.forEach((node, i) => {
      const text = node.outerHTML;
      if (seen.get(node.id) === text) return;
      seen.set(node.id, text);
      replaceKeepingState(current[i], document.adoptNode(node));
    });
  }

  timer = setTimeout(poll, everyMs);
  return {refresh: poll};
}

function openDetails(root) {
  return new Set([...root.querySelectorAll("details[open][data-key]")].map((d) => d.dataset.key));
}

function reopen(root, open) {
  for (const details of root.querySelectorAll("details[data-key]")) details.open = open.has(details.dataset.key);
}

function replaceKeepingState(old, fresh) {
  reopen(fresh, openDetails(old));
  const focused = old.contains(document.activeElement) ? pathTo(old, document.activeElement) : null;
  old.replaceWith(fresh);
  const again = focused && follow(fresh, focused);
  if (again) again.focus({preventScroll: true});
}

// The child indexes from root down to node, to find the same place in the replacement.
function pathTo(root, node) {
  const path = [];
  for (let at = node; at && at !== root; at = at.parentElement) path.unshift([...at.parentElement.children].indexOf(at));
  return path;
}

function follow(root, path) {
  let at = root;
  for (const index of path) {
    at = at && at.children[index];
  }
  return at || null;
}
