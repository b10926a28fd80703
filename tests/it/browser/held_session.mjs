// Drives the inbox's page in headless Chromium with playwright-core, for tests/it/browser.rs:
// the approval of a session that a `--linger` holder keeps, with no editor attached, is
// listed and approved with one tap.
// First the holder's own page says what it keeps for the editor.
// Usage: node held_session.mjs <inbox page URL with #token=...> <output dir> <holder page URL>
// Env: PLAYWRIGHT_CORE (the package directory), CHROMIUM (the browser binary).
// Prints one JSON line per step; exits non-zero on the first failure.
import { join } from "node:path";
import { step, withPage } from "./launch.mjs";

const [url, outDir, holderUrl] = process.argv.slice(2);

await withPage({ width: 860, height: 1100 }, async (page, errors) => {
  await page.goto(holderUrl);
  await page.locator("#conn.live").waitFor();
  await page.locator("#held li").first().waitFor();
  step("held", {
    state: await page.locator("#held-state").textContent(),
    sessions: await page.locator("#held li").allTextContents(),
    shown: await page.locator("section.card .shown").first().textContent(),
  });
  await page.screenshot({ path: join(outDir, "held-session-holder.png"), fullPage: true });

  await page.goto(url);
  await page.locator("#conn.live").waitFor();
  await page.waitForFunction(() => document.querySelectorAll("section.card").length === 1);
  const card = page.locator("section.card").first();
  step("shown", { text: await card.locator(".prompt").first().textContent() });
  await card.getByRole("button", { name: "Yes", exact: true }).click();
  await card.locator(".state.ok").waitFor();
  step("approved", { state: await card.locator(".state").textContent() });
  await page.screenshot({ path: join(outDir, "held-session.png"), fullPage: true });
  if (errors.length) throw new Error(`page errors: ${errors.join("; ")}`);
  step("done");
});
