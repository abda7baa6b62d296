// Drives a real VS Code (code-server's workbench in headless Chromium, via puppeteer-core)
// through the README's set-up: opens a net with a type error, waits for pnet-lsp's
// diagnostic (editor squiggle + Problems panel), hovers a place name, fixes the error by
// editing in the editor and waits for the diagnostic to go away.
// usage: node check.cjs   (environment: PUPPETEER_CORE, CHROMIUM, URL, FOLDER, FILE, SHOTS)
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const puppeteer = require(process.env.PUPPETEER_CORE);

const URL = process.env.URL; // http://127.0.0.1:PORT
const FOLDER = process.env.FOLDER; // the folder opened in VS Code
const FILE = process.env.FILE; // its net with the error, by base name
const SHOTS = process.env.SHOTS; // where screenshots go

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let failures = 0;
let passed = 0;
function check(ok, what, detail) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}${detail ? `: ${detail}` : ""}`);
  if (ok) passed++;
  else failures++;
  return ok;
}

// Polls fn() in the page until it returns a truthy value (or the time is up: null).
async function until(page, fn, arg, ms) {
  try {
    const h = await page.waitForFunction(fn, { timeout: ms, polling: 250 }, arg);
    return await h.jsonValue();
  } catch {
    return null;
  }
}

// The centre of `part` (default: all) of the n-th occurrence of `needle` in the editor's
// rendered lines.
async function textPoint(page, needle, part = needle, nth = 0) {
  return page.evaluate(
    ({ needle, part, nth }) => {
      const root = document.querySelector(".monaco-editor .view-lines");
      if (!root) return null;
      const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
      let seen = 0;
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        // Monaco renders spaces as U+00A0.
        const text = n.textContent.replace(/\u00a0/g, " ");
        let at = text.indexOf(needle);
        while (at >= 0) {
          if (seen++ === nth) {
            const from = at + needle.indexOf(part);
            const range = document.createRange();
            range.setStart(n, from);
            range.setEnd(n, from + part.length);
            const r = range.getBoundingClientRect();
            return { x: r.x + r.width / 2, y: r.y + r.height / 2 };
          }
          at = text.indexOf(needle, at + 1);
        }
      }
      return null;
    },
    { needle, part, nth },
  );
}

async function problems(page) {
  return page.$$eval(".markers-panel .monaco-list-row", (rows) =>
    rows.map((r) => (r.getAttribute("aria-label") || r.textContent).replace(/\s+/g, " ").trim()),
  );
}

(async () => {
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--window-size=1400,900"],
    defaultViewport: { width: 1400, height: 900 },
  });
  try {
    const page = await browser.newPage();
    await page.goto(`${URL}/?folder=${encodeURIComponent(FOLDER)}`, { waitUntil: "domcontentloaded" });
    const row = `.explorer-folders-view .monaco-list-row[aria-label="${FILE}"]`;
    await page.waitForSelector(row, { timeout: 90000 });
    check(true, "VS Code's workbench is up, the explorer lists", FILE);

    // Open the net as a person would: a click in the explorer.
    await page.click(row);
    const opened = await until(
      page,
      (f) => {
        const tab = document.querySelector(".tabs-container .tab.active");
        const lines = document.querySelector(".monaco-editor .view-lines");
        return tab && tab.textContent.includes(f) && lines && lines.textContent.includes("defun");
      },
      FILE,
      30000,
    );
    check(!!opened, "the net is open in an editor", FILE);
    const lang = await until(
      page,
      () => {
        const el = document.getElementById("status.editor.mode");
        return el && el.textContent.trim() === "xpnet" && "xpnet";
      },
      null,
      20000,
    );
    check(lang === "xpnet", "the status bar's language mode is xpnet (the extension's language)");

    // pnet-lsp's diagnostic: a red squiggle in the editor ...
    const squiggles = await until(
      page,
      () => document.querySelectorAll(".monaco-editor .squiggly-error").length,
      null,
      60000,
    );
    check(squiggles > 0, "the editor shows an error squiggle", `${squiggles || 0} squiggle(s)`);
    await page.screenshot({ path: `${SHOTS}/1-error.png` });

    // ... and the Problems panel's entry (View: Problems, Ctrl+Shift+M).
    await page.keyboard.down("Control");
    await page.keyboard.down("Shift");
    await page.keyboard.press("KeyM");
    await page.keyboard.up("Shift");
    await page.keyboard.up("Control");
    await page.waitForSelector(".markers-panel .monaco-list-row", { timeout: 20000 }).catch(() => {});
    const before = await problems(page);
    for (const p of before) console.log(`     problem: ${p}`);
    check(
      before.some((p) => /pnet/.test(p) && /type|bool|long/i.test(p)),
      "the Problems panel lists pnet-lsp's type error",
      `${before.length} problem(s)`,
    );
    await page.screenshot({ path: `${SHOTS}/2-problems.png` });

    // Hover on a place name: pnet-lsp's hover gives its type.
    await page.click(".monaco-editor .view-lines");
    const at = await textPoint(page, 'place="counter"', "counter");
    let hover = null;
    if (check(!!at, "found the place name `counter` in the editor")) {
      await page.mouse.move(at.x - 30, at.y + 40);
      await sleep(300);
      await page.mouse.move(at.x, at.y, { steps: 5 });
      hover = await until(
        page,
        () => {
          const h = [...document.querySelectorAll(".monaco-hover")].find(
            (e) => e.offsetParent !== null && e.textContent.trim(),
          );
          return h && h.textContent.replace(/\s+/g, " ").trim();
        },
        null,
        20000,
      );
      console.log(`     hover: ${hover}`);
      check(!!hover && /long/.test(hover), "hovering `counter` shows its type (long)", hover);
      await page.screenshot({ path: `${SHOTS}/3-hover.png` });
      await page.mouse.move(5, 450);
    }

    // Go to definition (F12) on the place of a connection: the cursor moves to the
    // <place name="counter"> line.
    const use = await textPoint(page, '<connect-inout port="n" place="counter"', "counter");
    const placeLine =
      fs
        .readFileSync(path.join(FOLDER, FILE), "utf8")
        .split("\n")
        .findIndex((l) => l.includes('<place name="counter"')) + 1;
    if (check(!!use && placeLine > 0, "found the connection to `counter` and its place")) {
      await page.mouse.click(use.x, use.y);
      await sleep(500);
      // Document symbols: the breadcrumbs name the defun and the transition the cursor is in.
      const crumbs = await until(
        page,
        () => {
          const t = [...document.querySelectorAll(".breadcrumbs-control .monaco-breadcrumb-item")]
            .map((e) => e.textContent.trim())
            .join(" > ");
          return /countdown/.test(t) && /step/.test(t) && t;
        },
        null,
        10000,
      );
      check(!!crumbs, "the breadcrumbs show pnet-lsp's symbols (countdown > step)", crumbs);
      await page.keyboard.press("F12");
      const cursor = await until(
        page,
        (line) => {
          const el = document.getElementById("status.editor.selection");
          const t = el && el.textContent;
          return t && t.startsWith(`Ln ${line},`) && t;
        },
        placeLine,
        20000,
      );
      check(!!cursor, `F12 (go to definition) jumps to line ${placeLine}`, cursor);
    }

    // Fix it in the editor: double-click the wrong operand and type the right one.
    const wrong = await textPoint(page, process.env.WRONG || "true");
    if (check(!!wrong, `found the wrong operand \`${process.env.WRONG || "true"}\``)) {
      await page.mouse.click(wrong.x, wrong.y, { count: 2 });
      await sleep(300);
      await page.keyboard.type(process.env.RIGHT || "1L");
    }
    const gone = await until(
      page,
      () =>
        document.querySelectorAll(".monaco-editor .squiggly-error").length === 0 &&
        document.querySelectorAll(".markers-panel .monaco-list-row").length === 0,
      null,
      30000,
    );
    const after = await problems(page);
    const fixed = await textPoint(page, `- ${process.env.RIGHT || "1L"}`);
    check(!!fixed, `the editor now reads \`- ${process.env.RIGHT || "1L"}\``);
    check(!!gone, "after the fix, no squiggle and no problem is left", `${after.length} problem(s)`);
    await page.screenshot({ path: `${SHOTS}/4-fixed.png` });

    // An .xml net, associated with xpnet by the folder's settings (files.associations).
    const XML = process.env.XML_FILE;
    if (XML) {
      await page.click(`.explorer-folders-view .monaco-list-row[aria-label="${XML}"]`);
      const xmlLang = await until(
        page,
        (f) => {
          const tab = document.querySelector(".tabs-container .tab.active");
          const el = document.getElementById("status.editor.mode");
          return tab && tab.textContent.includes(f) && el && el.textContent.trim();
        },
        XML,
        20000,
      );
      check(xmlLang === "xpnet", `${XML} opens in the xpnet language mode`, xmlLang);
      const xmlSquiggles = await until(
        page,
        () => document.querySelectorAll(".monaco-editor .squiggly-error").length,
        null,
        30000,
      );
      check(xmlSquiggles > 0, `pnet-lsp checks ${XML}: an error squiggle`, `${xmlSquiggles || 0} squiggle(s)`);
      await page.screenshot({ path: `${SHOTS}/5-xml.png` });
    }
  } catch (e) {
    check(false, "the browser session", e && e.message);
  } finally {
    await browser.close();
  }
  console.log(failures ? `vscode-check: ${failures} check(s) failed` : "vscode-check: ok");
  console.log(`vscode: ${passed} passed, ${failures} failed`);
  process.exit(failures ? 1 : 0);
})();
