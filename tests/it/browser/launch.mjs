// What both page scripts share: playwright-core from $PLAYWRIGHT_CORE, Debian's Chromium
// from $CHROMIUM, launched headless as root in a closed network (no sandbox, nothing that
// phones home), a throw-away profile, and one JSON line per step on stdout.
import { createRequire } from "node:module";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const require = createRequire(import.meta.url);
const { chromium } = require(process.env.PLAYWRIGHT_CORE);

export const TIMEOUT = 20000;
export const step = (name, extra = {}) => console.log(JSON.stringify({ step: name, ...extra }));

// Runs `body(page, errors)` in a fresh browser, then closes it and removes the profile.
// `options`: more context options (a phone: isMobile, hasTouch, ignoreHTTPSErrors...).
export async function withPage(viewport, body, options = {}) {
  const profile = mkdtempSync(join(tmpdir(), "acp-qb-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    viewport,
    ...options,
    args: [
      "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
      ...(options.args || []),
    ],
  });
  try {
    const page = context.pages()[0] || (await context.newPage());
    page.setDefaultTimeout(TIMEOUT);
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await body(page, errors);
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

// The registration id of the service worker of `origin` (for CDP's deliverPushMessage).
export async function pushTarget(page, origin) {
  const cdp = await page.context().newCDPSession(page);
  const registered = new Promise((resolve) => cdp.on("ServiceWorker.workerRegistrationUpdated", ({ registrations }) => {
    const r = registrations.find((r) => !r.isDeleted && r.scopeURL.startsWith(origin));
    if (r) resolve(r.registrationId);
  }));
  await cdp.send("ServiceWorker.enable");
  return { cdp, registrationId: await registered };
}
