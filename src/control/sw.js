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
// the question only; the page shows the rest.
self.addEventListener("push", (e) => {
  let p = {};
  try { p = e.data ? e.data.json() : {}; } catch {}
  e.waitUntil(self.registration.showNotification(p.title || "acp-question-bridge", {
    body: p.body || "An agent is waiting for you.",
    tag: p.tag || undefined,
    icon: "/icon-192.png",
    data: { url: p.url || "/" },
  }));
});

// A tap on a notification opens (or focuses) the page.
self.addEventListener("notificationclick", (e) => {
  e.notification.close();
  const url = new URL((e.notification.data && e.notification.data.url) || "/", location.origin);
  e.waitUntil(
    self.clients.matchAll({ type: "window" }).then((all) => {
      for (const c of all) if (new URL(c.url).origin === url.origin && "focus" in c) return c.focus();
      return self.clients.openWindow(url.href);
    }),
  );
});
