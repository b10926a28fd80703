//! What a handler is given: a request or a notification, the same view from the scanned
//! and the classified path. Below both the dispatch table and the handlers, so that neither
//! imports the other's module for it.

use std::time::Instant;

use bytes::Bytes;

use crate::envelope::RequestId;

/// A request, as a handler sees it (both paths give the same view).
pub(super) struct Req<'a> {
    pub id: RequestId,
    pub method: &'a str,
    /// The `params` value's JSON text, already checked.
    pub params: Option<&'a str>,
    /// The line exactly as read.
    pub line: &'a Bytes,
    pub now: Instant,
}

/// A notification, as a handler sees it.
pub(super) struct Note<'a> {
    /// The `params` value's JSON text, already checked.
    pub params: Option<&'a str>,
    /// The line exactly as read.
    pub line: &'a Bytes,
}
