// Drives the Questions page in headless Chromium with playwright-core, for tests/it/browser.rs.
// Usage: node questions_page.mjs <page URL with #token=...> <output dir>
// Env: PLAYWRIGHT_CORE (the package directory), CHROMIUM (the browser binary).
// Prints one JSON line per step; exits non-zero on the first failure.
import { join } from "node:path";
import { step, withPage } from "./launch.mjs";

const [url, outDir] = process.argv.slice(2);

await withPage({ width: 860, height: 980 }, async (page, errors) => {
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
});
