//! The simulator's own statistics as a test's oracle, read over its HTTP API as any Loxone
//! client would (`dev/sps/getStatistic/...` raw records, the V1 month files) and decoded here,
//! apart from the product's adapter (`loxone::stats`); buckets of the house's calendar and
//! the amounts, on-times and levels per bucket are computed here too, with `jiff` directly
//! rather than the product's `home::time`.

use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::Timestamp;

use super::drive::MiniserverApi;

/// The demo house's grid meter (Stromzähler, bidirectional, Statistics V2 groups 1 `actual`
/// and 2 `total`/`totalNeg`).
pub const GRID_METER: &str = "1d5c3c2e-0222-5d52-ffff504f94d0e5a1";
/// The demo's PV meter (V2 groups 1 `actual`, 2 `total`).
pub const PV_METER: &str = "1d5c3c32-0223-5d6e-ffff504f94d0e5a1";
/// The demo's wallbox meter (Statistics V1 only: `total`, `actual`).
pub const WALLBOX: &str = "1d5c3bfc-021f-5bf4-ffff504f94d0e5a1";
/// Living-room temperature (InfoOnlyAnalog, V2 every 15 minutes).
pub const LIVING_TEMPERATURE: &str = "1d5c3a8c-0208-51e4-ffff504f94d0e5a1";
/// Cellar temperature (InfoOnlyAnalog, V1 every 15 minutes).
pub const CELLAR_TEMPERATURE: &str = "1d5c3c26-0222-5d1a-ffff504f94d0e5a1";
/// Kitchen ceiling light (Switch, V2 at every change).
pub const KITCHEN_LIGHT: &str = "1d5c3a92-0209-520e-ffff504f94d0e5a1";
/// The front door contact (InfoOnlyDigital, V1 at every change).
pub const FRONT_DOOR: &str = "1d5c3bec-021e-5b84-ffff504f94d0e5a1";
/// The garage light (Switch without statistics: the local record's).
pub const GARAGE_LIGHT: &str = "1d5c3bf9-021f-5bdf-ffff504f94d0e5a1";

/// The simulator's zone ([`home_mcp::sim::SimConfig::time_zone`]'s default), read here on
/// its own.
pub fn berlin() -> TimeZone {
    TimeZone::get("Europe/Berlin")
        .or_else(|_| TimeZone::posix("CET-1CEST,M3.5.0,M10.5.0/3"))
        .expect("a zone")
}

fn get_bytes(api: &MiniserverApi, path: &str) -> (u16, Vec<u8>) {
    use base64::Engine;
    use std::io::Read;
    let auth =
        base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", api.user, api.password));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut resp = agent
        .get(format!("http://{}{path}", api.addr))
        .header("Authorization", format!("Basic {auth}"))
        .call()
        .unwrap_or_else(|e| panic!("GET {path}: {e}"));
    let status = resp.status().as_u16();
    let mut body = Vec::new();
    resp.body_mut()
        .as_reader()
        .read_to_end(&mut body)
        .expect("read the body");
    (status, body)
}

/// Records of a u32 time and `width` little-endian f64 values.
pub fn decode(body: &[u8], width: usize) -> Vec<(i64, Vec<f64>)> {
    let size = 4 + 8 * width;
    assert_eq!(body.len() % size, 0, "whole records of {size} bytes");
    body.chunks_exact(size)
        .map(|r| {
            let t = i64::from(u32::from_le_bytes([r[0], r[1], r[2], r[3]]));
            let v = (0..width)
                .map(|k| {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(&r[4 + 8 * k..12 + 8 * k]);
                    f64::from_le_bytes(b)
                })
                .collect();
            (t, v)
        })
        .collect()
}

/// The raw V2 records of `output` of `group` in `[from, until]` (Unix seconds):
/// `GET /dev/sps/getStatistic/{uuid}/raw/{from}/{until}/all/{group}/{output}`.
pub fn v2_raw(
    api: &MiniserverApi,
    uuid: &str,
    group: i64,
    output: &str,
    from: i64,
    until: i64,
) -> Vec<(i64, f64)> {
    let path = format!("/dev/sps/getStatistic/{uuid}/raw/{from}/{until}/all/{group}/{output}");
    let (status, body) = get_bytes(api, &path);
    assert_eq!(status, 200, "GET {path}");
    decode(&body, 1)
        .into_iter()
        .map(|(t, v)| (t, v[0]))
        .collect()
}

/// The V1 month file of `uuid` for `yyyymm` (`GET /stats/{uuid}.{yyyymm}.xml`): its rows as
/// (wall-clock `T`, values), `None` for 404 (no data that month).
pub fn v1_month(api: &MiniserverApi, uuid: &str, yyyymm: &str) -> Option<Vec<(String, Vec<f64>)>> {
    let (status, body) = get_bytes(api, &format!("/stats/{uuid}.{yyyymm}.xml"));
    if status == 404 {
        return None;
    }
    assert_eq!(status, 200);
    let text = String::from_utf8(body).expect("UTF-8 XML");
    let mut rows = Vec::new();
    for line in text.lines().filter(|l| l.starts_with("<S ")) {
        let attr = |name: &str| {
            let key = format!(" {name}=\"");
            let at = line.find(&key)? + key.len();
            let end = line[at..].find('"')? + at;
            Some(line[at..end].to_string())
        };
        let t = attr("T").expect("a T");
        let mut values = vec![attr("V").expect("a V").parse().expect("a number")];
        let mut k = 2;
        while let Some(v) = attr(&format!("V{k}")) {
            values.push(v.parse().expect("a number"));
            k += 1;
        }
        rows.push((t, values));
    }
    Some(rows)
}

/// V1 rows as instants: wall-clock times read on `tz`, the repeated autumn hour in row order.
pub fn v1_instants(tz: &TimeZone, rows: &[(String, Vec<f64>)], column: usize) -> Vec<(i64, f64)> {
    let mut out: Vec<(i64, f64)> = Vec::new();
    for (t, v) in rows {
        let dt: jiff::civil::DateTime = t.replacen(' ', "T", 1).parse().expect("a wall time");
        let amb = tz.to_ambiguous_timestamp(dt);
        let earlier = amb.compatible().expect("an instant").as_second();
        let later = amb.later().expect("an instant").as_second();
        let s = match out.last() {
            Some(&(prev, _)) if earlier <= prev => later,
            _ => earlier,
        };
        out.push((s, v[column]));
    }
    out
}

/// The local midnight starting `date`.
pub fn midnight(tz: &TimeZone, date: Date) -> i64 {
    date.to_zoned_datetime(tz.clone())
        .and_then(|z| z.start_of_day())
        .expect("a midnight")
        .timestamp()
        .as_second()
}

/// The local date of Unix second `t`.
pub fn date_of(tz: &TimeZone, t: i64) -> Date {
    Timestamp::from_second(t)
        .expect("an instant")
        .to_zoned_datetime(tz.clone())
        .date()
}

/// Local days `[start, next start)` from the day containing `from` to the one containing
/// `to - 1`.
pub fn days(tz: &TimeZone, from: i64, to: i64) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut d = date_of(tz, from);
    loop {
        let start = midnight(tz, d);
        if start >= to {
            break;
        }
        let next = d.tomorrow().expect("a day");
        out.push((start, midnight(tz, next)));
        d = next;
    }
    out
}

/// What a counter counted in `(b0, b1]`: the differences of consecutive readings ending there,
/// a reading below the one before being a reset (counted from 0). `None` when no reading ends
/// in it.
pub fn counted(readings: &[(i64, f64)], b0: i64, b1: i64) -> Option<f64> {
    let mut sum = 0.0;
    let mut any = false;
    for w in readings.windows(2) {
        let ((_, a), (t, b)) = (w[0], w[1]);
        if t > b0 && t <= b1 {
            any = true;
            sum += if b < a { b } else { b - a };
        }
    }
    // The first reading of all has no reading before it: it counts nothing.
    any.then_some(sum)
}

/// Seconds a 0/1 series is on in `[b0, b1)`, the state before `b0` taken from the last record
/// before it.
pub fn on_seconds(changes: &[(i64, f64)], b0: i64, b1: i64) -> f64 {
    let mut state = changes
        .iter()
        .take_while(|(t, _)| *t <= b0)
        .last()
        .map(|x| x.1);
    let mut at = b0;
    let mut on = 0.0;
    for &(t, v) in changes.iter().filter(|(t, _)| *t > b0 && *t < b1) {
        if state.is_some_and(|s| s != 0.0) {
            on += (t - at) as f64;
        }
        state = Some(v);
        at = t;
    }
    if state.is_some_and(|s| s != 0.0) {
        on += (b1 - at) as f64;
    }
    on
}

/// `(min, mean, max)` of the readings in `[b0, b1)` (plain mean: the simulator records at
/// fixed intervals); `None` without one.
pub fn level(readings: &[(i64, f64)], b0: i64, b1: i64) -> Option<(f64, f64, f64)> {
    let v: Vec<f64> = readings
        .iter()
        .filter(|(t, _)| *t >= b0 && *t < b1)
        .map(|x| x.1)
        .collect();
    if v.is_empty() {
        return None;
    }
    let min = v.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    Some((min, v.iter().sum::<f64>() / v.len() as f64, max))
}
