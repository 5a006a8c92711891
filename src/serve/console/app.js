// The console's script. It asks the service's own API (/v1/info,
// /v1/retrieve, /v1/answer) with the token the sign-in form stored, and
// draws what comes back: results as paragraphs with their anchor sentences
// marked, citations, per-signal scores and page boxes; on the second tab,
// two request settings side by side on one query; on the third, a written
// answer streamed as it comes, its [n] markers linked to the numbered
// sources, whose paragraphs show the cited sentences marked. Everything is built with DOM
// calls (never innerHTML), so text from documents is never read as markup.
"use strict";

const MODES = ["bm25", "dense", "hybrid", "full", "auto"];

// The request options each form offers: where each goes in the request
// body, and how its text is read.
const OPTIONS = [
  { name: "mode", label: "Anchor mode", kind: "mode" },
  { name: "k", label: "Results (k)", kind: "int", min: 1, max: 50 },
  { name: "documents", label: "Documents (comma-separated)", kind: "list", in: "filters" },
  { name: "section_prefix", label: "Section path (A > B)", kind: "path", in: "filters" },
  { name: "metadata", label: "Metadata (key=value, …)", kind: "pairs", in: "filters" },
  { name: "threshold", label: "Threshold", kind: "float", in: "selection", min: 0, max: 10, step: 0.01 },
  { name: "neighbours", label: "Neighbours", kind: "int", in: "selection", min: 0, max: 5 },
  { name: "max_per_document", label: "Most per document", kind: "int", in: "selection", min: 0, max: 50 },
  { name: "spread_per_document", label: "Spread per document", kind: "int", in: "selection", min: 0, max: 50 },
  { name: "document_decay", label: "Document decay", kind: "float", in: "selection", min: 0, max: 1, step: 0.05 },
  { name: "mmr_lambda", label: "MMR λ", kind: "float", in: "selection", min: 0, max: 1, step: 0.05 },
];

// A PDF page's size when the boxes do not say more: US Letter, in points.
const PAGE_POINTS = [612, 792];

let routeMode = "";

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    node.append(child);
  }
  return node;
}

function svg(tag, attributes = {}) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  return node;
}

function token() {
  for (const pair of document.cookie.split(";")) {
    const [name, ...rest] = pair.trim().split("=");
    if (name === "trellis_token") return decodeURIComponent(rest.join("="));
  }
  return "";
}

class ApiFailure extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(path, body) {
  const headers = { Accept: "application/json" };
  const bearer = token();
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  const init = { headers };
  if (body !== undefined) {
    init.method = "POST";
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (e) {
    throw new ApiFailure(0, "unreachable", `the service did not answer (${e.message})`);
  }
  const text = await response.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch (_) {
    // Not JSON: reported below with the status.
  }
  if (!response.ok) {
    const error = json && json.error ? json.error : { code: "http", message: text.slice(0, 200) };
    throw new ApiFailure(response.status, error.code, error.message);
  }
  return json;
}

function showError(failure) {
  const box = document.getElementById("error");
  box.replaceChildren();
  if (!failure) {
    box.hidden = true;
    return;
  }
  if (failure.status === 401) {
    box.append(`401 Unauthorized: ${failure.message}. `);
    const again = el("button", { type: "button", text: "Sign in again" });
    again.addEventListener("click", signOut);
    box.append(again);
  } else if (failure.status) {
    box.append(`${failure.status} ${failure.code}: ${failure.message}`);
  } else {
    box.append(failure.message);
  }
  box.hidden = false;
}

function signOut() {
  document.cookie = "trellis_token=; Path=/; Max-Age=0; SameSite=Strict";
  location.assign("/");
}

// ---- request options ----

function buildFields(container, defaults = {}) {
  for (const option of OPTIONS) {
    let input;
    if (option.kind === "mode") {
      input = el("select", { name: option.name });
      input.append(el("option", { value: "", text: "the route's" }));
      for (const mode of MODES) input.append(el("option", { value: mode, text: mode }));
    } else {
      const numeric = option.kind === "int" || option.kind === "float";
      input = el("input", { name: option.name, type: numeric ? "number" : "text" });
      if (numeric) {
        input.min = option.min;
        input.max = option.max;
        input.step = option.step || 1;
      }
    }
    if (defaults[option.name] !== undefined) input.value = defaults[option.name];
    container.append(el("label", {}, option.label, input));
  }
}

function setRouteMode(mode) {
  routeMode = mode;
  for (const select of document.querySelectorAll("select[name=mode]")) {
    select.options[0].textContent = `the route's (${mode})`;
  }
}

// The request body a form describes; empty fields are left out, so the
// route's own settings apply.
function readRequest(container, query) {
  const request = { query };
  for (const option of OPTIONS) {
    const raw = container.querySelector(`[name=${option.name}]`).value.trim();
    if (raw === "") continue;
    let value;
    switch (option.kind) {
      case "int": value = parseInt(raw, 10); break;
      case "float": value = parseFloat(raw); break;
      case "list": value = raw.split(",").map((s) => s.trim()).filter(Boolean); break;
      case "path": value = raw.split(">").map((s) => s.trim()).filter(Boolean); break;
      case "pairs":
        value = {};
        for (const pair of raw.split(",")) {
          const [key, ...rest] = pair.split("=");
          if (key.trim()) value[key.trim()] = rest.join("=").trim();
        }
        break;
      default: value = raw;
    }
    if (option.in) {
      request[option.in] = request[option.in] || {};
      request[option.in][option.name] = value;
    } else {
      request[option.name] = value;
    }
  }
  return request;
}

// ---- results ----

// The display paragraph with the anchor sentence and the other selected
// sentences marked where they stand in it.
function markedDisplay(hit) {
  const display = hit.display;
  const spans = [];
  const anchorAt = display.indexOf(hit.text);
  if (anchorAt >= 0) spans.push({ start: anchorAt, end: anchorAt + hit.text.length, kind: "anchor" });
  let from = 0;
  for (const other of hit.highlights || []) {
    const at = display.indexOf(other.text, from);
    if (at < 0) continue;
    spans.push({ start: at, end: at + other.text.length, kind: "also", score: other.score });
    from = at + other.text.length;
  }
  spans.sort((a, b) => a.start - b.start);
  const paragraph = el("p", { class: "display" });
  let at = 0;
  for (const span of spans) {
    if (span.start < at) continue; // overlaps one already marked
    paragraph.append(display.slice(at, span.start));
    const mark = el("mark", { class: span.kind, text: display.slice(span.start, span.end) });
    if (span.score !== undefined) mark.title = `also selected, score ${span.score.toFixed(4)}`;
    else mark.title = "anchor sentence";
    paragraph.append(mark);
    at = span.end;
  }
  paragraph.append(display.slice(at));
  if (anchorAt < 0) {
    // A display cut around the sentence may not hold all of it.
    return [el("p", { class: "display" }, el("mark", { class: "anchor", text: hit.text })), paragraph];
  }
  return [paragraph];
}

function citation(hit) {
  const c = hit.citation;
  const cite = el("cite", {}, el("strong", { class: "document", text: c.document }));
  // What the document records of itself: its title, author and date.
  const info = c.document_info || {};
  const about = [c.document_title, info.author, info.date, info.version && `version ${info.version}`]
    .filter(Boolean);
  if (about.length) cite.append(" ", el("span", { class: "document-info", text: `(${about.join(", ")})` }));
  if (c.section_path && c.section_path.length) {
    cite.append(" · ", el("span", { class: "section", text: c.section_path.join(" › ") }));
  }
  cite.title = `${c.sentence_id}, characters ${c.char_span[0]}–${c.char_span[0] + c.char_span[1]}`;
  // What the sentence refers to ("as defined in Section 1.4"), and where
  // that is in the document; how many sentences refer here.
  for (const reference of c.references || []) {
    const item = el("span", { class: "reference", text: `refers to ${reference.label}` });
    if (reference.section_path && reference.section_path.length) {
      item.append(` (${reference.section_path.join(" › ")})`);
    } else if (!reference.sentence_id) {
      item.append(" (not found in this document)");
    }
    if (reference.sentence_id) item.title = reference.sentence_id;
    cite.append(" · ", item);
  }
  if (c.referenced_by && c.referenced_by.length) {
    const n = c.referenced_by.length;
    const item = el("span", { class: "referenced-by", text: `referred to by ${n} sentence${n === 1 ? "" : "s"}` });
    item.title = c.referenced_by.join(", ");
    cite.append(" · ", item);
  }
  // A table row: which table, which row, and what its columns hold.
  if (c.table) {
    const t = c.table;
    const label = t.row_header ? ` (${t.row_header})` : "";
    const item = el("span", { class: "table", text: `${t.caption || "table"}, row ${t.row} of ${t.rows}${label}` });
    item.title = t.columns.map((name, i) => (t.units[i] && !name.includes(t.units[i]) ? `${name} [${t.units[i]}]` : name)).join(" | ");
    cite.append(" · ", item);
  }
  // The form fields of its section: "Party name: Acme Corp", "Auto-renewal: ☒".
  if (c.fields && c.fields.length) {
    const shown = (v) => (v === true ? "☒" : v === false ? "☐" : v || "(blank)");
    const item = el("span", { class: "fields", text: c.fields.map((f) => `${f.name}: ${shown(f.value)}`).join("; ") });
    cite.append(" · ", item);
  }
  if (c.page) cite.append(` · p. ${c.page}`);
  return cite;
}

function signalTable(signals) {
  // The service lists the signals in its own order, one key each.
  const rows = Object.keys(signals).filter((name) => signals[name]);
  const largest = Math.max(...rows.map((name) => Math.abs(signals[name])), 1e-9);
  const table = el("table", { class: "signals" });
  table.append(el("caption", { text: "Per-signal scores" }));
  for (const name of rows) {
    const value = signals[name];
    const bar = el("span", { class: value < 0 ? "bar negative" : "bar" });
    bar.style.width = `${(6 * Math.abs(value)) / largest}rem`;
    table.append(el("tr", { "data-signal": name },
      el("td", { class: "name", text: name.replace("_", " ") }),
      el("td", { text: value.toFixed(4) }),
      el("td", {}, bar)));
  }
  if (!rows.length) table.append(el("tr", {}, el("td", { class: "name", text: "no signal above zero" })));
  return table;
}

// A PDF sentence's line boxes, drawn on an outline of each page they are
// on (the service keeps the boxes, not the page images) and listed.
function pageBoxes(boxes) {
  const byPage = new Map();
  for (const box of boxes) {
    if (!byPage.has(box.page)) byPage.set(box.page, []);
    byPage.get(box.page).push(box.bbox);
  }
  const pages = el("div", { class: "pages" });
  for (const [page, bboxes] of byPage) {
    const width = Math.max(PAGE_POINTS[0], ...bboxes.map((b) => b[2] + 18));
    const height = Math.max(PAGE_POINTS[1], ...bboxes.map((b) => b[3] + 18));
    const drawing = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img",
      "aria-label": `page ${page} with ${bboxes.length} box(es)` });
    drawing.append(svg("rect", { class: "sheet", x: 0, y: 0, width, height }));
    const list = el("ul");
    for (const [x0, y0, x1, y1] of bboxes) {
      // PDF points grow upwards from the bottom left; SVG's downwards.
      drawing.append(svg("rect", { class: "box", x: x0, y: height - y1,
        width: Math.max(x1 - x0, 1), height: Math.max(y1 - y0, 1) }));
      list.append(el("li", { text: `[${[x0, y0, x1, y1].map((v) => v.toFixed(1)).join(", ")}]` }));
    }
    pages.append(el("div", { class: "page", "data-page": page },
      el("figure", {}, drawing, el("figcaption", { text: `p. ${page} (outline; boxes in PDF points)` })),
      list));
  }
  return pages;
}

function renderHit(hit, rank) {
  const item = el("li", { class: "hit", "data-document": hit.citation.document,
    "data-sentence-id": hit.citation.sentence_id });
  item.append(el("div", { class: "hit-head" },
    el("span", { class: "rank", text: `#${rank}` }),
    citation(hit),
    el("span", { class: "score", text: `score ${hit.score.toFixed(4)}` })));
  item.append(...markedDisplay(hit));
  const details = el("div", { class: "details" }, signalTable(hit.signals));
  if (hit.citation.boxes && hit.citation.boxes.length) details.append(pageBoxes(hit.citation.boxes));
  item.append(details);
  return item;
}

function renderCompact(hit, rank, shared) {
  const item = el("li", { class: shared ? "hit shared" : "hit",
    "data-document": hit.citation.document, "data-sentence-id": hit.citation.sentence_id });
  item.append(el("div", { class: "hit-head" },
    el("span", { class: "rank", text: `#${rank}` }),
    citation(hit),
    el("span", { class: "score", text: hit.score.toFixed(4) })));
  item.append(el("p", { class: "display" }, el("mark", { class: "anchor", text: hit.text })));
  if (shared) item.title = "the other side selected this sentence too";
  return item;
}

function describe(request, answer) {
  const mode = request.mode || routeMode || "the route's mode";
  const results = answer.hits.length === 1 ? "1 result" : `${answer.hits.length} results`;
  let text = `${results}, ${mode}, index ${answer.index_version}`;
  if (answer.routing) {
    text += `; answered from ${answer.routing.granularity} (${answer.routing.reasons.join(", ")})`;
  }
  if (answer.context_budget) {
    const b = answer.context_budget;
    text += `; context ${b.used} of ${b.budget} tokens`;
    if (b.shortened) text += `, ${b.shortened} shortened`;
    if (b.dropped) text += `, ${b.dropped} left out`;
  }
  if (answer.common_query) text += "; a query common to the corpus, answered per document";
  if (answer.reranked !== undefined) text += answer.reranked ? "; reranked" : "; reranker skipped";
  return text;
}

// ---- the answer ----

// Reads a server-sent event stream, calling onEvent(name, data) per event.
async function readEvents(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffered += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffered.indexOf("\n\n")) >= 0) {
      const block = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
    }
  }
}

// Posts the request for an event stream; `onText` gets the answer's text
// as it comes; resolves to the final answer.
async function streamAnswer(request, onText) {
  const headers = { Accept: "text/event-stream", "Content-Type": "application/json" };
  const bearer = token();
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  let response;
  try {
    response = await fetch("/v1/answer", { method: "POST", headers, body: JSON.stringify(request) });
  } catch (e) {
    throw new ApiFailure(0, "unreachable", `the service did not answer (${e.message})`);
  }
  if (!response.ok) {
    const text = await response.text();
    let error = { code: "http", message: text.slice(0, 200) };
    try {
      error = JSON.parse(text).error || error;
    } catch (_) {
      // Not JSON: the text is the message.
    }
    throw new ApiFailure(response.status, error.code, error.message);
  }
  let final = null;
  let failure = null;
  await readEvents(response, (name, data) => {
    if (name === "text") onText(data.text);
    else if (name === "answer") final = data;
    else if (name === "error") failure = new ApiFailure(503, data.error.code, data.error.message);
  });
  if (failure) throw failure;
  if (!final) throw new ApiFailure(0, "interrupted", "the answer stream ended early");
  return final;
}

// One answer sentence: its text with each [n] marker a link to source n,
// marked when the check did not support it.
function renderSentence(sentence) {
  const span = el("span", { class: sentence.support.supported ? "sentence" : "sentence unsupported" });
  if (!sentence.support.supported) {
    const why = (sentence.support.flags || []).join(", ").replaceAll("_", " ");
    const missing = (sentence.support.missing || []).join(", ");
    span.title = `not supported by its sources: ${why}${missing ? ` (${missing})` : ""}`;
  }
  const marker = /\[(\d+(?:\s*[,;\-–]\s*\d+)*)\]/g;
  let at = 0;
  for (const match of sentence.text.matchAll(marker)) {
    span.append(sentence.text.slice(at, match.index));
    const numbers = match[1].split(/[,;]/).map((n) => n.trim());
    const cite = el("sup", { class: "marker" }, "[");
    numbers.forEach((n, i) => {
      if (i) cite.append(", ");
      const first = n.split(/[-–]/)[0].trim();
      cite.append(el("a", { href: `#source-${first}`, "data-source": first, text: n }));
    });
    cite.append("]");
    span.append(cite);
    at = match.index + match[0].length;
  }
  span.append(sentence.text.slice(at));
  return span;
}

// A numbered source: where it comes from, and its passage with the
// sentences the answer cites (else those retrieval selected) marked.
function renderSource(source, cited) {
  const item = el("li", { class: "hit source", id: `source-${source.number}`,
    "data-document": source.document, value: String(source.number) });
  const cite = el("cite", {}, el("strong", { class: "document", text: source.title || source.document }));
  if (source.section_path && source.section_path.length) {
    cite.append(" · ", el("span", { class: "section", text: source.section_path.join(" › ") }));
  }
  if (source.page) cite.append(` · p. ${source.page}`);
  item.append(el("div", { class: "hit-head" }, el("span", { class: "rank", text: `[${source.number}]` }), cite));
  const marked = cited.size ? cited : new Set(source.selected);
  const paragraph = el("p", { class: "display" });
  source.sentences.forEach((s, i) => {
    if (i) paragraph.append(" ");
    if (marked.has(s.sentence_id)) {
      paragraph.append(el("mark", { class: "cited", "data-sentence-id": s.sentence_id, text: s.text }));
    } else {
      paragraph.append(s.text);
    }
  });
  item.append(paragraph);
  const boxes = source.sentences.filter((s) => marked.has(s.sentence_id)).flatMap((s) => s.boxes || []);
  if (boxes.length) item.append(el("div", { class: "details" }, pageBoxes(boxes)));
  return item;
}

function renderAnswer(answer) {
  const text = document.getElementById("answer-text");
  const paragraph = el("p", { class: "written" });
  if (answer.no_answer || !answer.sentences.length) {
    paragraph.append(answer.answer);
  }
  answer.sentences.forEach((sentence, i) => {
    if (i) paragraph.append(" ");
    paragraph.append(renderSentence(sentence));
  });
  text.replaceChildren(paragraph);
  const citedBy = new Map();
  for (const sentence of answer.sentences) {
    const { best_source: n, best_sentence_id: id } = sentence.support;
    if (n === undefined || id === undefined) continue;
    if (!citedBy.has(n)) citedBy.set(n, new Set());
    citedBy.get(n).add(id);
  }
  document.getElementById("answer-sources").replaceChildren(
    ...answer.sources.map((s) => renderSource(s, citedBy.get(s.number) || new Set())));
  document.getElementById("answer-sources-heading").hidden = !answer.sources.length;
}

function describeAnswer(answer) {
  const sources = answer.sources.length === 1 ? "1 source" : `${answer.sources.length} sources`;
  let text = `${answer.provider}${answer.model ? ` (${answer.model})` : ""}, ${sources}, index ${answer.index_version}`;
  if (answer.no_answer) text += "; nothing found to answer from";
  if (answer.unsupported) text += `; ${answer.unsupported} sentence(s) not supported by their sources`;
  if (answer.dropped_sentences) text += `, ${answer.dropped_sentences} left out`;
  if (answer.dropped_sources) text += `; ${answer.dropped_sources} result(s) left out to fit the context`;
  return text;
}

async function answer(event) {
  event.preventDefault();
  const form = event.target;
  const request = readRequest(form, document.getElementById("answer-query").value.trim());
  const summary = document.getElementById("answer-summary");
  const text = document.getElementById("answer-text");
  const live = el("p", { class: "written streaming" });
  text.replaceChildren(live);
  document.getElementById("answer-sources").replaceChildren();
  document.getElementById("answer-sources-heading").hidden = true;
  summary.textContent = "writing…";
  text.setAttribute("aria-busy", "true");
  try {
    const written = await streamAnswer(request, (piece) => live.append(piece));
    showError(null);
    renderAnswer(written);
    summary.textContent = describeAnswer(written);
  } catch (failure) {
    summary.textContent = "";
    text.replaceChildren();
    showError(failure);
  } finally {
    text.setAttribute("aria-busy", "false");
  }
}

// ---- the tabs ----

async function search(event) {
  event.preventDefault();
  const form = event.target;
  const request = readRequest(form, document.getElementById("search-query").value.trim());
  const summary = document.getElementById("search-summary");
  const results = document.getElementById("search-results");
  summary.textContent = "searching…";
  results.setAttribute("aria-busy", "true");
  try {
    const answer = await api("/v1/retrieve", request);
    showError(null);
    results.replaceChildren(...answer.hits.map((hit, i) => renderHit(hit, i + 1)));
    summary.textContent = describe(request, answer);
  } catch (failure) {
    summary.textContent = "";
    results.replaceChildren();
    showError(failure);
  } finally {
    results.setAttribute("aria-busy", "false");
  }
}

async function compare(event) {
  event.preventDefault();
  const query = document.getElementById("compare-query").value.trim();
  const left = readRequest(document.getElementById("compare-options-a"), query);
  const right = readRequest(document.getElementById("compare-options-b"), query);
  const summary = document.getElementById("compare-summary");
  summary.textContent = "asking both…";
  summary.setAttribute("aria-busy", "true");
  try {
    const [a, b] = await Promise.all([api("/v1/retrieve", left), api("/v1/retrieve", right)]);
    showError(null);
    const idsOf = (answer) => new Set(answer.hits.map((h) => h.citation.sentence_id));
    const inA = idsOf(a);
    const inB = idsOf(b);
    document.getElementById("compare-results-a").replaceChildren(
      ...a.hits.map((hit, i) => renderCompact(hit, i + 1, inB.has(hit.citation.sentence_id))));
    document.getElementById("compare-results-b").replaceChildren(
      ...b.hits.map((hit, i) => renderCompact(hit, i + 1, inA.has(hit.citation.sentence_id))));
    const both = [...inA].filter((id) => inB.has(id)).length;
    const first = (answer) => (answer.hits[0] ? answer.hits[0].citation.document : "nothing");
    summary.textContent = `left: ${describe(left, a)}; right: ${describe(right, b)}. ` +
      `${both} anchor sentence(s) on both sides; first document ${first(a)} | ${first(b)}.`;
  } catch (failure) {
    summary.textContent = "";
    showError(failure);
  } finally {
    summary.setAttribute("aria-busy", "false");
  }
}

function selectTab(name) {
  for (const tab of document.querySelectorAll(".tab")) {
    tab.setAttribute("aria-selected", String(tab.dataset.tab === name));
  }
  for (const panel of document.querySelectorAll(".panel")) {
    panel.hidden = panel.id !== `tab-${name}`;
  }
}

async function start() {
  buildFields(document.getElementById("search-options"));
  buildFields(document.getElementById("compare-options-a"), { mode: "dense" });
  buildFields(document.getElementById("compare-options-b"), { mode: "bm25" });
  buildFields(document.getElementById("answer-options"));
  document.getElementById("search-form").addEventListener("submit", search);
  document.getElementById("compare-form").addEventListener("submit", compare);
  document.getElementById("answer-form").addEventListener("submit", answer);
  for (const tab of document.querySelectorAll(".tab")) {
    tab.addEventListener("click", () => selectTab(tab.dataset.tab));
  }
  const signout = document.getElementById("signout");
  signout.hidden = !token();
  signout.addEventListener("click", signOut);
  try {
    const info = await api("/v1/info");
    setRouteMode(info.mode);
    document.getElementById("info").textContent =
      `route ${info.route} · corpus ${info.corpus} · index ${info.index_version} · ` +
      `${info.model} (${info.dimensions} dimensions)`;
  } catch (failure) {
    document.getElementById("info").textContent = "";
    showError(failure);
  }
}

start();
