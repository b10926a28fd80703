//! Programs around the bridge, not part of it: the terminal demo, `setup`, `doctor`, the
//! command lines of `questions` and `inbox`, and the scripted mock agent. They are compiled
//! into the binaries (`src/main.rs`; the mock agent also into `src/bin/acp-mock-agent.rs`),
//! not the library: they use it like any client or agent would, and nothing in it depends on
//! them.

pub mod agents;
pub mod demo;
pub mod doctor;
pub mod inbox;
pub mod mock_agent;
pub mod policy;
pub mod questions;
pub mod sessions;
pub mod setup;
pub mod shapes;
