//! The Miniserver adapter: reads the structure file into the [`crate::home`] model
//! ([`structure`]) and talks Loxone HTTP to a Miniserver ([`client`]; secured commands hashed
//! by [`secured`]). It knows nothing of MCP.

pub mod client;
pub mod commands;
pub mod controller;
pub mod poll;
pub mod secured;
pub mod structure;
