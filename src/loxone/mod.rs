//! The Miniserver adapter: reads the structure file into the [`crate::home`] model
//! ([`structure`]) and talks Loxone HTTP to a Miniserver ([`client`]; secured commands hashed
//! by [`secured`]); [`ws`] is the WebSocket wire format (headers, event tables) and a
//! blocking reader; [`message_center`] reads the Message Center and the pushed notifications
//! into the house's alerts. It knows nothing of MCP.

pub mod answer;
pub mod backoff;
pub mod camera;
pub mod client;
pub mod commands;
pub mod config;
pub mod crypto;
pub mod feed;
pub mod live;
pub mod message_center;
pub mod picture;
pub mod poll;
pub mod secured;
pub mod stats;
pub mod structure;
pub mod token;
pub mod ws;
