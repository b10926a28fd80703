// Drives the Questions page in headless Chromium with playwright-core, for tests/browser.rs.
// Usage: node questions_page.mjs <page URL with #token=...> <output dir>
// Env: PLAYWRIGHT_CORE (the package directory), CHROMIUM (the browser binary).
// Prints one JSON line per step; exits non-zero on the first failure.
import { createRequire } from "node:module";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const require = createRequire(import.meta.url);
const { chromium } = require(process.env.PLAYWRIGHT_CORE);
const [url, outDir] = process.argv.slice(2);
const step = (name, extra = {}) => console.log(JSON.stringify({ step: name, ...extra }));
const TIMEOUT = 20000;

const profile = mkdtempSync(join(tmpdir(), "acp-qb-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  viewport: { width: 860, height: 980 },
  // As root in a closed network: no sandbox, nothing that phones home.
  args: [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
try {
  const page = context.pages()[0] || (await context.newPage());
  page.setDefaultTimeout(TIMEOUT);
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(url);
  const card = page.locator("section.card").filter({ hasText: "Which database?" });
  await card.waitFor();
  step("shown", { conn: await page.locator("#conn").textContent() });
  if (page.url().includes("token=")) throw new Error(`the token stayed in the address bar: ${page.url()}`);

  // A reload while the question is pending shows it again.
  await page.reload();
  await card.waitFor();
  step("reloaded");

  await card.getByLabel("SQLite").check();
  await card.getByLabel("Auth", { exact: true }).check();
  await card.getByLabel("Search", { exact: true }).check();
  await card.getByLabel("Answer", { exact: true }).fill("Ship it on Friday");
  await page.locator("#conn.live").waitFor();
  await page.screenshot({ path: join(outDir, "questions-page.png"), fullPage: true });
  step("filled");

  await card.getByRole("button", { name: "Submit" }).click();
  await card.locator(".state.ok").waitFor();
  step("answered", { state: await card.locator(".state").textContent() });
  await page.locator("#empty").waitFor({ state: "visible" });
  step("empty", { text: await page.locator("#empty").textContent() });
  await page.screenshot({ path: join(outDir, "questions-page-answered.png"), fullPage: true });
  if (errors.length) throw new Error(`page errors: ${errors.join("; ")}`);
  step("done");
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
