// Drives the inbox's page in headless Chromium with playwright-core, for tests/it/browser.rs:
// questions from two agents, one approved and one rejected on the page; a reload shows
// what is left.
// Usage: node inbox_page.mjs <inbox page URL with #token=...> <output dir>
// Env: PLAYWRIGHT_CORE (the package directory), CHROMIUM (the browser binary).
// Prints one JSON line per step; exits non-zero on the first failure.
import { join } from "node:path";
import { step, withPage } from "./launch.mjs";

const [url, outDir] = process.argv.slice(2);

await withPage({ width: 860, height: 1100 }, async (page, errors) => {
  await page.goto(url);
  await page.locator("#conn.live").waitFor();
  const cards = page.locator("section.card");
  await page.waitForFunction(() => document.querySelectorAll("section.card").length === 3);
  const groups = await page.locator(".group").count();
  const title = await page.title();
  step("shown", { groups, title, heading: await page.locator("header h1").textContent() });
  await page.screenshot({ path: join(outDir, "inbox-page.png"), fullPage: true });

  // Agent A's approval: approved. Agent B's approval: rejected.
  const approvals = cards.filter({ hasText: "rm -rf build" });
  const first = approvals.nth(0);
  const firstAgent = await first.getAttribute("data-bridge");
  // One tap answers a tool approval (after 3 s to undo).
  await first.getByRole("button", { name: "Yes", exact: true }).click();
  await first.locator(".state.ok").waitFor();
  step("approved", { bridge: firstAgent, state: await first.locator(".state").textContent() });
  const second = page.locator(`section.card[data-bridge]:not([data-bridge="${firstAgent}"])`).filter({ hasText: "rm -rf build" });
  const secondAgent = await second.getAttribute("data-bridge");
  await second.getByRole("button", { name: "No", exact: true }).click();
  await second.locator(".state.ok").waitFor();
  step("rejected", { bridge: secondAgent, state: await second.locator(".state").textContent() });

  await page.reload();
  await page.locator("#conn.live").waitFor();
  await page.waitForFunction(() => document.querySelectorAll("section.card").length === 1);
  const left = page.locator("section.card");
  step("reloaded", {
    left: await left.count(),
    text: await left.locator(".prompt").first().textContent(),
    title: await page.title(),
  });
  await page.screenshot({ path: join(outDir, "inbox-page-after.png"), fullPage: true });
  if (errors.length) throw new Error(`page errors: ${errors.join("; ")}`);
  step("done");
});
