//! The integration tests, as one test binary (issue 42): each `tests/it/X.rs` is a module of
//! it, sharing one build of the helpers in `common/` and one link of the crate, instead of a
//! binary per file each compiling and linking them again. `cargo test --test it X::` runs one
//! file's tests; `tests/install.rs` is a binary of its own, as it needs its own `main`.
//!
//! All the tests share one process: none may change what the process holds for all of them
//! (its environment, working folder, signal dispositions, limits), and a file descriptor a
//! test makes must be close-on-exec, or the children other tests start at the same moment
//! inherit it. A child gets its environment from its `Command`.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)] // denied in src/router/ only (clippy.toml)

mod common;
mod policy_args;
mod policy_shell;
mod router_check;

mod acp_schema;
mod acpx;
mod agent_matrix;
mod agent_shapes;
mod browser;
mod client_models;
mod control;
mod demo;
mod dialects;
mod digest;
mod doctor;
mod faults;
mod fixtures;
mod inbox;
mod interop_claude;
mod interop_codex;
mod interop_sdk;
mod journal;
mod layout;
mod linger;
mod linger_joined;
mod linger_joined_review;
mod linger_props;
mod linger_review;
mod lossless;
mod method_names;
mod nats;
mod nats_cluster;
mod npm;
mod options;
mod policy_bridge;
mod policy_cli;
mod policy_corpus;
mod proxy;
mod push;
mod questions;
mod registry_agents;
mod regressions;
mod release;
mod remote;
mod ring_review;
mod ringing;
mod router_props;
mod schemas;
mod security;
mod setup;
mod stderr;
mod v1_routes;
mod wall;
mod wrappers;
