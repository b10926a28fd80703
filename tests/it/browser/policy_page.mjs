// The approval policy on the Questions page, for tests/it/browser.rs: the approvals it decided
// (listed from bridge.status when the page opens, then live from `decided` events) and the
// warning of a broken file. The test drives the bridge between the steps: it waits for each
// step line before it acts.
// Usage: node policy_page.mjs <page URL with #token=...> <output dir>
import { join } from "node:path";
import { step, withPage } from "./launch.mjs";

const [url, outDir] = process.argv.slice(2);
const items = (page) => page.locator("#decided li");

await withPage({ width: 860, height: 900 }, async (page, errors) => {
  await page.goto(url);
  await page.locator("#conn.live").waitFor();
  await items(page).first().waitFor({ state: "attached" });
  await page.locator("#decided summary").click();
  step("listed", { n: await items(page).count(), text: await items(page).first().textContent() });

  // The test makes a second decision now.
  await page.waitForFunction(() => document.querySelectorAll("#decided li").length === 2);
  step("live", { text: await items(page).first().textContent(), count: await page.locator("#decided-n").textContent() });

  // The test breaks the file and makes a third decision (the last good rules).
  await page.locator("#policy-alert").waitFor({ state: "visible" });
  await page.screenshot({ path: join(outDir, "policy-page.png"), fullPage: true });
  step("alert", { text: await page.locator("#policy-alert").textContent() });
  if (errors.length) throw new Error(`page errors: ${errors.join("; ")}`);
  step("done");
});
