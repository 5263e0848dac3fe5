//! The house's MCP handler: one dispatcher over the tool catalogue ([`crate::tools`]), the
//! resources ([`crate::resources`]) and the prompts ([`crate::prompts`]). None of the three
//! imports another's dispatch: the tools know nothing of resources or prompts; resources run
//! tools; prompts embed resources. What a request needs of all three (the server's
//! instructions, cache hints, completion of a template variable or a prompt argument) is
//! decided here.
//!
//! The handler is [`HomeTools`] (the catalogue bound to a house, with the response caches) so
//! that every transport and test serves it as before; this module is where it becomes the
//! MCP [`Handler`].

use serde_json::{Map, Value};

use crate::home::Profile;
use crate::mcp::modern::CacheHint;
use crate::mcp::{
    CallToolResult, Completion, CompletionRef, GetPromptResult, Handler, Implementation,
    PromptDescriptor, RequestContext, ResourceContents, ResourceDescriptor, ResourceTemplate,
    RpcError, SharedResult, TaskSupport, ToolDescriptor,
};
use crate::tools::cache::age_by;
use crate::tools::HomeTools;
use crate::{prompts, resources};

const INSTRUCTIONS: &str = "home-mcp controls a Loxone smart home. Start with \
get_home_summary (what is on, open, playing, armed) or list_rooms / list_devices to see what \
exists; devices and rooms are named as in the Loxone app (German or English, accents optional) \
or by UUID. When a name exists in several rooms, add the room. control_device operates one \
device (on/off, dim 0-100 %, blinds up/down/stop or a position 0 open .. 100 closed, moods, \
colours); control_multiple_devices and control_room_devices do several at once. Room- and \
house-wide tools (lights, blinds, room devices, room modes) accept dry_run: true to preview the \
exact commands: use it before acting on a whole house. House-wide actions, the alarm, gates \
and doors, large batches and workflows with such steps are confirmed by the user, whom the \
server asks itself (elicitation); nothing is sent without that answer. set_room_temperature (°C) and \
set_room_mode (auto, heating, cooling, comfort, eco, off) run the climate; control_audio_zone \
and set_audio_volume the music. Alarms are operated only with arm_alarm / disarm_alarm / \
acknowledge_alarm; gates and doors are opened only for keys whose owner allows it. Status reads per family: get_lights_status, get_blinds_status, \
get_climate_status, get_audio_status, get_security_status, get_sensors_status. Values the \
Miniserver has not reported are null, never guessed.";

/// The instructions of the lean profile (issue 33): its tools only, for small models.
const LEAN_INSTRUCTIONS: &str = "home-mcp controls a Loxone smart home. Start with \
house_status (what is on, open, playing, armed; about: lights, blinds, climate, audio, \
security, sensors) or find_devices. Devices and rooms are named as in the Loxone app (German \
or English, accents optional) or by UUID; add the room when a name exists in several. control \
does one action on a device, or with scope on a room, a category or the whole house \
(dry_run: true previews the commands); climate sets a room's temperature or mode; audio plays \
music; alarm arms, disarms and acknowledges; history tells a device's past or the house's \
energy (kWh) over a period; door lists the doorbell's rings and shows who is at the door; \
alerts lists and confirms the Miniserver's \
alerts; workflows runs the owner's stored ones. House-wide actions, the alarm, gates and doors \
are confirmed by the user, whom the server asks itself; nothing is sent without that answer. \
Values the Miniserver has not reported are null, never guessed.";

impl Handler for HomeTools {
    fn server_info(&self) -> Implementation {
        Implementation {
            name: "home-mcp".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            title: Some("Loxone home (home-mcp)".into()),
        }
    }

    fn instructions(&self) -> String {
        self.instructions_for(None)
    }

    /// The instructions name the tools of the caller's profile.
    fn instructions_for(&self, caller: Option<&crate::mcp::Caller>) -> String {
        match self.profile_for(caller) {
            Profile::Full => INSTRUCTIONS,
            Profile::Lean => LEAN_INSTRUCTIONS,
        }
        .to_string()
    }

    /// The catalogues (tools, prompts, templates, the server's description) change only with
    /// the binary: an hour; public, except the tool list, which depends on the caller's tool
    /// profile (its key's). The resource list and contents are the house's (private)
    /// and live as long as the resource cache keeps them (0 when it is off); the cache drops
    /// them at every change of the house and structure reload, so a client re-reading after
    /// the hint sees at most what the server would serve itself.
    fn cache_hint(&self, method: &str, _uri: Option<&str>) -> CacheHint {
        match method {
            "server/discover" | "tools/list" | "prompts/list" | "resources/templates/list" => {
                CacheHint {
                    ttl_ms: 3_600_000,
                    public: method != "tools/list",
                }
            }
            _ => CacheHint {
                ttl_ms: u64::try_from(self.resource_cache().ttl().as_millis()).unwrap_or(u64::MAX),
                public: false,
            },
        }
    }

    /// The long-running tools (they wait for blinds to move, or run a workflow's steps) run
    /// as tasks for clients that declare the tasks extension, as each tool declares
    /// ([`crate::tools::Tool::task`]).
    fn task_support(&self, tool: &str) -> TaskSupport {
        if self.tool(tool).is_some_and(|t| t.task) {
            TaskSupport::Optional
        } else {
            TaskSupport::Forbidden
        }
    }

    fn list_tools(&self) -> Vec<ToolDescriptor> {
        self.list()
    }

    /// The tools of the caller's profile: its key's, else the server's default.
    fn list_tools_for(&self, ctx: &RequestContext) -> Vec<ToolDescriptor> {
        self.list_for(self.profile_of(&self.caller_of(ctx)))
    }

    fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        ctx: &RequestContext,
    ) -> Result<CallToolResult, RpcError> {
        self.call(name, arguments, &self.caller_of(ctx))
    }

    fn call_tool_shared(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        ctx: &RequestContext,
    ) -> Result<SharedResult, RpcError> {
        self.call_shared(name, arguments, &self.caller_of(ctx))
    }

    fn list_resources(&self) -> Vec<ResourceDescriptor> {
        resources::list(&self.house().home())
    }

    fn list_resource_templates(&self) -> Vec<ResourceTemplate> {
        resources::templates()
    }

    fn read_resource(
        &self,
        uri: &str,
        _ctx: &RequestContext,
    ) -> Result<Vec<ResourceContents>, RpcError> {
        // The system resources describe the link and the server itself, which change without
        // a change of the house's generation: always read fresh (they ask no Miniserver).
        if uri.starts_with("home://system/") {
            return resources::read(&self.ctx(), uri, &prompts::NAMES);
        }
        self.resource_cache().get_or_compute_aged(
            uri,
            || self.generation(),
            || {
                let result = resources::read(&self.ctx(), uri, &prompts::NAMES);
                let cacheable = result.is_ok();
                (result, cacheable)
            },
            |result, by| {
                result.map(|mut contents| {
                    for c in &mut contents {
                        let Some(text) = c.text.as_mut().filter(|t| t.contains("\"age_secs\""))
                        else {
                            continue;
                        };
                        if let Ok(mut v) = serde_json::from_str::<Value>(text) {
                            if age_by(&mut v, by) {
                                *text = v.to_string();
                            }
                        }
                    }
                    contents
                })
            },
        )
    }

    fn check_subscribable(&self, uri: &str) -> Result<(), RpcError> {
        resources::check(&self.house().home(), uri)
    }

    fn list_prompts(&self) -> Vec<PromptDescriptor> {
        prompts::list()
    }

    fn get_prompt(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
        _ctx: &RequestContext,
    ) -> Result<GetPromptResult, RpcError> {
        prompts::get(&self.ctx(), name, arguments)
    }

    fn complete(
        &self,
        reference: &CompletionRef,
        argument: &str,
        value: &str,
        context: &Map<String, Value>,
    ) -> Result<Completion, RpcError> {
        let home = self.house().home();
        match reference {
            CompletionRef::Resource(template) => {
                resources::complete(&home, template, argument, value)
            }
            CompletionRef::Prompt(name) => prompts::complete(&home, name, argument, value, context),
        }
    }
}
