// A push with actions, answered by the service worker with no page open, for
// tests/it/browser.rs: a phone pairs with the inbox and subscribes to Web Push (as
// phone_page.mjs does), the inbox's real push of a tool approval (as the test's push service
// received it, decrypted) is delivered to the worker, the page is closed, and a tap on
// "Allow once" is the worker's own call; a second tap is refused, in a second notification.
// Usage: node push_actions.mjs <pairing link> <output dir> <push subscription JSON> <payload file>
// Env: PLAYWRIGHT_CORE (the package directory), CHROMIUM (the browser binary).
// Prints one JSON line per step; exits non-zero on the first failure.
import { existsSync, readFileSync } from "node:fs";
import { pushTarget, step, withPage } from "./launch.mjs";

const [link, , subscription, payloadFile] = process.argv.slice(2);
const origin = new URL(link).origin;
const phone = {
  isMobile: true,
  hasTouch: true,
  ignoreHTTPSErrors: true,
  args: ["--ignore-certificate-errors"],
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

await withPage({ width: 390, height: 844 }, async (page) => {
  await page.goto(link);
  await page.locator("#name").fill("Push phone");
  await page.locator("#pair").tap();
  await page.waitForURL((u) => u.pathname === "/" && !u.hash);
  await page.locator("#conn.live").waitFor();
  // The browser's push service is out of reach: its subscription is stood in for by one to
  // the test's push service (phone_page.mjs says why).
  await page.evaluate((sub) => {
    const made = { options: { applicationServerKey: null }, toJSON: () => sub, unsubscribe: async () => true };
    PushManager.prototype.getSubscription = async () => null;
    PushManager.prototype.subscribe = async (opts) => {
      made.options.applicationServerKey = new Uint8Array(opts.applicationServerKey).buffer;
      return made;
    };
  }, JSON.parse(subscription));
  // The button shows once the page has its status (after the connection is live); a
  // permission granted before that would hide it for good.
  await page.locator("#notify").waitFor({ state: "visible" });
  await page.context().grantPermissions(["notifications"], { origin });
  await page.locator("#notify").tap();
  await page.locator("#push", { hasText: "push on" }).waitFor();
  step("subscribed");

  // The inbox's push, once the question rang.
  let payload = null;
  for (const until = Date.now() + 90000; !payload && Date.now() < until;) {
    if (existsSync(payloadFile)) payload = readFileSync(payloadFile, "utf8");
    else await sleep(100);
  }
  if (!payload) throw new Error("the inbox pushed nothing");
  const p = JSON.parse(payload);
  const { cdp, registrationId } = await pushTarget(page, origin);
  await page.evaluate(() => navigator.serviceWorker.ready.then(() => true));
  let shown = null;
  for (const until = Date.now() + 60000; !shown && Date.now() < until;) {
    await cdp.send("ServiceWorker.deliverPushMessage", { origin, registrationId, data: payload });
    for (const again = Date.now() + 5000; !shown && Date.now() < again;) {
      shown = await page.evaluate(async (tag) => {
        const reg = await navigator.serviceWorker.ready;
        // (The page, open, showed its own notification when the question rang: the push's
        // takes its place, with the actions.)
        const n = (await reg.getNotifications()).find((n) => n.tag === tag && n.actions.length);
        return n ? { title: n.title, actions: n.actions.map((a) => a.title), url: n.data && n.data.url } : null;
      }, p.tag);
      if (!shown) await sleep(100);
    }
  }
  step("notified", shown || {});

  // No page open: the worker answers by itself, as the device.
  const context = page.context();
  const worker = context.serviceWorkers().find((w) => w.url().startsWith(origin))
    || (await context.waitForEvent("serviceworker"));
  await page.close();
  const first = await worker.evaluate(async (tag) => {
    const n = (await self.registration.getNotifications()).find((n) => n.tag === tag);
    if (!n) return { missing: true };
    const data = n.data;
    const said = await self.answerFromNotification(n, "a0");
    return { said, data };
  }, p.tag);
  step("tapped", { said: first.said ?? null, missing: !!first.missing });
  // A second tap (on another device's copy, say): the inbox refuses it, and a second
  // notification says so.
  const second = await worker.evaluate(async ([tag, data]) => {
    const said = await self.answerFromNotification({ tag, title: "t", data }, "a0");
    const n = (await self.registration.getNotifications()).find((n) => n.tag === tag + "#not-used");
    return { said, body: n ? n.body : null };
  }, [p.tag, first.data]);
  step("refused", second);
}, phone);
step("done");
