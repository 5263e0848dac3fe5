//! Name resolution on a small hand-built house (German names, accents, one name in two rooms)
//! and on the real UK demo structure file.

use home_mcp::home::resolve::{Candidate, ResolveError};
use home_mcp::home::{Control, ControlKind, Family, Home, Room};
use home_mcp::loxone::structure::parse_structure_bytes;

fn room(uuid: &str, name: &str) -> Room {
    Room {
        uuid: uuid.into(),
        name: name.into(),
        is_favorite: false,
        default_rating: 0,
    }
}

fn control(uuid: &str, name: &str, kind: ControlKind, room: Option<&str>) -> Control {
    let mut c = Control::new(uuid, name, kind);
    c.room = room.map(Into::into);
    c
}

/// Küche and Wohnzimmer each have a "Deckenlicht" with a "Spots" sub-control (sub-controls carry
/// no room, as in real files); Straße has a top-level "Spots" and a gate.
fn house() -> Home {
    let mut kueche_licht = control(
        "c-kueche-licht",
        "Deckenlicht",
        ControlKind::LightControllerV2,
        Some("r-kueche"),
    );
    kueche_licht.sub_controls = vec![
        control(
            "c-kueche-licht/AI1",
            "Spots",
            ControlKind::ColorPickerV2,
            None,
        ),
        control(
            "c-kueche-licht/masterValue",
            "Master Brightness",
            ControlKind::Dimmer,
            None,
        ),
    ];
    let mut wohn_licht = control(
        "c-wohn-licht",
        "Deckenlicht",
        ControlKind::LightControllerV2,
        Some("r-wohn"),
    );
    wohn_licht.sub_controls = vec![control(
        "c-wohn-licht/AI1",
        "Spots",
        ControlKind::ColorPickerV2,
        None,
    )];
    Home {
        rooms: vec![
            room("r-anna", "Kinderzimmer Anna"),
            room("r-ben", "Kinderzimmer Ben"),
            room("r-kueche", "Küche"),
            room("r-strasse", "Straße"),
            room("r-wohn", "Wohnzimmer"),
        ],
        controls: vec![
            kueche_licht,
            control(
                "c-kueche-jal",
                "Jalousie Süd",
                ControlKind::Jalousie,
                Some("r-kueche"),
            ),
            control(
                "c-strasse-spots",
                "Spots",
                ControlKind::Switch,
                Some("r-strasse"),
            ),
            control("c-strasse-tor", "Tor", ControlKind::Gate, Some("r-strasse")),
            wohn_licht,
        ],
        ..Home::default()
    }
}

fn any(_: &Control) -> bool {
    true
}

fn uuid_of(home: &Home, query: &str, room: Option<&str>) -> String {
    match home.resolve_control(query, room, &any) {
        Ok(c) => c.uuid.clone(),
        Err(e) => panic!("{query:?} in {room:?}: {e}"),
    }
}

fn ambiguous(result: Result<&Control, ResolveError>) -> Vec<Candidate> {
    match result {
        Err(ResolveError::Ambiguous { candidates, .. }) => candidates,
        other => panic!("expected Ambiguous, got {other:?}"),
    }
}

fn not_found<T: std::fmt::Debug>(result: Result<T, ResolveError>) -> (String, Vec<Candidate>) {
    match result {
        Err(ResolveError::NotFound { query, suggestions }) => (query, suggestions),
        other => panic!("expected NotFound, got {other:?}"),
    }
}

#[test]
fn rooms_resolve_regardless_of_accents_and_case() {
    let home = house();
    for q in ["Küche", "kuche", "KÜCHE", "  küche ", "Kuche"] {
        assert_eq!(home.resolve_room(q).unwrap().uuid, "r-kueche", "{q}");
    }
    for q in ["Straße", "Strasse", "STRASSE", "strasse"] {
        assert_eq!(home.resolve_room(q).unwrap().uuid, "r-strasse", "{q}");
    }
    assert_eq!(home.resolve_room("R-KUECHE").unwrap().name, "Küche");
}

#[test]
fn rooms_resolve_by_unique_prefix_or_substring_else_ambiguous() {
    let home = house();
    assert_eq!(home.resolve_room("wohn").unwrap().uuid, "r-wohn");
    assert_eq!(home.resolve_room("zimmer ben").unwrap().uuid, "r-ben");
    let err = home.resolve_room("kinder").unwrap_err();
    let ResolveError::Ambiguous { candidates, .. } = &err else {
        panic!("expected Ambiguous, got {err:?}");
    };
    let names: Vec<_> = candidates.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["Kinderzimmer Anna", "Kinderzimmer Ben"]);
    assert!(candidates
        .iter()
        .all(|c| c.kind == "room" && c.room.is_none()));
    let msg = err.to_string();
    assert!(
        msg.contains("Kinderzimmer Anna") && msg.contains("r-ben"),
        "{msg}"
    );
    assert!(msg.contains("longer name or the uuid"), "{msg}");
}

#[test]
fn unknown_room_suggests_rooms_sharing_a_word() {
    let home = house();
    let (query, suggestions) = not_found(home.resolve_room("Anna Schlafzimmer"));
    assert_eq!(query, "Anna Schlafzimmer");
    assert_eq!(suggestions.len(), 1);
    assert_eq!(suggestions[0].uuid, "r-anna");
    let (_, none) = not_found(home.resolve_room("Garage"));
    assert!(none.is_empty());
    assert!(not_found(home.resolve_room("   ")).1.is_empty());
}

#[test]
fn same_name_in_two_rooms_is_ambiguous_with_rooms() {
    let home = house();
    let err = home.resolve_control("Deckenlicht", None, &any).unwrap_err();
    let msg = err.to_string();
    let candidates = ambiguous(Err(err));
    assert_eq!(candidates.len(), 2);
    let rooms: Vec<_> = candidates.iter().map(|c| c.room.as_deref()).collect();
    assert!(rooms.contains(&Some("Küche")) && rooms.contains(&Some("Wohnzimmer")));
    assert!(candidates.iter().all(|c| c.kind == "LightControllerV2"));
    assert!(
        msg.contains("in Küche") && msg.contains("in Wohnzimmer"),
        "{msg}"
    );
    assert!(
        msg.contains("c-kueche-licht") && msg.contains("c-wohn-licht"),
        "{msg}"
    );
    assert!(msg.contains("name the room"), "{msg}");
}

#[test]
fn room_argument_disambiguates() {
    let home = house();
    assert_eq!(
        uuid_of(&home, "deckenlicht", Some("kuche")),
        "c-kueche-licht"
    );
    assert_eq!(
        uuid_of(&home, "DECKENLICHT", Some("r-wohn")),
        "c-wohn-licht"
    );
    // Sub-controls take their parent's room.
    assert_eq!(uuid_of(&home, "Spots", Some("Küche")), "c-kueche-licht/AI1");
    // The room's own error is returned unchanged.
    let (query, _) = not_found(home.resolve_control("Deckenlicht", Some("Garage"), &any));
    assert_eq!(query, "Garage");
    let err = home
        .resolve_control("Deckenlicht", Some("Kinder"), &any)
        .unwrap_err();
    assert!(
        matches!(err, ResolveError::Ambiguous { ref candidates, .. } if candidates[0].kind == "room")
    );
    // Nothing of that name in the given room.
    not_found(home.resolve_control("Tor", Some("Küche"), &any));
}

#[test]
fn room_qualified_queries_disambiguate() {
    let home = house();
    for q in [
        "Küche Deckenlicht",
        "Deckenlicht Küche",
        "Deckenlicht (Küche)",
        "Deckenlicht (kuche)",
        "Küche/Deckenlicht",
        "deckenlicht in kuche",
        "KUCHE - Deckenlicht",
    ] {
        assert_eq!(uuid_of(&home, q, None), "c-kueche-licht", "{q}");
    }
    assert_eq!(
        uuid_of(&home, "Wohnzimmer Deckenlicht", None),
        "c-wohn-licht"
    );
    assert_eq!(
        uuid_of(&home, "Spots in Wohnzimmer", None),
        "c-wohn-licht/AI1"
    );
    assert_eq!(uuid_of(&home, "Strasse Tor", None), "c-strasse-tor");
}

#[test]
fn uuids_match_exactly_and_case_insensitively() {
    let home = house();
    assert_eq!(uuid_of(&home, "c-wohn-licht", None), "c-wohn-licht");
    assert_eq!(
        uuid_of(&home, "C-KUECHE-LICHT/MASTERVALUE", None),
        "c-kueche-licht/masterValue"
    );
    assert_eq!(
        uuid_of(&home, " c-kueche-licht/AI1 ", None),
        "c-kueche-licht/AI1"
    );
    // A bare prefix of a UUID is not a UUID match.
    not_found(home.resolve_control("c-kueche", None, &any));
}

#[test]
fn top_level_controls_win_over_sub_controls() {
    let home = house();
    // Two sub-controls and one top-level control are named "Spots".
    assert_eq!(uuid_of(&home, "spots", None), "c-strasse-spots");
    // Without the top-level one, the two sub-controls are ambiguous.
    let only_colour = |c: &Control| c.kind == ControlKind::ColorPickerV2;
    let candidates = ambiguous(home.resolve_control("Spots", None, &only_colour));
    let mut pairs: Vec<_> = candidates
        .iter()
        .map(|c| (c.uuid.as_str(), c.room.as_deref()))
        .collect();
    pairs.sort();
    assert_eq!(
        pairs,
        [
            ("c-kueche-licht/AI1", Some("Küche")),
            ("c-wohn-licht/AI1", Some("Wohnzimmer"))
        ]
    );
}

#[test]
fn not_found_carries_suggestions() {
    let home = house();
    let err = home.resolve_control("Decke", None, &any).unwrap_err();
    let msg = err.to_string();
    let (query, suggestions) = not_found::<&Control>(Err(err));
    assert_eq!(query, "Decke");
    let uuids: Vec<_> = suggestions.iter().map(|c| c.uuid.as_str()).collect();
    assert_eq!(uuids.len(), 2, "{uuids:?}");
    assert!(uuids.contains(&"c-kueche-licht") && uuids.contains(&"c-wohn-licht"));
    assert!(
        msg.contains("did you mean") && msg.contains("in Küche"),
        "{msg}"
    );

    // Shared words: "süd" names the blind.
    let (_, suggestions) = not_found(home.resolve_control("Rollo Sud", None, &any));
    assert_eq!(suggestions[0].uuid, "c-kueche-jal");
    assert_eq!(suggestions[0].room.as_deref(), Some("Küche"));

    let (_, none) = not_found(home.resolve_control("Sauna", None, &any));
    assert!(none.is_empty());
    not_found(home.resolve_control("", None, &any));
}

#[test]
fn filter_excludes_other_kinds() {
    let home = house();
    let lighting = |c: &Control| home.family(c) == Family::Lighting;
    assert_eq!(uuid_of(&home, "Tor", None), "c-strasse-tor");
    not_found(home.resolve_control("Tor", None, &lighting));
    // Also for UUIDs and suggestions.
    not_found(home.resolve_control("c-strasse-tor", None, &lighting));
    let blinds = |c: &Control| home.family(c) == Family::Blinds;
    let (_, suggestions) = not_found(home.resolve_control("Deckenlicht", None, &blinds));
    assert!(suggestions.iter().all(|c| c.kind == "Jalousie"));
    assert_eq!(
        home.resolve_control("Deckenlicht", Some("Wohnzimmer"), &lighting)
            .unwrap()
            .uuid,
        "c-wohn-licht"
    );
}

#[test]
fn controls_in_room_lists_top_level_controls_in_model_order() {
    let home = house();
    let uuids: Vec<_> = home
        .controls_in_room("r-kueche")
        .iter()
        .map(|c| c.uuid.as_str())
        .collect();
    assert_eq!(uuids, ["c-kueche-licht", "c-kueche-jal"]);
    assert!(home.controls_in_room("r-anna").is_empty());
    assert!(home.controls_in_room("nope").is_empty());
}

fn uk() -> Home {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/TheJack75-Loxone.NET-uk-demo-miniserver.json"
    );
    parse_structure_bytes(&std::fs::read(path).unwrap()).unwrap()
}

const UK_KITCHEN_LIGHTS: &str = "184100e7-017f-d0b6-fffff618466b9d15";

#[test]
fn uk_demo_lighting_controller_is_ambiguous_across_eleven_rooms() {
    let home = uk();
    let candidates = ambiguous(home.resolve_control("Lighting Controller", None, &any));
    assert_eq!(candidates.len(), 11);
    assert!(candidates.iter().all(|c| c.kind == "LightControllerV2"));
    let rooms: Vec<_> = candidates
        .iter()
        .filter_map(|c| c.room.as_deref())
        .collect();
    assert_eq!(rooms.len(), 11, "every candidate names its room");
    assert!(rooms.contains(&"Kitchen") && rooms.contains(&"Basement"));

    assert_eq!(
        uuid_of(&home, "lighting controller", Some("Kitchen")),
        UK_KITCHEN_LIGHTS
    );
    for q in [
        "Kitchen Lighting Controller",
        "Lighting Controller (Kitchen)",
        "lighting controller in kitchen",
        "kitchen/lighting-controller",
    ] {
        assert_eq!(uuid_of(&home, q, None), UK_KITCHEN_LIGHTS, "{q}");
    }
}

#[test]
fn uk_demo_sub_controls_rooms_and_suggestions() {
    let home = uk();
    assert_eq!(
        uuid_of(&home, "kitchen ceiling", None),
        format!("{UK_KITCHEN_LIGHTS}/AI2")
    );
    assert_eq!(
        uuid_of(&home, &format!("{UK_KITCHEN_LIGHTS}/MASTERVALUE"), None),
        format!("{UK_KITCHEN_LIGHTS}/masterValue")
    );
    assert_eq!(
        ambiguous(home.resolve_control("Ceiling", None, &any)).len(),
        6
    );

    // Not a name: the kitchen's "Ceiling" comes first among the suggestions.
    let (_, suggestions) = not_found(home.resolve_control("kitchen ceiling light", None, &any));
    assert!(suggestions.len() <= 5);
    assert_eq!(suggestions[0].uuid, format!("{UK_KITCHEN_LIGHTS}/AI2"));
    assert_eq!(suggestions[0].room.as_deref(), Some("Kitchen"));

    // Apostrophes and double spaces fold away; two rooms are called "Not Assigned".
    assert_eq!(
        home.resolve_room("peters bedroom").unwrap().name,
        "Peter's Bedroom"
    );
    assert_eq!(
        home.resolve_room("Sarah's Bedroom").unwrap().name,
        "Sarah's  Bedroom"
    );
    let err = home.resolve_room("not assigned").unwrap_err();
    assert!(matches!(err, ResolveError::Ambiguous { ref candidates, .. } if candidates.len() == 2));

    let kitchen = home.resolve_room("kitchen").unwrap();
    let in_kitchen = home.controls_in_room(&kitchen.uuid);
    assert_eq!(in_kitchen.len(), 6);
    assert!(in_kitchen.iter().any(|c| c.uuid == UK_KITCHEN_LIGHTS));
}
