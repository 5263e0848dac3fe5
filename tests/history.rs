//! The house over time (issue 29): `House::history`, the one query behind `get_history`,
//! `get_energy`, `home://history/...` and the dashboard's charts, judged against the
//! simulator's own series read over its HTTP API (`support::stats`), never against the
//! product's reading of them. The simulator's history (sim/stats.rs) holds a daylight-saving
//! change each way, a month without data and a counter reset; these tests find them in the
//! simulator's answers themselves.

use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};

use home_mcp::app::App;
use home_mcp::config::{Config, MiniserverConfig};
use home_mcp::home::history::{Agg, Query, Resolution, Series, Source};
use home_mcp::home::time::Unit;
use home_mcp::sim::{SimConfig, SimServer, Simulator, DEMO_PASSWORD, DEMO_USER};

use crate::support::drive::MiniserverApi;
use crate::support::server::TempDir;
use crate::support::stats::*;
use crate::support::{demo, demo_polling, test_config};

fn ts(unix: i64) -> Timestamp {
    Timestamp::from_second(unix).unwrap()
}

fn ask(app: &App, control: &str, state: &str, from: i64, to: i64, r: Resolution) -> Series {
    app.house
        .history(&Query {
            control: control.into(),
            state: Some(state.into()),
            from: ts(from),
            to: ts(to),
            resolution: Some(r),
            max_points: Some(2000),
        })
        .unwrap_or_else(|e| panic!("history of {control}.{state}: {e}"))
}

/// The amounts of a counter answer by bucket start.
fn amounts(s: &Series) -> Vec<(i64, f64)> {
    s.points
        .iter()
        .map(|p| match p.agg {
            Agg::Counter { sum } => (p.start.as_second(), sum),
            other => panic!("not a counter point: {other:?}"),
        })
        .collect()
}

/// Today's local midnight in the simulator's zone.
fn today() -> i64 {
    let tz = berlin();
    midnight(&tz, date_of(&tz, Timestamp::now().as_second()))
}

/// Checks a counter's daily answer against the simulator's readings: every local day with a
/// reading ending in it has exactly the amount counted from the readings (a reading below the
/// one before is a reset), every other day has no point and lies in a span without data.
fn check_daily(s: &Series, readings: &[(i64, f64)], from: i64, to: i64) -> (usize, usize) {
    let tz = berlin();
    let got = amounts(s);
    let mut with_data = 0;
    let mut without = 0;
    for (b0, b1) in days(&tz, from, to) {
        let answer = got.iter().find(|(t, _)| *t == b0).map(|x| x.1);
        match counted(readings, b0, b1) {
            Some(expected) => {
                with_data += 1;
                let a = answer.unwrap_or_else(|| panic!("no amount for the day of {b0}"));
                assert!(
                    (a - expected).abs() < 1e-6,
                    "day of {b0} ({} h): answered {a}, the simulator's readings give {expected}",
                    (b1 - b0) / 3600
                );
            }
            None => {
                without += 1;
                assert!(answer.is_none(), "an amount for a day without data: {b0}");
                assert!(
                    s.no_data
                        .iter()
                        .any(|(a, b)| a.as_second() <= b0 && b.as_second() >= b1),
                    "the day of {b0} has no data and is not named in no_data: {:?}",
                    s.no_data
                );
            }
        }
    }
    (with_data, without)
}

#[test]
fn a_year_of_daily_energy_matches_the_meters_own_readings() {
    let (app, _tools) = demo();
    let api = MiniserverApi::of(&app);
    let tz = berlin();
    let to = today();
    let from = midnight(&tz, date_of(&tz, to - 365 * 86_400));
    let s = ask(
        &app,
        GRID_METER,
        "total",
        from,
        to,
        Resolution::Every(Unit::Day),
    );
    assert_eq!(s.source, Source::StatisticsV2, "{:?}", s.source_detail);
    assert_eq!(s.step, 1);
    assert_eq!(s.unit.as_deref(), Some("kWh"));
    let readings = v2_raw(&api, GRID_METER, 2, "total", from - 7200, to);
    // The year holds both clock changes, the month without data and the reset.
    let lengths: Vec<i64> = days(&tz, from, to).iter().map(|(a, b)| b - a).collect();
    assert!(lengths.contains(&(23 * 3600)) && lengths.contains(&(25 * 3600)));
    let drops = readings.windows(2).filter(|w| w[1].1 < w[0].1).count();
    assert_eq!(drops, 1, "one counter reset in the simulator's year");
    let (with_data, without) = check_daily(&s, &readings, from, to);
    assert!(with_data > 300, "{with_data} days with data");
    assert!(
        (28..=31).contains(&without),
        "one month without data: {without} days"
    );
    assert!(
        s.left_out.iter().any(|n| n.contains("reset")),
        "the reset is named: {:?}",
        s.left_out
    );
    let total: f64 = amounts(&s).iter().map(|x| x.1).sum();
    assert!((s.summary.total.unwrap() - total).abs() < 1e-6);
}

#[test]
fn a_month_of_hourly_temperature_matches_the_recorded_values() {
    let (app, _tools) = demo();
    let api = MiniserverApi::of(&app);
    let now = Timestamp::now().as_second();
    let to = now - now.rem_euclid(3600);
    let from = to - 30 * 86_400;
    let s = ask(
        &app,
        LIVING_TEMPERATURE,
        "value",
        from,
        to,
        Resolution::Every(Unit::Hour),
    );
    assert_eq!(s.source, Source::StatisticsV2);
    assert_eq!(s.unit.as_deref(), Some("°C"));
    assert_eq!(s.points.len(), 30 * 24, "one point an hour");
    let readings = v2_raw(&api, LIVING_TEMPERATURE, 1, "value", from, to - 1);
    for p in &s.points {
        let b0 = p.start.as_second();
        let (min, mean, max) = level(&readings, b0, b0 + 3600).expect("readings every hour");
        let Agg::Level {
            min: a,
            mean: m,
            max: b,
            count,
        } = p.agg
        else {
            panic!("a level point: {p:?}")
        };
        assert_eq!(count, 4, "four records an hour");
        assert_eq!((a, b), (min, max), "hour of {b0}");
        assert!((m - mean).abs() < 1e-9, "hour of {b0}: mean {m} vs {mean}");
    }
    let all_min = readings.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
    assert_eq!(s.summary.min, Some(all_min));
    // Asked from "now" (nanoseconds and all), the hours are the same hours.
    let from_now = app
        .house
        .history(&Query {
            control: LIVING_TEMPERATURE.into(),
            state: None,
            from: Timestamp::now() - SignedDuration::from_hours(24 * 30),
            to: ts(to),
            resolution: Some(Resolution::Every(Unit::Hour)),
            max_points: Some(2000),
        })
        .unwrap();
    for p in &from_now.points {
        let b0 = p.start.as_second();
        let (min, _, max) = level(&readings, b0, b0 + 3600).expect("readings every hour");
        let Agg::Level { min: a, max: b, .. } = p.agg else {
            panic!()
        };
        assert_eq!((a, b), (min, max), "hour of {b0}");
    }
}

#[test]
fn a_week_of_on_time_of_a_light_matches_its_switching() {
    let (app, _tools) = demo();
    let api = MiniserverApi::of(&app);
    let tz = berlin();
    let to = today();
    let from = midnight(&tz, date_of(&tz, to - 7 * 86_400 + 3600));
    let s = ask(
        &app,
        KITCHEN_LIGHT,
        "active",
        from,
        to,
        Resolution::Every(Unit::Day),
    );
    assert_eq!(s.source, Source::StatisticsV2);
    assert_eq!(s.points.len(), 7);
    let changes = v2_raw(&api, KITCHEN_LIGHT, 1, "active", from - 7 * 86_400, to);
    let mut total = 0.0;
    for p in &s.points {
        let (b0, b1) = (p.start.as_second(), p.end.as_second());
        let Agg::Switch {
            on_secs,
            changes: n,
        } = p.agg
        else {
            panic!("a switch point: {p:?}")
        };
        let expected = on_seconds(&changes, b0, b1);
        assert!(
            (on_secs - expected).abs() < 1e-6,
            "day of {b0}: {on_secs} vs {expected}"
        );
        let went_on = changes
            .windows(2)
            .filter(|w| w[1].0 >= b0 && w[1].0 < b1 && w[0].1 == 0.0 && w[1].1 != 0.0)
            .count();
        assert_eq!(n, went_on, "day of {b0}");
        total += expected;
    }
    assert!(
        total > 7.0 * 3600.0,
        "the light is on some hours a day: {total}"
    );
    assert!((s.summary.on_secs.unwrap() - total).abs() < 1e-6);
}

#[test]
fn the_front_door_was_open_last_night_as_its_v1_recording_says() {
    let (app, _tools) = demo();
    let api = MiniserverApi::of(&app);
    let tz = berlin();
    // Yesterday 18:00 to today 08:00, local time.
    let evening = today() - 6 * 3600;
    let morning = today() + 8 * 3600;
    let s = ask(
        &app,
        FRONT_DOOR,
        "active",
        evening,
        morning,
        Resolution::Every(Unit::Hour),
    );
    assert_eq!(s.source, Source::StatisticsV1);
    let mut changes = Vec::new();
    for day in [
        date_of(&tz, evening - 7 * 86_400),
        date_of(&tz, evening),
        date_of(&tz, morning),
    ] {
        let rows = v1_month(
            &api,
            FRONT_DOOR,
            &format!("{:04}{:02}", day.year(), day.month()),
        )
        .expect("the door's month file");
        for r in v1_instants(&tz, &rows, 0) {
            if !changes.contains(&r) {
                changes.push(r);
            }
        }
    }
    changes.sort_by_key(|x| x.0);
    let expected = on_seconds(&changes, evening, morning.min(Timestamp::now().as_second()));
    assert!(
        (s.summary.on_secs.unwrap() - expected).abs() < 1e-6,
        "{:?} vs {expected}",
        s.summary
    );
    assert!(
        expected > 0.0,
        "the door opened in the evening or the morning"
    );
}

#[test]
fn the_daylight_saving_days_have_23_and_25_hours() {
    let (app, _tools) = demo();
    let api = MiniserverApi::of(&app);
    let tz = berlin();
    let to = today();
    let from = midnight(&tz, date_of(&tz, to - 360 * 86_400));
    let all = days(&tz, from, to);
    for hours in [23, 25] {
        let &(b0, b1) = all
            .iter()
            .find(|(a, b)| b - a == hours * 3600)
            .expect("a clock change in the last year");
        // V2: the grid meter, hourly and daily.
        let s = ask(
            &app,
            GRID_METER,
            "total",
            b0,
            b1,
            Resolution::Every(Unit::Hour),
        );
        assert_eq!(s.points.len() as i64, hours, "{hours}-hour day of {b0}");
        let readings = v2_raw(&api, GRID_METER, 2, "total", b0 - 7200, b1);
        for p in &s.points {
            let t = p.start.as_second();
            let Agg::Counter { sum } = p.agg else {
                panic!()
            };
            assert!((sum - counted(&readings, t, t + 3600).unwrap()).abs() < 1e-6);
        }
        let d = ask(
            &app,
            GRID_METER,
            "total",
            b0,
            b1,
            Resolution::Every(Unit::Day),
        );
        assert_eq!(d.points.len(), 1);
        let Agg::Counter { sum } = d.points[0].agg else {
            panic!()
        };
        assert!((sum - counted(&readings, b0, b1).unwrap()).abs() < 1e-6);
        // V1 (wall-clock times): the wallbox, hourly. The repeated autumn hour is two hours.
        let w = ask(
            &app,
            WALLBOX,
            "total",
            b0,
            b1,
            Resolution::Every(Unit::Hour),
        );
        assert_eq!(w.source, Source::StatisticsV1);
        assert_eq!(
            w.points.len() as i64,
            hours,
            "V1 {hours}-hour day: {:?}",
            w.left_out
        );
        let month = date_of(&tz, b0);
        let rows = v1_month(
            &api,
            WALLBOX,
            &format!("{:04}{:02}", month.year(), month.month()),
        )
        .expect("a V1 file for the month of the clock change");
        let readings = v1_instants(&tz, &rows, 0);
        for p in &w.points {
            let t = p.start.as_second();
            let Agg::Counter { sum } = p.agg else {
                panic!()
            };
            let expected = counted(&readings, t, t + 3600).unwrap();
            assert!(
                (sum - expected).abs() < 1e-6,
                "hour of {t}: {sum} vs {expected}"
            );
        }
    }
}

#[test]
fn the_month_without_data_is_named_not_zero() {
    let (app, _tools) = demo();
    let api = MiniserverApi::of(&app);
    let tz = berlin();
    let gap = app_calendar(&app).gap;
    let from = gap.0 - 10 * 86_400;
    let to = gap.1 + 10 * 86_400;
    // V2 counter, V2 level and V1 level all say the month has no data.
    let s = ask(
        &app,
        GRID_METER,
        "total",
        from,
        to,
        Resolution::Every(Unit::Day),
    );
    let readings = v2_raw(&api, GRID_METER, 2, "total", from - 7200, to);
    let (_, without) = check_daily(&s, &readings, from, to);
    assert!(without >= 28, "{without}");
    for (uuid, state) in [(LIVING_TEMPERATURE, "value"), (CELLAR_TEMPERATURE, "value")] {
        let s = ask(&app, uuid, state, from, to, Resolution::Every(Unit::Day));
        assert!(
            s.points
                .iter()
                .all(|p| p.start.as_second() < gap.0 || p.start.as_second() >= gap.1),
            "{uuid}: no point inside the month without data"
        );
        assert!(
            s.no_data
                .iter()
                .any(|(a, b)| a.as_second() <= gap.0 && b.as_second() >= gap.1),
            "{uuid} ({:?}): the month is named: {:?}",
            s.source,
            s.no_data
        );
    }
    let month = date_of(&tz, gap.0);
    assert!(
        v1_month(
            &api,
            CELLAR_TEMPERATURE,
            &format!("{:04}{:02}", month.year(), month.month())
        )
        .is_none(),
        "the simulator serves no V1 file for the month"
    );
}

/// The demo app's simulated calendar (gap, reset), as the simulator tells tests.
fn app_calendar(app: &App) -> home_mcp::sim::StatsCalendar {
    crate::support::sim(app).stats_calendar()
}

#[test]
fn a_counter_reset_counts_from_zero() {
    let (app, _tools) = demo();
    let api = MiniserverApi::of(&app);
    let reset = app_calendar(&app).reset;
    let tz = berlin();
    let day = midnight(&tz, date_of(&tz, reset));
    let next = midnight(&tz, date_of(&tz, day + 30 * 3600));
    let readings = v2_raw(&api, GRID_METER, 2, "total", day - 7200, next);
    let drop = readings
        .windows(2)
        .find(|w| w[1].1 < w[0].1)
        .expect("the simulator's counter falls on the reset day");
    assert!(drop[1].0 >= day && drop[1].0 < next);
    let s = ask(
        &app,
        GRID_METER,
        "total",
        day,
        next,
        Resolution::Every(Unit::Day),
    );
    let Agg::Counter { sum } = s.points[0].agg else {
        panic!()
    };
    let expected = counted(&readings, day, next).unwrap();
    assert!((sum - expected).abs() < 1e-6, "{sum} vs {expected}");
    assert!(
        sum > 0.0 && sum < 100.0,
        "a day's use, not a counter's fall: {sum}"
    );
    // Raw readings of the same day: the reset is counted once.
    let raw = ask(&app, GRID_METER, "total", day, next, Resolution::Raw);
    assert_eq!(raw.summary.resets, 1);
    assert!((raw.summary.total.unwrap() - expected).abs() < 1e-6);
}

/// A house whose structure file is the demo's changed by `edit`, served by a simulator, with
/// the whole server (`App`, live link per `config`) on it; the data directory is `dir`.
fn house_with(
    edit: impl Fn(&mut serde_json::Value),
    config: Config,
    dir: &TempDir,
) -> (App, SimServer, Arc<Simulator>) {
    let mut doc: serde_json::Value = serde_json::from_str(home_mcp::sim::DEMO_STRUCTURE).unwrap();
    edit(&mut doc);
    house_of(
        &doc.to_string(),
        Some(home_mcp::sim::DEMO_VALUES),
        config,
        dir,
    )
}

/// The whole server on a simulator serving the structure file `text` (its clock the
/// simulator's, Europe/Berlin); the data directory is `dir`.
fn house_of(
    text: &str,
    values: Option<&str>,
    mut config: Config,
    dir: &TempDir,
) -> (App, SimServer, Arc<Simulator>) {
    let sim = Arc::new(Simulator::new(text, values, SimConfig::default()).unwrap());
    let server = SimServer::start(sim.clone(), "127.0.0.1:0").unwrap();
    config.miniserver = Some(MiniserverConfig {
        base_url: server.base_url(),
        user: DEMO_USER.into(),
        password: DEMO_PASSWORD.into(),
    });
    config.server.data_dir = dir.0.clone();
    config.time_zone = Some(home_mcp::home::HouseTime::named("Europe/Berlin").unwrap());
    let app = App::start(&config, false).expect("the server starts");
    (app, server, sim)
}

/// V2 groups as V1 `statistic` (a Meter's outputs `total`, `actual`), the house of a
/// Miniserver before firmware 13.1.
fn v1_only(doc: &mut serde_json::Value) {
    for c in doc["controls"].as_object_mut().unwrap().values_mut() {
        let Some(v2) = c.as_object_mut().unwrap().remove("statisticV2") else {
            continue;
        };
        let mut outputs: Vec<String> = v2["groups"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["dataPoints"].as_array().unwrap().clone())
            .map(|p| p["output"].as_str().unwrap().to_string())
            .collect();
        if c["type"] == "Meter" {
            outputs = vec!["total".into(), "actual".into()];
        }
        let digital = outputs == ["active"];
        c["statistic"] = serde_json::json!({
            "frequency": if digital { 1 } else { 12 },
            "outputs": outputs.iter().enumerate().map(|(i, o)| serde_json::json!({
                "id": i, "name": o, "visuType": if digital { 1 } else { 0 }
            })).collect::<Vec<_>>(),
        });
    }
}

#[test]
fn a_v1_only_house_answers_from_its_month_files() {
    let dir = TempDir::new("history-v1");
    for live in [
        home_mcp::config::LiveMode::WebSocket,
        home_mcp::config::LiveMode::Polling,
    ] {
        let mut config = test_config();
        config.miniserver_live = live;
        let (app, server, _sim) = house_with(v1_only, config, &dir);
        let api = MiniserverApi::demo(server.addr());
        let tz = berlin();
        let to = today();
        let from = midnight(&tz, date_of(&tz, to - 40 * 86_400));
        let s = ask(
            &app,
            GRID_METER,
            "total",
            from,
            to,
            Resolution::Every(Unit::Day),
        );
        assert_eq!(s.source, Source::StatisticsV1, "{live:?}: {:?}", s.left_out);
        let mut readings = Vec::new();
        let mut d = date_of(&tz, from - 86_400).first_of_month();
        while midnight(&tz, d) < to {
            if let Some(rows) = v1_month(
                &api,
                GRID_METER,
                &format!("{:04}{:02}", d.year(), d.month()),
            ) {
                readings.extend(v1_instants(&tz, &rows, 0));
            }
            d = d.last_of_month().tomorrow().unwrap();
        }
        let (with_data, _) = check_daily(&s, &readings, from, to);
        assert!(with_data >= 39, "{live:?}: {with_data}");
        let t = ask(
            &app,
            KITCHEN_LIGHT,
            "active",
            from,
            to,
            Resolution::Every(Unit::Day),
        );
        assert_eq!(t.source, Source::StatisticsV1);
        assert!(t.summary.on_secs.unwrap() > 0.0);
        // Over the live WebSocket the binary months were asked, else the XML files.
        let asked = _sim.requests();
        let binary = asked.iter().any(|r| r.contains("binstatisticdata/"));
        let xml = asked.iter().any(|r| r.contains("stats/statisticdata.xml/"));
        match live {
            home_mcp::config::LiveMode::WebSocket => assert!(binary, "{asked:?}"),
            _ => assert!(xml && !binary, "{asked:?}"),
        }
        drop(app);
    }
}

#[test]
fn a_v2_only_house_reads_v2_and_its_own_record_for_the_rest() {
    let dir = TempDir::new("history-v2");
    let strip_v1 = |doc: &mut serde_json::Value| {
        for c in doc["controls"].as_object_mut().unwrap().values_mut() {
            c.as_object_mut().unwrap().remove("statistic");
        }
    };
    let (app, server, _sim) = house_with(strip_v1, test_config(), &dir);
    let api = MiniserverApi::demo(server.addr());
    let tz = berlin();
    let day_to = today();
    let day_from = midnight(&tz, date_of(&tz, day_to - 40 * 86_400));
    let s = ask(
        &app,
        GRID_METER,
        "total",
        day_from,
        day_to,
        Resolution::Every(Unit::Day),
    );
    assert_eq!(s.source, Source::StatisticsV2);
    let readings = v2_raw(&api, GRID_METER, 2, "total", day_from - 7200, day_to);
    let (with_data, _) = check_daily(&s, &readings, day_from, day_to);
    assert!(with_data >= 39, "{with_data}");
    let t = ask(
        &app,
        LIVING_TEMPERATURE,
        "value",
        day_to - 86_400,
        day_to,
        Resolution::Every(Unit::Hour),
    );
    assert_eq!(t.source, Source::StatisticsV2);
    assert_eq!(t.points.len(), 24, "a day of hours");
    let values = v2_raw(
        &api,
        LIVING_TEMPERATURE,
        1,
        "value",
        day_to - 86_400,
        day_to - 1,
    );
    for p in &t.points {
        let b0 = p.start.as_second();
        let (min, _, max) = level(&values, b0, b0 + 3600).expect("readings every hour");
        let Agg::Level { min: a, max: b, .. } = p.agg else {
            panic!("a level point: {p:?}")
        };
        assert_eq!((a, b), (min, max), "hour of {b0}");
    }
    let to = Timestamp::now().as_second();
    // The wallbox had only V1: now the server's own record answers, once it has something.
    let e = app.house.history(&Query {
        control: WALLBOX.into(),
        state: Some("actual".into()),
        from: ts(to - 86_400),
        to: ts(to),
        resolution: None,
        max_points: None,
    });
    match e {
        Ok(s) => assert_eq!(s.source, Source::LocalRecord),
        Err(e) => assert!(e.to_string().contains("has recorded nothing"), "{e}"),
    }
}

#[test]
fn bad_questions_get_clear_errors() {
    let (app, _tools) = demo();
    let now = Timestamp::now().as_second();
    let q = |control: &str, state: Option<&str>, from: i64, to: i64, r: Option<Resolution>| {
        app.house
            .history(&Query {
                control: control.into(),
                state: state.map(str::to_string),
                from: ts(from),
                to: ts(to),
                resolution: r,
                max_points: None,
            })
            .unwrap_err()
    };
    let e = q("nope", None, now - 3600, now, None);
    assert_eq!(e.code(), "DEVICE_NOT_FOUND");
    let e = q(GRID_METER, Some("colour"), now - 3600, now, None);
    assert!(e.to_string().contains("totalNeg"), "{e}");
    let e = q(GRID_METER, None, now + 3600, now + 7200, None);
    assert!(e.to_string().contains("future"), "{e}");
    let e = q(GRID_METER, None, now - 60, now - 3600, None);
    assert!(e.to_string().contains("before"), "{e}");
    let e = q(
        GRID_METER,
        None,
        now - 90 * 86_400,
        now,
        Some(Resolution::Raw),
    );
    assert!(e.to_string().contains("31 days"), "{e}");
    // The garage light's lock: no statistics, and the record keeps only primary values.
    let e = q(GARAGE_LIGHT, Some("jLocked"), now - 3600, now, None);
    assert!(e.to_string().contains("has recorded nothing"), "{e}");
    assert_eq!(e.code(), "INVALID_PARAMETERS");
}

#[test]
fn answers_are_bounded_and_say_how_to_get_the_rest() {
    let (app, _tools) = demo();
    let now = Timestamp::now().as_second();
    let to = now - now.rem_euclid(3600);
    let from = to - 30 * 86_400;
    let full = ask(
        &app,
        LIVING_TEMPERATURE,
        "value",
        from,
        to,
        Resolution::Every(Unit::Hour),
    );
    let s = app
        .house
        .history(&Query {
            control: LIVING_TEMPERATURE.into(),
            state: None,
            from: ts(from),
            to: ts(to),
            resolution: Some(Resolution::Every(Unit::Hour)),
            max_points: None,
        })
        .unwrap();
    assert_eq!(s.step, 4, "720 hours in at most 200 points");
    assert_eq!(s.points.len(), 180);
    let next = s.next.expect("a next hint");
    assert_eq!(next.from, ts(from));
    assert_eq!(next.to, ts(from) + SignedDuration::from_hours(200));
    // The merged points keep the aggregates: min of mins, max of maxes.
    for (i, p) in s.points.iter().enumerate() {
        let part = &full.points[i * 4..(i + 1) * 4];
        let (
            Agg::Level {
                min, max, count, ..
            },
            mins,
        ) = (p.agg, part)
        else {
            panic!()
        };
        let m = mins
            .iter()
            .map(|x| match x.agg {
                Agg::Level { min, .. } => min,
                _ => panic!(),
            })
            .fold(f64::INFINITY, f64::min);
        assert_eq!(min, m);
        assert!(max >= min);
        assert_eq!(count, 16);
    }
    assert_eq!(
        s.summary.min, full.summary.min,
        "the summary covers the whole range"
    );
    // Raw values are cut with a next hint that continues after the last one.
    let raw = app
        .house
        .history(&Query {
            control: LIVING_TEMPERATURE.into(),
            state: None,
            from: ts(to - 2 * 86_400),
            to: ts(to),
            resolution: Some(Resolution::Raw),
            max_points: Some(100),
        })
        .unwrap();
    assert_eq!(raw.points.len(), 100);
    let next = raw.next.unwrap();
    assert_eq!(
        next.from,
        raw.points[99].start + SignedDuration::from_mins(15)
    );
    let _ = demo_polling;
}

/// The first day of the month `back` months before the one containing `t`, as a local
/// midnight.
fn month_start(t: i64, back: i32) -> i64 {
    let tz = berlin();
    let d = date_of(&tz, t).first_of_month();
    let total = i32::from(d.year()) * 12 + i32::from(d.month()) - 1 - back;
    let first = jiff::civil::Date::new(
        total.div_euclid(12) as i16,
        (total.rem_euclid(12) + 1) as i8,
        1,
    )
    .unwrap();
    midnight(&tz, first)
}

#[test]
fn two_months_of_energy_compare_as_the_meters_counted() {
    use home_mcp::home::energy::{compare, EnergyQuery, Role};
    let (app, _tools) = demo();
    let api = MiniserverApi::of(&app);
    let now = Timestamp::now().as_second();
    // Last month and the one before (neither is the month without data, four months back).
    let (a0, a1) = (month_start(now, 2), month_start(now, 1));
    let (b0, b1) = (month_start(now, 1), month_start(now, 0));
    let energy = |from: i64, to: i64| {
        app.house
            .energy(&EnergyQuery {
                from: ts(from),
                to: ts(to),
                breakdown: None,
                meter: None,
            })
            .unwrap()
    };
    let (ea, eb) = (energy(a0, a1), energy(b0, b1));
    let role = |uuid: &str| ea.meters.iter().find(|m| m.uuid == uuid).unwrap().role;
    assert_eq!(role(GRID_METER), Role::Grid);
    assert_eq!(role(PV_METER), Role::Production);
    assert_eq!(role(WALLBOX), Role::Consumer);
    for (e, from, to) in [(&ea, a0, a1), (&eb, b0, b1)] {
        let read = |uuid: &str, group: i64, output: &str| {
            counted(
                &v2_raw(&api, uuid, group, output, from - 7200, to),
                from,
                to,
            )
            .unwrap()
        };
        let import = read(GRID_METER, 2, "total");
        let export = read(GRID_METER, 2, "totalNeg");
        let production = read(PV_METER, 2, "total");
        let f = e.figures;
        assert!(
            (f.import.unwrap() - import).abs() < 1e-6,
            "{f:?} vs {import}"
        );
        assert!((f.export.unwrap() - export).abs() < 1e-6);
        assert!((f.production.unwrap() - production).abs() < 1e-6);
        let consumption = import - export + production;
        assert!((f.consumption.unwrap() - consumption).abs() < 1e-6);
        assert!(consumption > 0.0 && production > 0.0);
    }
    let diff = compare(&ea.figures, &eb.figures);
    let d = diff["consumption"]["kwh"].as_f64().unwrap();
    let expected = eb.figures.consumption.unwrap() - ea.figures.consumption.unwrap();
    assert!((d - expected).abs() < 0.001, "{diff}");
    let percent = diff["consumption"]["percent"].as_f64().unwrap();
    assert!((percent - expected / ea.figures.consumption.unwrap() * 100.0).abs() < 0.051);
}

#[test]
fn this_month_comes_from_the_miniservers_own_totals() {
    use home_mcp::home::energy::EnergyQuery;
    let (app, _tools) = demo();
    let api = MiniserverApi::of(&app);
    // The live link has brought the meter's period totals.
    for state in ["totalMonth", "totalNegMonth"] {
        let uuid = crate::support::live::state_uuid(&app, GRID_METER, state);
        crate::support::wait_until(state, crate::support::PATIENCE, || {
            app.house.states().get(&uuid).map(|_| ()).ok_or("not yet")
        });
    }
    let now = Timestamp::now();
    let time = app.house.time();
    let month = time.start_of(Unit::Month, now);
    let e = app
        .house
        .energy(&EnergyQuery {
            from: month,
            to: now,
            breakdown: None,
            meter: None,
        })
        .unwrap();
    let states = api.states(GRID_METER);
    let num = |n: &str| {
        let v = &states[n];
        v.as_f64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            .unwrap()
    };
    let grid = e.meters.iter().find(|m| m.uuid == GRID_METER).unwrap();
    assert_eq!(grid.source, "miniserver_totals");
    assert!((grid.total.unwrap() - num("totalMonth")).abs() < 1e-6);
    assert!((grid.total_neg.unwrap() - num("totalNegMonth")).abs() < 1e-6);
    // The wallbox has no period totals: its month comes from its V1 statistics.
    let wallbox = e.meters.iter().find(|m| m.uuid == WALLBOX).unwrap();
    assert_eq!(wallbox.source, "statistics_v1");
}

/// `GET /dashboard/api/{path}` of a served server (development level on loopback: no key).
fn dashboard_api(served: &crate::support::server::Served, path: &str) -> serde_json::Value {
    let r = crate::support::net::request(
        served.addr,
        "GET",
        &format!("/dashboard/api/{path}"),
        &[] as &[&str],
        "",
    );
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    r.json()
}

#[test]
fn the_local_record_survives_a_restart_of_the_server() {
    use crate::support::server::{Miniserver, Served};
    use crate::support::wait_until;
    let ms = Miniserver::demo();
    let config = "[home]\ntime_zone = \"Europe/Berlin\"\n[dashboard]\nhistory_flush_secs = 1\n";
    let served = Served::start(&ms, config, &[]);
    served.wait_states();
    // The garage light has no statistics: switched as a wall button would, three times on,
    // each change seen by the server before the next.
    let path = format!("series?device={GARAGE_LIGHT}&period=-1h&resolution=raw");
    let recorded = |value: f64, n: usize| {
        wait_until(
            "the change in the local record",
            crate::support::PATIENCE,
            || {
                // Before the first value is recorded the light has no history yet (400).
                let r = crate::support::net::request(
                    served.addr,
                    "GET",
                    &format!("/dashboard/api/{path}"),
                    &[] as &[&str],
                    "",
                );
                if r.status != 200 {
                    return Err(serde_json::json!({"status": r.status, "body": r.body}));
                }
                let s = r.json();
                let points = s["points"].as_array().cloned().unwrap_or_default();
                let last = points.last().and_then(|p| p[1].as_f64());
                if points.len() >= n && last == Some(value) && s["source"] == "local_record" {
                    Ok(s)
                } else {
                    Err(s)
                }
            },
        )
    };
    let mut n = 1;
    let mut before = serde_json::Value::Null;
    for _ in 0..3 {
        ms.api.command(GARAGE_LIGHT, "on");
        n += 1;
        recorded(1.0, n);
        ms.api.command(GARAGE_LIGHT, "off");
        n += 1;
        before = recorded(0.0, n);
    }
    let went_on = before["summary"]["went_on"].as_u64().unwrap();
    assert!(went_on >= 3, "{before}");
    let served = served.restart();
    let after = dashboard_api(&served, &path);
    assert_eq!(after["source"], "local_record");
    let points = |s: &serde_json::Value| s["points"].as_array().unwrap().clone();
    let (old, new) = (points(&before), points(&after));
    // The restarted server adds the light's value as it finds it; what was recorded before
    // comes first, unchanged.
    assert!(new.len() >= old.len(), "{after}");
    assert_eq!(
        new[..old.len()],
        old[..],
        "every recorded change is still there: {after}"
    );
    // An assistant asking over MCP gets the same record.
    let mut mcp = crate::support::mcp::McpHttp::connect(served.addr, None);
    let tool = mcp.ok(
        "get_history",
        serde_json::json!({"device": GARAGE_LIGHT, "period": "-1h", "resolution": "raw"}),
    );
    assert_eq!(tool["source"], "local_record", "{tool}");
    let told = points(&tool);
    assert!(told.len() >= old.len(), "{tool}");
    assert_eq!(
        told[..old.len()],
        old[..],
        "get_history after the restart: {tool}"
    );
}

#[test]
fn a_miniserver_that_answers_badly_gives_an_error_or_a_partial_answer_never_a_wrong_sum() {
    use home_mcp::sim::StatsFault;
    let (app, _tools) = demo();
    let sim = crate::support::sim(&app);
    let tz = berlin();
    let to = today();
    let from = midnight(&tz, date_of(&tz, to - 3 * 86_400));
    let good = ask(
        &app,
        GRID_METER,
        "total",
        from,
        to,
        Resolution::Every(Unit::Day),
    );
    assert!(!good.partial && good.points.len() == 3);
    // An error answer instead of data: the grid meter has no other source yet.
    sim.set_stats_fault(Some(StatsFault::Error(500)));
    let e = app
        .house
        .history(&Query {
            control: GRID_METER.into(),
            state: Some("total".into()),
            from: ts(from),
            to: ts(to),
            resolution: Some(Resolution::Every(Unit::Day)),
            max_points: None,
        })
        .unwrap_err();
    assert!(e.to_string().contains("500"), "{e}");
    assert_eq!(e.code(), "CONNECTION_ERROR");
    // An empty body: no data, said so, not zero.
    sim.set_stats_fault(Some(StatsFault::Empty));
    let empty = ask(
        &app,
        GRID_METER,
        "total",
        from,
        to,
        Resolution::Every(Unit::Day),
    );
    assert!(empty.points.is_empty());
    assert!(
        !empty.no_data.is_empty(),
        "the days are named as without data"
    );
    // A record cut short: the whole records are kept and the answer says it is partial.
    sim.set_stats_fault(Some(StatsFault::Truncated));
    let cut = ask(
        &app,
        LIVING_TEMPERATURE,
        "value",
        from,
        to,
        Resolution::Every(Unit::Day),
    );
    assert!(cut.partial, "{:?}", cut.left_out);
    assert!(
        cut.left_out.iter().any(|n| n.contains("cut short")),
        "{:?}",
        cut.left_out
    );
    let cut_days = ask(
        &app,
        GRID_METER,
        "total",
        from,
        to,
        Resolution::Every(Unit::Day),
    );
    assert!(cut_days.partial);
    assert!(
        cut_days.points.len() < good.points.len(),
        "the cut record is left out"
    );
    for (p, q) in cut_days.points.iter().zip(&good.points) {
        assert_eq!(p, q, "the whole records are the same amounts");
    }
    // V1 files cut short: XML that breaks off keeps the rows before.
    let v1 = ask(
        &app,
        CELLAR_TEMPERATURE,
        "value",
        from,
        to,
        Resolution::Every(Unit::Day),
    );
    assert!(v1.partial, "{:?}", v1.left_out);
    sim.set_stats_fault(None);
}

#[test]
fn an_energy_flow_monitor_decides_what_a_meter_is() {
    use home_mcp::home::energy::{role_of, Role};
    let mut doc: serde_json::Value = serde_json::from_str(home_mcp::sim::DEMO_STRUCTURE).unwrap();
    // A monitor names the wallbox the house's battery and the PV meter a load.
    doc["controls"]["1d5c3d99-0230-6d99-ffff504f94d0e5a1"] = serde_json::json!({
        "name": "Energiefluss", "type": "EnergyFlowMonitor",
        "uuidAction": "1d5c3d99-0230-6d99-ffff504f94d0e5a1",
        "room": "1d5c3a0e-0200-4e72-ffff504f94d0e5a1",
        "details": {"nodes": [
            {"uuid": "n1", "nodeType": "Grid", "ctrlUuid": GRID_METER},
            {"uuid": "n2", "nodeType": "Storage", "ctrlUuid": WALLBOX},
            {"uuid": "n3", "nodeType": "Load", "ctrlUuid": PV_METER}
        ]},
        "states": {"Ppwr": "1d5c3d9a-0230-6d9a-ffffa3c7e19b52d4"}
    });
    let home = home_mcp::loxone::structure::parse_structure(&doc.to_string()).unwrap();
    let role = |uuid: &str| role_of(&home, home.control(uuid).unwrap());
    assert_eq!(role(GRID_METER), Role::Grid);
    assert_eq!(role(WALLBOX), Role::Storage);
    assert_eq!(role(PV_METER), Role::Consumer);
    // Without the monitor: the meter's type, then its name.
    let plain =
        home_mcp::loxone::structure::parse_structure(home_mcp::sim::DEMO_STRUCTURE).unwrap();
    let role = |uuid: &str| role_of(&plain, plain.control(uuid).unwrap());
    assert_eq!(role(GRID_METER), Role::Grid);
    assert_eq!(role(PV_METER), Role::Production);
    assert_eq!(role(WALLBOX), Role::Consumer);
}

#[test]
fn get_history_answers_the_one_query_with_clear_errors() {
    use crate::support::{ok, tool_error};
    let (app, tools) = demo();
    let tz = berlin();
    let to = today();
    let from = midnight(&tz, date_of(&tz, to - 7 * 86_400));
    let iso = |t: i64| app.house.time().format(ts(t));
    let data = ok(
        &tools,
        "get_history",
        serde_json::json!({"device": "Stromzähler", "state": "total", "from": iso(from), "to": iso(to), "resolution": "day"}),
    );
    let direct = ask(
        &app,
        GRID_METER,
        "total",
        from,
        to,
        Resolution::Every(Unit::Day),
    );
    assert_eq!(
        data,
        direct.to_json(app.house.time()),
        "the tool answers the house's query"
    );
    assert_eq!(data["source"], "statistics_v2");
    assert_eq!(data["unit"], "kWh");
    assert_eq!(data["points"].as_array().unwrap().len(), 7);
    // Words: a period, the room, the default state and resolution.
    let light = ok(
        &tools,
        "get_history",
        serde_json::json!({"device": "Deckenlicht", "room": "Küche", "period": "yesterday"}),
    );
    assert_eq!(light["measure"], "switch");
    assert_eq!(light["resolution"], "hour");
    assert_eq!(light["points"].as_array().unwrap().len(), 24);
    for (args, code, words) in [
        (
            serde_json::json!({"device": "Kühlschrank im Mond"}),
            "DEVICE_NOT_FOUND",
            "Kühlschrank",
        ),
        (
            serde_json::json!({"device": "Deckenlicht"}),
            "INVALID_PARAMETERS",
            "Küche",
        ),
        (
            serde_json::json!({"device": "Stromzähler", "from": "2099-01-01", "to": "2099-02-01"}),
            "INVALID_PARAMETERS",
            "future",
        ),
        (
            serde_json::json!({"device": "Stromzähler", "from": "-1h", "to": "-2h"}),
            "INVALID_PARAMETERS",
            "before",
        ),
        (
            serde_json::json!({"device": "Stromzähler", "period": "last 3 months", "resolution": "raw"}),
            "INVALID_PARAMETERS",
            "31 days",
        ),
        (
            serde_json::json!({"device": "Stromzähler", "period": "someday"}),
            "INVALID_PARAMETERS",
            "last month",
        ),
        (
            serde_json::json!({"device": "Stromzähler", "state": "colour"}),
            "INVALID_PARAMETERS",
            "totalNeg",
        ),
        (
            serde_json::json!({"device": "Garagenlicht", "state": "jLocked"}),
            "INVALID_PARAMETERS",
            "recorded nothing",
        ),
        (
            serde_json::json!({"device": "Stromzähler", "period": "today", "from": "-1h"}),
            "INVALID_PARAMETERS",
            "not both",
        ),
    ] {
        let e = tool_error(&tools, "get_history", args.clone());
        assert_eq!(e["code"], code, "{args}: {e}");
        assert!(
            e["message"].as_str().unwrap().contains(words),
            "{args}: {e}"
        );
    }
    let e = crate::support::invalid_params(
        &tools,
        "get_history",
        serde_json::json!({"device": "Stromzähler", "max_points": 5000}),
    );
    assert!(e.contains("max_points"), "{e}");
}

#[test]
fn get_energy_compares_periods_and_the_resources_read_the_same() {
    use crate::support::ok;
    use home_mcp::mcp::{Handler, RequestContext};
    let (app, tools) = demo();
    let data = ok(
        &tools,
        "get_energy",
        serde_json::json!({"period": "last month", "compare_with": "this month", "breakdown": "day"}),
    );
    let f = &data["figures"];
    let c = &data["compare"]["figures"];
    let d = data["compare"]["difference"]["consumption"]["kwh"]
        .as_f64()
        .unwrap();
    let expected = f["consumption"].as_f64().unwrap() - c["consumption"].as_f64().unwrap();
    assert!((d - expected).abs() < 0.002, "{data}");
    assert!(data["breakdown"]["rows"].as_array().unwrap().len() >= 28);
    assert_eq!(data["breakdown"]["columns"][0], "start");
    // The resource template answers as the tool; home://energy has today and this month.
    let read = |uri: &str| {
        let c = tools
            .read_resource(uri, &RequestContext::default())
            .unwrap_or_else(|e| panic!("{uri}: {e:?}"));
        serde_json::from_str::<serde_json::Value>(c[0].text.as_deref().unwrap()).unwrap()
    };
    let r = read(&format!(
        "home://history/{KITCHEN_LIGHT}?period=last%207%20days&resolution=day"
    ));
    let t = ok(
        &tools,
        "get_history",
        serde_json::json!({"device": KITCHEN_LIGHT, "period": "last 7 days", "resolution": "day"}),
    );
    assert_eq!(r["points"], t["points"]);
    let by_name = read("home://history/Stromz%C3%A4hler?state=total&period=yesterday");
    assert_eq!(by_name["device"]["uuid"], GRID_METER);
    let energy = read("home://energy");
    assert!(energy["devices"].as_array().is_some_and(|d| !d.is_empty()));
    assert!(energy["today"]["figures"]["import"].is_number(), "{energy}");
    assert!(
        energy["this_month"]["figures"]["consumption"].is_number(),
        "{energy}"
    );
    let _ = app;
    // Bad queries are the resource errors of the others.
    for (uri, code) in [
        (format!("home://history/{GRID_METER}?colour=red"), -32602),
        ("home://history/Kühlschrank%20im%20Mond".to_string(), -32002),
        (
            format!("home://history/{GRID_METER}?period=someday"),
            -32602,
        ),
    ] {
        let e = tools
            .read_resource(&uri, &RequestContext::default())
            .unwrap_err();
        assert_eq!(e.code, code, "{uri}: {e:?}");
    }
    let t = home_mcp::resources::templates();
    assert!(t
        .iter()
        .any(|t| t.uri_template.starts_with("home://history/{device}{?")));
}

#[test]
fn the_one_real_structure_file_with_statistics_answers_from_them() {
    // Of the real structure files in tests/fixtures, only the Kotlin sample app declares
    // statistics: its InfoOnlyDigital "HDO" (the low-tariff signal) records every change in
    // V1, shown as digital. None declares statisticV2.
    let text = crate::support::fixture_text("Smarteon-loxone-client-kotlin-sample-app.json");
    let home = home_mcp::loxone::structure::parse_structure(&text).unwrap();
    let mut with: Vec<&home_mcp::home::Control> = home
        .controls
        .iter()
        .filter(|c| !c.statistic.is_empty())
        .collect();
    assert_eq!(with.len(), 1);
    let hdo = with.pop().unwrap();
    assert_eq!(hdo.name, "HDO");
    let v1 = hdo.statistic.v1.as_ref().unwrap();
    assert_eq!(
        (v1.frequency, v1.outputs.len(), v1.outputs[0].visu_type),
        (1, 1, 1)
    );
    assert!(hdo.statistic.v2.is_empty());
    for file in crate::support::fixture_app::FIXTURES {
        let other =
            home_mcp::loxone::structure::parse_structure(&crate::support::fixture_text(file))
                .unwrap();
        let n = other
            .controls
            .iter()
            .filter(|c| !c.statistic.is_empty())
            .count();
        assert_eq!(
            n,
            usize::from(file.starts_with("Smarteon-loxone-client-kotlin")),
            "{file}"
        );
    }
    // Served by the simulator, the server reads it from the V1 month files.
    let dir = TempDir::new("history-kotlin");
    let (app, server, _sim) = house_of(&text, None, test_config(), &dir);
    let api = MiniserverApi::demo(server.addr());
    let tz = berlin();
    let to = today();
    let from = midnight(&tz, date_of(&tz, to - 3 * 86_400));
    let s = ask(
        &app,
        &hdo.uuid,
        "active",
        from,
        to,
        Resolution::Every(Unit::Day),
    );
    assert_eq!(s.source, Source::StatisticsV1, "{:?}", s.left_out);
    let mut changes = Vec::new();
    let mut d = date_of(&tz, from - 8 * 86_400).first_of_month();
    while midnight(&tz, d) < to {
        let yyyymm = format!("{:04}{:02}", d.year(), d.month());
        if let Some(rows) = v1_month(&api, &hdo.uuid, &yyyymm) {
            changes.extend(v1_instants(&tz, &rows, 0));
        }
        d = d.last_of_month().tomorrow().unwrap();
    }
    for p in &s.points {
        let Agg::Switch { on_secs, .. } = p.agg else {
            panic!()
        };
        let expected = on_seconds(&changes, p.start.as_second(), p.end.as_second());
        assert!((on_secs - expected).abs() < 1e-6, "{p:?} vs {expected}");
    }
    assert_eq!(s.points.len(), 3);
}

/// An MCP session as an assistant's client holds it: Streamable HTTP or stdio.
trait Session {
    /// A request and its JSON-RPC answer.
    fn rpc(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value;
}

impl Session for crate::support::mcp::McpHttp {
    fn rpc(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        crate::support::mcp::McpHttp::rpc(self, method, params)
    }
}

impl Session for crate::support::mcp::McpStdio {
    fn rpc(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        crate::support::mcp::McpStdio::rpc(self, method, params)
    }
}

/// `tools/call` of `tool` over `c`: the tool's `data`, or its error object (`Err`).
fn call_over(
    c: &mut dyn Session,
    tool: &str,
    args: serde_json::Value,
) -> Result<serde_json::Value, serde_json::Value> {
    let v = c.rpc(
        "tools/call",
        serde_json::json!({"name": tool, "arguments": args}),
    );
    let r = &v["result"];
    assert!(r.is_object(), "{tool}: {v}");
    if r["isError"] == true {
        // A failure's envelope is the text content (no structuredContent: it would not
        // match the tool's output schema).
        let text = r["content"][0]["text"].as_str().unwrap_or_default();
        let s: serde_json::Value = serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("{tool}: the error is not JSON ({e}): {v}"));
        assert_eq!(s["status"], "error", "{tool}: {v}");
        Err(s["error"].clone())
    } else {
        let s = &r["structuredContent"];
        assert_eq!(s["status"], "success", "{tool}: {v}");
        Ok(s["data"].clone())
    }
}

/// A time of an answer (ISO 8601 with the house's offset) as Unix seconds.
fn unix(v: &serde_json::Value) -> i64 {
    v.as_str()
        .and_then(|s| s.parse::<Timestamp>().ok())
        .unwrap_or_else(|| panic!("not an ISO 8601 time: {v}"))
        .as_second()
}

/// A number of an answer's row.
fn num(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The answers are rounded to 3 decimals (docs/tools.md).
const ROUNDED: f64 = 0.0005 + 1e-9;

/// What the "Done when" asks, over one MCP session `c` of a server on the simulator
/// behind `api`, judged against the simulator's own series: a year of daily energy of the grid
/// meter (its month without data and its counter reset), a month of hourly temperature, a week
/// of on-time of the kitchen light, the 23- and 25-hour days, two months of energy compared,
/// the resource template read as the tool answers, and the errors as tool errors.
fn judge_over_mcp(c: &mut dyn Session, api: &MiniserverApi, how: &str) {
    let tz = berlin();
    let iso = |t: i64| ts(t).to_string();
    let history = |c: &mut dyn Session, args: serde_json::Value| {
        call_over(c, "get_history", args.clone())
            .unwrap_or_else(|e| panic!("{how}: get_history {args}: {e}"))
    };
    // A year of daily energy.
    let to = today();
    let from = midnight(&tz, date_of(&tz, to - 365 * 86_400));
    let year = history(
        c,
        serde_json::json!({"device": GRID_METER, "state": "total", "from": iso(from),
            "to": iso(to), "resolution": "day", "max_points": 400}),
    );
    assert_eq!(year["source"], "statistics_v2", "{how}");
    assert_eq!(year["unit"], "kWh", "{how}");
    assert_eq!(year["time_zone"], "Europe/Berlin", "{how}");
    let readings = v2_raw(api, GRID_METER, 2, "total", from - 7200, to);
    assert_eq!(
        readings.windows(2).filter(|w| w[1].1 < w[0].1).count(),
        1,
        "one counter reset in the simulator's year"
    );
    let points = year["points"].as_array().unwrap();
    let no_data: Vec<(i64, i64)> = year["no_data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (unix(&g["from"]), unix(&g["to"])))
        .collect();
    let (mut with_data, mut without, mut total) = (0, 0, 0.0);
    for (b0, b1) in days(&tz, from, to) {
        let answer = points
            .iter()
            .find(|p| unix(&p[0]) == b0)
            .map(|p| num(&p[1]));
        match counted(&readings, b0, b1) {
            Some(expected) => {
                with_data += 1;
                total += expected;
                let a = answer.unwrap_or_else(|| panic!("{how}: no amount for the day of {b0}"));
                assert!(
                    (a - expected).abs() < ROUNDED,
                    "{how}: day of {b0} ({} h): {a} vs the simulator's {expected}",
                    (b1 - b0) / 3600
                );
            }
            None => {
                without += 1;
                assert!(answer.is_none(), "{how}: an amount for the day of {b0}");
                assert!(
                    no_data.iter().any(|(a, b)| *a <= b0 && *b >= b1),
                    "{how}: the day of {b0} is not named in no_data: {no_data:?}"
                );
            }
        }
    }
    assert!(with_data > 300, "{how}: {with_data} days with data");
    assert!(
        (28..=31).contains(&without),
        "{how}: {without} days without"
    );
    assert!(
        (num(&year["summary"]["total"]) - total).abs() < 0.01,
        "{how}: {} vs {total}",
        year["summary"]
    );
    assert!(
        year["left_out"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().is_some_and(|n| n.contains("reset"))),
        "{how}: the reset is named: {}",
        year["left_out"]
    );

    // A month of hourly temperature.
    let now = Timestamp::now().as_second();
    let hour_to = now - now.rem_euclid(3600);
    let hour_from = hour_to - 30 * 86_400;
    let month = history(
        c,
        serde_json::json!({"device": LIVING_TEMPERATURE, "from": iso(hour_from),
            "to": iso(hour_to), "resolution": "hour", "max_points": 800}),
    );
    assert_eq!(month["unit"], "°C", "{how}");
    assert_eq!(
        month["columns"],
        serde_json::json!(["start", "min", "mean", "max", "count"])
    );
    let rows = month["points"].as_array().unwrap();
    assert_eq!(rows.len(), 30 * 24, "{how}: one point an hour");
    let readings = v2_raw(api, LIVING_TEMPERATURE, 1, "value", hour_from, hour_to - 1);
    for p in rows {
        let b0 = unix(&p[0]);
        let (min, mean, max) = level(&readings, b0, b0 + 3600).expect("readings every hour");
        for (got, want) in [(&p[1], min), (&p[2], mean), (&p[3], max)] {
            assert!(
                (num(got) - want).abs() < ROUNDED,
                "{how}: hour of {b0}: {p} vs {want}"
            );
        }
        assert_eq!(p[4], 4, "{how}: four records an hour");
    }

    // A week of on-time of a light.
    let week_from = midnight(&tz, date_of(&tz, to - 7 * 86_400 + 3600));
    let week = history(
        c,
        serde_json::json!({"device": KITCHEN_LIGHT, "state": "active", "from": iso(week_from),
            "to": iso(to), "resolution": "day"}),
    );
    assert_eq!(week["measure"], "switch", "{how}");
    let rows = week["points"].as_array().unwrap();
    assert_eq!(rows.len(), 7, "{how}");
    let changes = v2_raw(api, KITCHEN_LIGHT, 1, "active", week_from - 7 * 86_400, to);
    for p in rows {
        let b0 = unix(&p[0]);
        let b1 = midnight(&tz, date_of(&tz, b0 + 30 * 3600));
        let expected = on_seconds(&changes, b0, b1);
        assert!(
            (num(&p[1]) - expected).abs() <= 0.5,
            "{how}: day of {b0}: {p} vs {expected} s"
        );
        let went_on = changes
            .windows(2)
            .filter(|w| w[1].0 >= b0 && w[1].0 < b1 && w[0].1 == 0.0 && w[1].1 != 0.0)
            .count();
        assert_eq!(p[2], went_on, "{how}: day of {b0}");
    }

    // The daylight-saving days: 23 and 25 hours, each the meter's count.
    let all = days(&tz, midnight(&tz, date_of(&tz, to - 360 * 86_400)), to);
    for hours in [23, 25] {
        let &(b0, b1) = all
            .iter()
            .find(|(a, b)| b - a == hours * 3600)
            .expect("a clock change in the last year");
        let day = history(
            c,
            serde_json::json!({"device": GRID_METER, "state": "total", "from": iso(b0),
                "to": iso(b1), "resolution": "hour"}),
        );
        let rows = day["points"].as_array().unwrap();
        assert_eq!(rows.len() as i64, hours, "{how}: the {hours}-hour day");
        let readings = v2_raw(api, GRID_METER, 2, "total", b0 - 7200, b1);
        for p in rows {
            let t = unix(&p[0]);
            let expected = counted(&readings, t, t + 3600).unwrap();
            assert!(
                (num(&p[1]) - expected).abs() < ROUNDED,
                "{how}: {p} vs {expected}"
            );
        }
    }

    // Two months of energy compared: last month against the one before.
    let now = Timestamp::now().as_second();
    let (a0, a1) = (month_start(now, 2), month_start(now, 1));
    let (b0, b1) = (month_start(now, 1), month_start(now, 0));
    let name = |t: i64| {
        let d = date_of(&tz, t);
        format!("{:04}-{:02}", d.year(), d.month())
    };
    let energy = call_over(
        c,
        "get_energy",
        serde_json::json!({"period": name(b0), "compare_with": name(a0)}),
    )
    .unwrap_or_else(|e| panic!("{how}: get_energy: {e}"));
    assert_eq!(unix(&energy["from"]), b0, "{how}: {energy}");
    assert_eq!(unix(&energy["compare"]["from"]), a0, "{how}");
    let mut consumption = Vec::new();
    for (figures, from, to) in [
        (&energy["figures"], b0, b1),
        (&energy["compare"]["figures"], a0, a1),
    ] {
        let read = |uuid: &str, output: &str| {
            counted(&v2_raw(api, uuid, 2, output, from - 7200, to), from, to).unwrap()
        };
        let (import, export, production) = (
            read(GRID_METER, "total"),
            read(GRID_METER, "totalNeg"),
            read(PV_METER, "total"),
        );
        for (name, want) in [
            ("import", import),
            ("export", export),
            ("production", production),
            ("consumption", import - export + production),
        ] {
            assert!(
                (num(&figures[name]) - want).abs() < 2.0 * ROUNDED,
                "{how}: {name} of {from}: {figures} vs {want}"
            );
        }
        consumption.push(import - export + production);
    }
    let difference = num(&energy["compare"]["difference"]["consumption"]["kwh"]);
    assert!(
        (difference - (consumption[0] - consumption[1])).abs() < 0.002,
        "{how}: {}",
        energy["compare"]["difference"]
    );

    // The resource template answers as the tool.
    let uri = format!(
        "home://history/{KITCHEN_LIGHT}?state=active&from={}&to={}&resolution=day",
        iso(week_from),
        iso(to)
    );
    let read = c.rpc("resources/read", serde_json::json!({"uri": uri}));
    let text = read["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{how}: {uri}: {read}"));
    let resource: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(resource["points"], week["points"], "{how}: {uri}");

    // Bad questions are tool errors the assistant can read.
    for (args, code, words) in [
        (
            serde_json::json!({"device": "Kühlschrank im Mond"}),
            "DEVICE_NOT_FOUND",
            "Kühlschrank",
        ),
        (
            serde_json::json!({"device": GRID_METER, "from": "2099-01-01", "to": "2099-02-01"}),
            "INVALID_PARAMETERS",
            "future",
        ),
        (
            serde_json::json!({"device": GRID_METER, "from": "-1h", "to": "-2h"}),
            "INVALID_PARAMETERS",
            "before",
        ),
        (
            serde_json::json!({"device": GRID_METER, "period": "last 3 months", "resolution": "raw"}),
            "INVALID_PARAMETERS",
            "31 days",
        ),
    ] {
        let e = call_over(c, "get_history", args.clone()).expect_err("a tool error");
        assert_eq!(e["code"], code, "{how}: {args}: {e}");
        assert!(
            e["message"].as_str().is_some_and(|m| m.contains(words)),
            "{how}: {args}: {e}"
        );
    }
}

#[test]
fn over_mcp_http_and_stdio_the_answers_are_the_simulators_series() {
    use crate::support::mcp::{McpHttp, McpStdio};
    use crate::support::server::{Miniserver, Served};
    let ms = Miniserver::demo();
    let zone = "[home]\ntime_zone = \"Europe/Berlin\"\n";
    let served = Served::start(&ms, zone, &[]);
    served.wait_states();
    let mut http = McpHttp::connect(served.addr, None);
    judge_over_mcp(&mut http, &ms.api, "HTTP");
    drop(served);

    // `home-mcp stdio` on the same simulated Miniserver, as Claude Desktop starts it.
    let dir = TempDir::new("history-stdio");
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\ndata_dir = {:?}\n{zone}",
            dir.0.display().to_string()
        ),
    )
    .unwrap();
    let host = ms.api.addr.to_string();
    let mut stdio = McpStdio::start(
        &["--config", config.to_str().unwrap()],
        &[
            ("HOME_HOST", &host),
            ("HOME_USER", &ms.api.user),
            ("HOME_PASS", &ms.api.password),
        ],
    );
    // The structure file is loaded before the first answer; the statistics are asked then.
    crate::support::wait_until(
        "stdio answers get_history",
        crate::support::PATIENCE,
        || {
            call_over(
                &mut stdio,
                "get_history",
                serde_json::json!({"device": GRID_METER, "period": "yesterday"}),
            )
        },
    );
    judge_over_mcp(&mut stdio, &ms.api, "stdio");
}
