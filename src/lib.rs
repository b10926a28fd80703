//! acp-question-bridge: an ACP stdio proxy between an IDE client and an agent CLI that
//! forwards ordinary traffic untouched and handles the question extension.
//!
//! Module map (see docs/ARCHITECTURE.md):
//! - [`codec`]: newline framing with a line limit;
//! - [`envelope`]: borrowed classification of a JSON-RPC line;
//! - [`scan`]: the fast path of classification, for lines that are only forwarded;
//! - [`methods`]: the method names, below everything;
//! - [`jsonrpc`]: builders for bridge-made messages;
//! - [`router`]: the sans-IO routing core;
//! - [`bridge`]: the I/O shell (tasks, channels, child, signals, shutdown);
//! - [`child`]: the agent process;
//! - [`cli`], [`logging`]: the command line and logs;
//! - [`events`]: question lifecycle events, seen by [`control`] (the control server, the
//!   Questions page and the clients of both), [`journal`] (`--journal`) and [`notify`]
//!   (`--on-question`);
//! - [`inbox`]: one page and API over every bridge of a user (its roster, NATS, and the TLS
//!   listener for a phone);
//! - [`private_file`]: files only their owner may read.
//!
//! The demo, the mock agent and the command lines of the subcommands (`questions`, `inbox`,
//! `doctor`, ...) are programs around the bridge, compiled into the binaries (`src/tools/`),
//! not part of this library. [`cli`] and [`logging`] are there for the binaries: no other
//! module of the library uses them.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)] // denied in src/router/ only (clippy.toml)

pub mod agents;
pub mod bridge;
pub mod capabilities;
pub mod child;
pub mod cli;
pub mod clients;
pub mod codec;
pub mod control;
pub mod envelope;
pub mod events;
pub mod inbox;
pub mod journal;
pub mod jsonrpc;
pub mod linger;
pub mod logging;
pub mod methods;
pub mod notify;
pub mod policy;
pub mod private_file;
pub mod questions;
pub mod rawjson;
pub mod ring;
pub mod router;
pub mod scan;
pub mod wall;

pub use bridge::{run, Config};
