//! The Model Context Protocol core, domain-free: JSON-RPC 2.0 framing ([`jsonrpc`]), sessions
//! and version negotiation ([`session`]), method dispatch ([`server`]) and the 2026-07-28
//! multi round-trip requests ([`input`]), and how a person's yes is asked for ([`person`]:
//! elicitation, `input_required` rounds, the password pages of [`password`]). It calls a
//! [`Handler`] for tools (and later resources and prompts) and knows nothing of Loxone or of
//! the transport: HTTP (`crate::http`) and stdio (`crate::stdio`) both feed raw frames to
//! [`McpServer::handle_with_peer`] and write back the [`Reply`].

pub mod confirm;
pub mod handler;
pub mod input;
pub mod jsonrpc;
pub mod modern;
pub mod password;
pub mod peer;
pub mod person;
pub mod server;
pub mod session;
pub mod tasks;
pub mod updates;

pub use handler::{
    CallToolResult, Caller, Completion, CompletionRef, Content, GetPromptResult, Handler,
    Implementation, LogLevel, Peer, PeerHandle, PromptArgument, PromptDescriptor, PromptMessage,
    RequestContext, ResourceContents, ResourceDescriptor, ResourceTemplate, RpcError, SharedResult,
    ToolAnnotations, ToolDescriptor,
};
pub use peer::{Hub, Outlet, OutletPeer, Pending};
pub use server::{Era, McpConfig, McpServer, Reply};
pub use session::{ProtocolVersion, SessionError, SessionLimits, SessionState, SessionStore};
pub use tasks::{TaskLimits, TaskSupport};
