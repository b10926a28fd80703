//! Programs around the bridge, not part of it: the terminal demo and the scripted mock
//! agent. They use the library like any client or agent would (through the binaries and
//! the wire), and nothing in the bridge's core depends on them.

pub mod demo;
pub mod mock_agent;
pub mod shapes;
