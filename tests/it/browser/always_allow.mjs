// "Always allow" on the Questions page, for tests/it/browser.rs: the tool approval's card shows
// the rule it will write for the choice made, and its button answers and writes it.
// Usage: node always_allow.mjs <page URL with #token=...> <output dir>
import { join } from "node:path";
import { step, withPage } from "./launch.mjs";

const [url, outDir] = process.argv.slice(2);

await withPage({ width: 860, height: 980 }, async (page, errors) => {
  await page.goto(url);
  const card = page.locator("section.card").filter({ hasText: "cargo test" });
  await card.waitFor();
  await card.locator("details.always summary").click();
  await card.getByLabel("Which agents").selectOption("every");
  step("every", { rule: await card.locator("pre.rule").textContent() });
  await card.getByLabel("Which agents").selectOption("this");
  await card.getByLabel("Where").selectOption("project");
  const rule = await card.locator("pre.rule").textContent();
  await page.screenshot({ path: join(outDir, "always-allow.png"), fullPage: true });
  step("preview", { rule, summary: await card.locator("details.always summary").textContent() });
  await card.locator("button.always-go").click();
  await card.locator(".state.ok").waitFor();
  step("answered", { state: await card.locator(".state").textContent() });
  if (errors.length) throw new Error(`page errors: ${errors.join("; ")}`);
  step("done");
});
