// Safe DOM building: every string becomes a text node or an attribute value, never markup.
// Nothing in this frontend uses innerHTML, so a question such as "<img onerror=...>" stays inert text.

const PROPERTIES = new Set(["disabled", "checked", "hidden", "required", "value", "maxLength", "tabIndex"]);

// h("button", {class: "tile", dataset: {token}, onclick: fn}, "text", childNode, [more, children])
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = String(value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "style") setStyle(el, value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (PROPERTIES.has(key)) el[key] = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function setStyle(el, styles) {
  for (const [name, value] of Object.entries(styles)) {
    if (name.startsWith("--")) el.style.setProperty(name, String(value));
    else el.style[name] = value;
  }
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

// Only http(s) or same-origin relative URLs may become a link or an image source.
export function safeUrl(url) {
  if (typeof url !== "string" || !url) return null;
  try {
    const parsed = new URL(url, window.location.href);
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
  } catch {
    return null;
  }
}

export function percent(value, digits = 0) {
  const number = Number(value);
  return Number.isFinite(number) ? `${(number * 100).toFixed(digits)}%` : "–";
}

export function plural(count, word, many = `${word}s`) {
  return `${count} ${count === 1 ? word : many}`;
}
