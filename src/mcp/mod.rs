//! The Model Context Protocol core, domain-free: JSON-RPC 2.0 framing, sessions, version
//! negotiation and method dispatch. It calls a [`Handler`] for tools (and later resources and
//! prompts) and knows nothing of Loxone or HTTP.

pub mod handler;

pub use handler::{
    CallToolResult, Content, Handler, Implementation, RequestContext, RpcError, ToolAnnotations,
    ToolDescriptor,
};
