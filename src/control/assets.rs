//! What makes the Questions page an installable app ("Add to Home Screen"): its web app
//! manifest, its service worker (the app shell offline, notifications) and its icons. They
//! hold no secret and are served without a token, like the page.

use http::{HeaderValue, Response};
use jsonrpsee::server::{HttpBody, HttpResponse};

const MANIFEST: &str = r##"{
  "name": "acp-question-bridge",
  "short_name": "Questions",
  "description": "Your agents' questions and approvals, answered from anywhere.",
  "start_url": "/",
  "scope": "/",
  "display": "standalone",
  "background_color": "#f6f7f9",
  "theme_color": "#2f6fed",
  "icons": [
    {"src": "/icon-192.png", "sizes": "192x192", "type": "image/png", "purpose": "any maskable"},
    {"src": "/icon-512.png", "sizes": "512x512", "type": "image/png", "purpose": "any maskable"}
  ]
}
"##;
const SERVICE_WORKER: &str = include_str!("sw.js");
const ICON_192: &[u8] = include_bytes!("icon-192.png");
const ICON_512: &[u8] = include_bytes!("icon-512.png");

/// The asset at `path`, if it is one.
pub fn asset(path: &str) -> Option<HttpResponse> {
    let (body, kind): (HttpBody, &'static str) = match path {
        "/manifest.webmanifest" => (MANIFEST.into(), "application/manifest+json"),
        "/sw.js" => (SERVICE_WORKER.into(), "text/javascript; charset=utf-8"),
        "/icon-192.png" => (ICON_192.to_vec().into(), "image/png"),
        "/icon-512.png" => (ICON_512.to_vec().into(), "image/png"),
        _ => return None,
    };
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert("content-type", HeaderValue::from_static(kind));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    // The service worker is checked for a new version at every visit.
    h.insert("cache-control", HeaderValue::from_static("no-cache"));
    Some(r)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_manifest_is_json_and_names_icons_that_are_served() {
        let m: serde_json::Value = serde_json::from_str(super::MANIFEST).unwrap();
        for icon in m["icons"].as_array().unwrap() {
            assert!(super::asset(icon["src"].as_str().unwrap()).is_some());
        }
        assert!(super::ICON_192.starts_with(b"\x89PNG"));
        assert!(super::asset("/sw.js").is_some() && super::asset("/other").is_none());
    }
}
