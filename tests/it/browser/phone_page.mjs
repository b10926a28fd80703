// Drives the inbox's remote listener as a phone would, for tests/it/browser.rs: a phone-sized
// touch screen over TLS (the inbox's self-signed certificate accepted, as a person does once
// after checking its fingerprint), pairing by the printed link, then a Claude form and a
// tool approval answered by taps; the page must fit the screen, with large touch targets,
// and be installable (its manifest, and its service worker, which keeps the app shell).
// Notifications allowed, it subscribes to Web Push, and its service worker shows a push.
// Usage: node phone_page.mjs <pairing link> <output dir> <push subscription JSON>
// Env: PLAYWRIGHT_CORE (the package directory), CHROMIUM (the browser binary).
// Prints one JSON line per step; exits non-zero on the first failure.
import { join } from "node:path";
import { pushTarget, step, withPage } from "./launch.mjs";

const [link, outDir, subscription] = process.argv.slice(2);
const origin = new URL(link).origin;
const phone = {
  isMobile: true,
  hasTouch: true,
  deviceScaleFactor: 2,
  ignoreHTTPSErrors: true,
  // A service worker is refused on a certificate the browser does not trust, even once
  // accepted by hand in a test: the same acceptance, made for the whole test browser.
  args: ["--ignore-certificate-errors"],
};

await withPage({ width: 390, height: 844 }, async (page, errors) => {
  await page.goto(link);
  await page.locator("#name").fill("Test phone");
  await page.locator("#pair").tap();
  await page.waitForURL((u) => u.pathname === "/" && !u.hash);
  await page.locator("#conn.live").waitFor();
  await page.waitForFunction(() => document.querySelectorAll("section.card").length === 3);
  const cookies = await page.context().cookies();
  const device = cookies.find((c) => c.name === "aqb_device");
  step("paired", { httpOnly: device && device.httpOnly, secure: device && device.secure, sameSite: device && device.sameSite });

  // Fits the screen, with touch targets of at least 44 CSS pixels.
  const layout = await page.evaluate(() => {
    // Visible ones: a folded "Always allow" hides its button.
    const hs = (sel) => [...document.querySelectorAll(sel)].map((e) => e.getBoundingClientRect().height).filter((h) => h > 0);
    return {
      scrollWidth: document.documentElement.scrollWidth,
      width: window.innerWidth,
      options: Math.min(...hs("label.opt")),
      buttons: Math.min(...hs("section.card button")),
    };
  });
  step("layout", layout);
  await page.screenshot({ path: join(outDir, "phone-page.png"), fullPage: true });

  // Installable: a manifest with icons, and a service worker that controls the page.
  const manifest = await page.evaluate(async () => {
    const href = document.querySelector('link[rel="manifest"]').href;
    return (await fetch(href)).json();
  });
  const worker = await page.evaluate(async () => {
    const reg = await Promise.race([
      navigator.serviceWorker.ready,
      new Promise((r) => setTimeout(() => r(null), 15000)),
    ]);
    return reg ? reg.active && reg.active.scriptURL : null;
  });
  step("installable", { display: manifest.display, icons: manifest.icons.length, worker });

  // Web Push. The browser's own push service (FCM, for Chromium) is out of reach in a closed
  // network, so PushManager.subscribe is stood in for by a subscription to the test's push
  // service, with the test's keys; the page's part is real: the inbox's key, a subscription
  // for notifications the user sees, handed to the inbox, which then pushes to it.
  await page.evaluate((sub) => {
    const made = { options: { applicationServerKey: null }, toJSON: () => sub, unsubscribe: async () => true };
    window.__push = {};
    PushManager.prototype.getSubscription = async () => null;
    PushManager.prototype.subscribe = async (opts) => {
      const key = new Uint8Array(opts.applicationServerKey);
      const b64 = btoa(String.fromCharCode(...key)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
      window.__push = { userVisibleOnly: opts.userVisibleOnly, key: b64 };
      made.options.applicationServerKey = key.buffer;
      return made;
    };
  }, JSON.parse(subscription));
  // The button shows once the page has its status (after the connection is live); a
  // permission granted before that would hide it for good.
  await page.locator("#notify").waitFor({ state: "visible" });
  await page.context().grantPermissions(["notifications"], { origin });
  await page.locator("#notify").tap();
  await page.locator("#push", { hasText: /push on|no push/ }).waitFor();
  const push = page.locator("#push");
  step("push", { state: await push.textContent(), why: await push.getAttribute("title"), ...(await page.evaluate(() => window.__push)) });

  // A push delivered to the service worker (as the push service would) is shown.
  const { cdp, registrationId } = await pushTarget(page, origin);
  const tag = JSON.stringify(["b", "s", "q"]);
  // Only an active worker takes a push: wait for it. A push delivered while it was still
  // starting (a loaded machine) is lost, so it is delivered again every 5 s until shown;
  // the tag makes them one notification.
  await page.evaluate(() => navigator.serviceWorker.ready.then(() => true));
  let shown = null;
  for (const until = Date.now() + 60000; !shown && Date.now() < until;) {
    await cdp.send("ServiceWorker.deliverPushMessage", {
      origin, registrationId,
      data: JSON.stringify({ title: "acp-mock-agent · demo", body: "Which option?", tag, url: "/" }),
    });
    for (const again = Date.now() + 5000; !shown && Date.now() < again;) {
      shown = await page.evaluate(async (tag) => {
        const reg = await navigator.serviceWorker.ready;
        const n = (await reg.getNotifications()).find((n) => n.tag === tag);
        return n ? { title: n.title, body: n.body, tag: n.tag, url: n.data && n.data.url } : null;
      }, tag);
      if (!shown) await new Promise((r) => setTimeout(r, 100));
    }
  }
  step("notified", shown || {});

  // What the agent was doing, beside its approval: its last message, plan, files, the diff.
  const story = page.locator("section.card").filter({ hasText: "Write src/store.rs" });
  await story.waitFor();
  const context = await story.evaluate((c) => ({
    said: c.querySelector(".digest .said")?.textContent,
    plan: [...c.querySelectorAll(".digest ul.plan li")].map((e) => e.textContent),
    files: c.querySelector(".digest .files")?.textContent,
    added: [...c.querySelectorAll("pre.diff .add")].map((e) => e.textContent),
    removed: [...c.querySelectorAll("pre.diff .del")].map((e) => e.textContent),
  }));
  await story.scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(outDir, "phone-context.png") });
  step("context", context);

  // The Claude form: Postgres, by a tap.
  const form = page.locator("section.card").filter({ hasText: "Which database?" });
  await form.getByText("Postgres", { exact: true }).tap();
  await form.getByRole("button", { name: "Submit" }).tap();
  await form.locator(".state.ok").waitFor();
  // The tool approval: one tap, undone within 3 s, then one tap that is sent.
  const approval = page.locator("section.card").filter({ hasText: "rm -rf build" });
  const command = await approval.locator(".context pre").first().textContent();
  const yes = approval.getByRole("button", { name: "Yes", exact: true });
  await yes.tap();
  await approval.getByRole("button", { name: "Undo" }).tap();
  await page.waitForTimeout(3500);
  const undone = { enabled: await yes.isEnabled(), pending: !(await approval.evaluate((c) => c.classList.contains("resolved"))) };
  step("undone", undone);
  await yes.tap();
  await approval.locator(".state.ok").waitFor();
  step("answered", { command, form: await form.locator(".state").textContent(), approval: await approval.locator(".state").textContent() });
  await page.screenshot({ path: join(outDir, "phone-page-answered.png"), fullPage: true });

  // The test answers the story's approval from the CLI: it shows in the history.
  const answered = page.locator("#history li").filter({ hasText: "Write src/store.rs" });
  await answered.waitFor({ state: "attached" });
  await page.locator("#history summary").tap();
  await page.screenshot({ path: join(outDir, "phone-history.png"), fullPage: true });
  step("history", { text: await answered.textContent(), count: await page.locator("#history-n").textContent() });

  // The app shell opens without the inbox: served by the service worker.
  await page.context().setOffline(true);
  await page.reload();
  const shell = await page.locator("header h1").textContent();
  await page.context().setOffline(false);
  step("offline", { shell });
  if (errors.length) throw new Error(`page errors: ${errors.join("; ")}`);
  step("done");
}, phone);
