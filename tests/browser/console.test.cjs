// The console in a real browser (Chromium, driven by playwright-core)
// against live `trellis serve` processes that scripts/browser-test.sh
// starts: one over the quick start, one over a three-page PDF.
//
// Environment: PLAYWRIGHT_CORE (the module's directory), CHROMIUM (the
// browser binary), QUICKSTART_URL and PDF_URL (the two services), TOKEN
// (accepted by both) and SCREENSHOT (where the README's picture goes).
"use strict";

const assert = require("node:assert/strict");
const { chromium } = require(process.env.PLAYWRIGHT_CORE);

const QUICKSTART = process.env.QUICKSTART_URL;
const PDF = process.env.PDF_URL;
const TOKEN = process.env.TOKEN;
const QUESTION = "Which state's law governs the hosting agreement?";

// What the API itself answers, to hold the page to.
async function retrieve(base, body) {
  const response = await fetch(`${base}/v1/retrieve`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify(body),
  });
  assert.equal(response.status, 200, await response.clone().text());
  return response.json();
}

async function signIn(page, base, token) {
  const response = await page.goto(`${base}/`);
  assert.equal(response.status(), 401, "the console asks for a token first");
  await page.fill("#token", token);
  await Promise.all([page.waitForNavigation(), page.click("#signin-form button[type=submit]")]);
}

async function search(page, query, options = {}) {
  await page.fill("#search-query", query);
  if (Object.keys(options).length) {
    await page.locator("#search-form details.options").evaluate((details) => { details.open = true; });
  }
  for (const [name, value] of Object.entries(options)) {
    const field = page.locator(`#search-options [name=${name}]`);
    if ((await field.evaluate((node) => node.tagName)) === "SELECT") await field.selectOption(value);
    else await field.fill(String(value));
  }
  await page.click("#search-form button[type=submit]");
  await page.waitForSelector("#search-results[aria-busy=false]", { state: "attached" });
}

const steps = [];
function step(name, run) {
  steps.push({ name, run });
}

step("without a token the page says 401 and why", async ({ page }) => {
  const response = await page.goto(`${QUICKSTART}/`);
  assert.equal(response.status(), 401);
  assert.match(await page.textContent("#reason"), /^401 Unauthorized: a bearer token is required/);
});

step("a bad token shows the 401 message", async ({ page }) => {
  await signIn(page, QUICKSTART, "not-the-token-0123456789");
  assert.match(await page.textContent("#reason"), /^401 Unauthorized: the bearer token is not valid/);
  assert.equal(await page.locator("#search-form").count(), 0, "no console behind a bad token");
});

// The quick start's questions (examples/quickstart/queries.txt) and the
// document each is about.
const QUICKSTART_QUESTIONS = [
  [QUESTION, "documents/webhelp-hosting-agreement.txt"],
  ["What royalty does the endorsement agreement pay?", "documents/lifeway-endorsement-agreement.txt"],
  ["What does a Turing machine model?", "documents/computational-complexity-theory.md"],
  // Last, so that the screenshot shows it.
  ["Who was the Norman leader who conquered England?", "documents/normans.md"],
];

step("the quick-start questions: expected first document, anchor marked, screenshot", async ({ page }) => {
  await signIn(page, QUICKSTART, TOKEN);
  await page.waitForFunction(() => document.querySelector("#info").textContent.includes("route quickstart"));
  for (const [question, document] of QUICKSTART_QUESTIONS) {
    await search(page, question);
    const expected = await retrieve(QUICKSTART, { query: question });
    const first = page.locator("#search-results > li").first();
    assert.equal(await first.getAttribute("data-document"), document, question);
    assert.equal(await first.getAttribute("data-document"), expected.hits[0].citation.document);
    assert.equal(await page.locator("#search-results > li").count(), expected.hits.length);
    // The marked sentence is the hit's sentence, inside its paragraph.
    assert.equal(await first.locator("mark.anchor").textContent(), expected.hits[0].text);
    assert.ok((await first.locator("p.display").textContent()).includes(expected.hits[0].text));
    assert.equal(await first.locator("mark.also").count(), (expected.hits[0].highlights || []).length);
    // Each signal above zero has its row, with the API's value.
    for (const [name, value] of Object.entries(expected.hits[0].signals)) {
      const row = first.locator(`tr[data-signal=${name}] td:nth-child(2)`);
      if (value === 0) assert.equal(await row.count(), 0, name);
      else assert.equal(await row.textContent(), value.toFixed(4), name);
    }
    const cite = await first.locator("cite").textContent();
    assert.ok(cite.includes(expected.hits[0].citation.section_path.join(" › ")), cite);
    // Each reference the sentence makes is named in its citation.
    for (const reference of expected.hits[0].citation.references || []) {
      assert.ok(cite.includes(`refers to ${reference.label}`), cite);
    }
  }
  await page.screenshot({ path: process.env.SCREENSHOT, fullPage: false });
});

step("route options reach the request", async ({ page }) => {
  await signIn(page, QUICKSTART, TOKEN);
  await search(page, QUESTION, { mode: "bm25", k: 1 });
  assert.equal(await page.locator("#search-results > li").count(), 1);
  assert.match(await page.textContent("#search-summary"), /^1 result, bm25,/);
  const expected = await retrieve(QUICKSTART, { query: QUESTION, mode: "bm25", k: 1 });
  assert.equal(await page.locator("#search-results mark.anchor").first().textContent(), expected.hits[0].text);
  // Auto mode says what it answered from, and why.
  await search(page, QUESTION, { mode: "auto", k: 1 });
  assert.match(await page.textContent("#search-summary"),
    /^1 result, auto, .*; answered from sentences \(.*names a document/);
  // A filter to one document keeps every result in it.
  await search(page, "payment terms", { mode: "", k: 3, documents: "documents/lifeway-endorsement-agreement.txt" });
  const documents = await page.locator("#search-results > li").evaluateAll((items) =>
    items.map((item) => item.dataset.document));
  assert.ok(documents.length > 0);
  assert.deepEqual([...new Set(documents)], ["documents/lifeway-endorsement-agreement.txt"]);
  // Out of bounds: the form holds the API's bounds, and what only the
  // service can check comes back as its own 400.
  await page.fill("#search-options [name=mmr_lambda]", "2");
  assert.equal(await page.locator("#search-options [name=mmr_lambda]:invalid").count(), 1);
  await page.fill("#search-options [name=mmr_lambda]", "");
  await search(page, "why ".repeat(600), { documents: "" });
  assert.match(await page.textContent("#error"), /^400 query_too_long: the query has 2399 characters/);
});

step("a token that stops working mid-session shows the 401 message", async ({ page, context }) => {
  await signIn(page, QUICKSTART, TOKEN);
  const { hostname } = new URL(QUICKSTART);
  await context.addCookies([{ name: "trellis_token", value: "rotated-away-0123456789", domain: hostname, path: "/" }]);
  await search(page, QUESTION);
  assert.match(await page.textContent("#error"), /^401 Unauthorized: the bearer token is not valid/);
});

step("the compare tab puts two modes side by side", async ({ page }) => {
  await signIn(page, QUICKSTART, TOKEN);
  await page.click("button[data-tab=compare]");
  await page.fill("#compare-query", QUESTION);
  await page.click("#compare-form button[type=submit]");
  await page.waitForSelector("#compare-summary[aria-busy=false]", { state: "attached" });
  assert.match(await page.textContent("#compare-summary"), /first document/);
  const [dense, bm25] = await Promise.all([
    retrieve(QUICKSTART, { query: QUESTION, mode: "dense" }),
    retrieve(QUICKSTART, { query: QUESTION, mode: "bm25" }),
  ]);
  const anchors = (side) => page.locator(`#compare-results-${side} mark.anchor`).allTextContents();
  assert.deepEqual(await anchors("a"), dense.hits.map((h) => h.text));
  assert.deepEqual(await anchors("b"), bm25.hits.map((h) => h.text));
  const shared = dense.hits.filter((h) =>
    bm25.hits.some((o) => o.citation.sentence_id === h.citation.sentence_id)).length;
  assert.equal(await page.locator("#compare-results-a li.shared").count(), shared);
});

step("the answer tab: the written answer, its [n] linked to the sources, cited sentences marked", async ({ page }) => {
  await signIn(page, QUICKSTART, TOKEN);
  await page.click("button[data-tab=answer]");
  await page.fill("#answer-query", QUESTION);
  await page.click("#answer-form button[type=submit]");
  await page.waitForSelector("#answer-text[aria-busy=false]", { state: "attached" });
  const response = await fetch(`${QUICKSTART}/v1/answer`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ query: QUESTION }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  const expected = await response.json();
  assert.match(await page.textContent("#answer-summary"), new RegExp(`^${expected.provider}, ${expected.sources.length} sources?`));
  assert.equal(await page.locator("#answer-text .sentence").count(), expected.sentences.length);
  assert.equal(await page.locator("#answer-sources > li").count(), expected.sources.length);
  assert.equal(await page.locator("#answer-sources > li").first().getAttribute("data-document"),
    expected.sources[0].document);
  // Every marker links to a source on the page.
  const links = await page.locator("#answer-text sup.marker a").evaluateAll((as) => as.map((a) => a.getAttribute("href")));
  assert.ok(links.length >= expected.sentences.length, `${links.length} markers`);
  for (const href of links) assert.equal(await page.locator(href).count(), 1, href);
  // The cited sentences are marked in their sources' paragraphs.
  const cited = new Set(expected.sentences.map((s) => s.support.best_sentence_id));
  const marked = await page.locator("#answer-sources mark.cited").evaluateAll((ms) => ms.map((m) => m.dataset.sentenceId));
  assert.deepEqual(new Set(marked), cited);
  // Following a marker lands on its source.
  await page.locator("#answer-text sup.marker a").first().click();
  assert.equal(await page.evaluate(() => location.hash), links[0]);
});

step("a PDF sentence's page boxes are drawn and listed", async ({ page }) => {
  await signIn(page, PDF, TOKEN);
  const query = "When is payment due after the invoice?";
  await search(page, query, { k: 1 });
  const expected = await retrieve(PDF, { query, k: 1 });
  const boxes = expected.hits[0].citation.boxes;
  assert.ok(boxes && boxes.length > 0, "the PDF's sentence has page boxes");
  const first = page.locator("#search-results > li").first();
  assert.match(await first.locator("cite").textContent(), new RegExp(`p\\. ${expected.hits[0].citation.page}$`));
  assert.equal(await first.locator("svg rect.box").count(), boxes.length);
  assert.equal(await first.locator(".page li").count(), boxes.length);
  const [x0, y0] = boxes[0].bbox;
  assert.ok((await first.locator(".page li").first().textContent()).startsWith(`[${x0.toFixed(1)}, ${y0.toFixed(1)},`));
});

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    // Chromium's sandbox needs user namespaces that root in a container
    // may not have.
    args: process.getuid && process.getuid() === 0 ? ["--no-sandbox"] : [],
  });
  let failed = 0;
  try {
    for (const { name, run } of steps) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
      const page = await context.newPage();
      const errors = [];
      page.on("pageerror", (e) => errors.push(e.message));
      page.on("console", (m) => m.type() === "error" && !/401|400/.test(m.text()) && errors.push(m.text()));
      try {
        await run({ page, context });
        assert.deepEqual(errors, [], "the page logged errors");
        console.log(`ok - ${name}`);
      } catch (e) {
        failed += 1;
        console.log(`not ok - ${name}\n${e.stack}`);
      } finally {
        await context.close();
      }
    }
  } finally {
    await browser.close();
  }
  console.log(`browser tests: ${steps.length - failed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
})();
