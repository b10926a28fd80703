// The Questions page's service worker: it keeps the app shell (the page, its manifest and
// icons) so the app opens without the network, and shows notifications for the page. The
// questions themselves always come live from the inbox or bridge: calls and WebSockets are
// never cached.
"use strict";
const SHELL = "acpqb-shell-v1";
const FILES = ["/", "/manifest.webmanifest", "/icon-192.png", "/icon-512.png"];

self.addEventListener("install", (e) => {
  e.waitUntil(caches.open(SHELL).then((c) => c.addAll(FILES)).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (e) => {
  e.waitUntil(
    caches.keys()
      .then((keys) => Promise.all(keys.filter((k) => k !== SHELL).map((k) => caches.delete(k))))
      .then(() => self.clients.claim()),
  );
});

// The network first, so a new page is used as soon as the inbox serves it; the cached
// shell when the inbox cannot be reached.
self.addEventListener("fetch", (e) => {
  const url = new URL(e.request.url);
  if (e.request.method !== "GET" || url.origin !== location.origin || !FILES.includes(url.pathname)) return;
  e.respondWith(
    fetch(e.request)
      .then((r) => {
        if (r.ok) {
          const copy = r.clone();
          caches.open(SHELL).then((c) => c.put(url.pathname, copy));
        }
        return r;
      })
      .catch(() => caches.match(url.pathname)),
  );
});

// A push from the inbox (Web Push, on a paired device): one notification per question,
// tagged as the open page tags its own, so the two never show twice. It names the agent and
// the question only; the page shows the rest. A tool approval, or a choice of two, carries
// its answers as actions ("Allow once" / "Deny", never "Always allow"), which this worker
// sends itself; where the platform has no actions (iOS), a tap opens the question.
self.addEventListener("push", (e) => {
  let p = {};
  try { p = e.data ? e.data.json() : {}; } catch {}
  const actions = Array.isArray(p.actions) && p.question ? p.actions : [];
  e.waitUntil(self.registration.showNotification(p.title || "acp-question-bridge", {
    body: p.body || "An agent is waiting for you.",
    tag: p.tag || undefined,
    icon: "/icon-192.png",
    renotify: !!p.tag,
    actions: actions.map((a) => ({ action: a.action, title: a.title })),
    data: { url: p.url || "/", question: p.question || null, actions },
  }));
});

function openPage(path) {
  const url = new URL(path || "/", location.origin);
  return self.clients.matchAll({ type: "window" }).then((all) => {
    for (const c of all) {
      if (new URL(c.url).origin === url.origin && "navigate" in c) return c.navigate(url.href).then((w) => w && w.focus());
    }
    return self.clients.openWindow(url.href);
  });
}

// Sends the answer of the action tapped on notification `n`, as this device (its cookie goes
// with the call, as with the page's); no page is opened. The inbox checks it as any answer:
// one after the question was answered (here, elsewhere, or by a second tap) is refused, and
// a second notification says so.
self.answerFromNotification = async (n, action) => {
  const d = (n && n.data) || {};
  const act = (d.actions || []).find((a) => a.action === action);
  if (!act || !d.question) return openPage(d.url);
  const params = { bridge: d.question.bridge, sessionId: d.question.sessionId, questionId: d.question.questionId };
  const method = act.reject ? "questions.reject" : "questions.answer";
  if (!act.reject) params.answers = act.answers;
  let said = null;
  try {
    const r = await fetch("/", {
      method: "POST", credentials: "same-origin", headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    const body = await r.json();
    if (body.error) {
      said = body.error.code === -32004
        ? "This question was already answered: your tap was not used."
        : `Not answered (${body.error.message}): open the page to answer it.`;
    }
  } catch (e) {
    said = "Not answered: the inbox cannot be reached. Open the page to answer it.";
  }
  if (said) {
    await self.registration.showNotification(n.title || "acp-question-bridge", {
      body: said, tag: (n.tag || "") + "#not-used", icon: "/icon-192.png", data: { url: d.url || "/" },
    });
  }
  return said;
};

// A tap on a notification's action answers; a tap on the notification opens the page on
// its question (or focuses it).
self.addEventListener("notificationclick", (e) => {
  e.notification.close();
  if (e.action) return e.waitUntil(self.answerFromNotification(e.notification, e.action));
  e.waitUntil(openPage(e.notification.data && e.notification.data.url));
});
