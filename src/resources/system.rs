//! The `home://system/*` resources: status (Miniserver, structure, link, counts),
//! capabilities (what this house and this server can do) and categories.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{FIXED, TEMPLATES};
use crate::home::{Family, Home, Profile};
use crate::tools::Ctx;

/// `home://system/status`.
pub fn status(ctx: &Ctx, home: &Home) -> Value {
    let ms = &home.ms_info;
    let workflows = ctx.workflows.list().map(|w| w.len()).ok();
    json!({
        "server": {"name": "home-mcp", "version": env!("CARGO_PKG_VERSION")},
        "miniserver": {
            "name": ms.ms_name,
            "project": ms.project_name,
            "serial": ms.serial_nr,
            "location": ms.location,
            "language": ms.language_code,
            "miniserver_type": ms.miniserver_type,
            "temperature_unit": match ms.temp_unit { Some(1) => "°F", _ => "°C" },
        },
        "structure": {"last_modified": home.last_modified},
        "link": ctx.link().snapshot().to_json(),
        // Whether commands are stopped (the stop switch in the house, the admin page's stop),
        // since when and who can lift it.
        "stop": ctx.stop_shown().to_json(),
        "counts": {
            "rooms": home.rooms.len(),
            "categories": home.categories.len(),
            "devices": home.controls.len(),
            "controls_with_sub_controls": home.count_all_controls(),
            "known_values": ctx.states().len(),
            "workflows": workflows,
        },
    })
}

/// Number of top-level controls per family, in [`Family::ALL`] order (absent families left out).
fn families(home: &Home) -> Vec<(Family, usize)> {
    Family::ALL
        .iter()
        .map(|f| {
            (
                *f,
                home.controls
                    .iter()
                    .filter(|c| home.family(c) == *f)
                    .count(),
            )
        })
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// `home://system/capabilities`.
pub fn capabilities(ctx: &Ctx, home: &Home, prompts: &[&str]) -> Value {
    let mut types: BTreeMap<&str, (Family, usize)> = BTreeMap::new();
    for c in &home.controls {
        types
            .entry(c.kind.as_str())
            .or_insert((home.family(c), 0))
            .1 += 1;
    }
    let secured: Vec<Value> = home
        .controls
        .iter()
        .filter(|c| c.is_secured)
        .map(|c| crate::tools::view::device(home, c))
        .collect();
    let in_profile = |p: Profile| -> Vec<&str> {
        ctx.catalogue
            .iter()
            .filter(|t| t.in_profile(p))
            .map(|t| t.name)
            .collect()
    };
    json!({
        "families": families(home).iter().map(|(f, n)| json!({"family": f.as_str(), "count": n})).collect::<Vec<_>>(),
        "control_types": types.iter().map(|(t, (f, n))| json!({"type": t, "family": f.as_str(), "count": n})).collect::<Vec<_>>(),
        "secured_controls": secured,
        // The full profile's tools; the lean profile's front doors apart (issue 33).
        "tools": {
            "count": in_profile(Profile::Full).len(),
            "names": in_profile(Profile::Full),
            "lean": in_profile(Profile::Lean),
        },
        "resources": {"fixed": FIXED.len(), "templates": TEMPLATES.len()},
        "prompts": prompts,
        "features": {
            "dry_run": true,
            "workflows": true,
            "resource_subscriptions": true,
            "completion": true,
            "visu_password_configured": ctx.has_visu_password(),
            "link_mode": ctx.link().mode().as_str(),
        },
    })
}

/// `home://system/categories`.
pub fn categories(home: &Home) -> Value {
    let fams: Vec<Value> = families(home)
        .iter()
        .map(|(f, n)| {
            json!({"family": f.as_str(), "count": n, "uri": format!("home://devices/category/{}", f.as_str())})
        })
        .collect();
    let cats: Vec<Value> = home
        .categories
        .iter()
        .map(|c| {
            let n = home
                .controls
                .iter()
                .filter(|x| x.category.as_deref() == Some(c.uuid.as_str()))
                .count();
            json!({
                "uuid": c.uuid,
                "name": c.name,
                "type": c.kind.as_str(),
                "count": n,
                "uri": format!("home://devices/category/{}", home.category_key(c)),
            })
        })
        .collect();
    json!({"families": fams, "loxone_categories": cats})
}
