//! The Miniserver's statistics on the wire (statistics.md A1, A2): the answers' formats and
//! the requests that fetch them, as the house's [`Statistics`] seam.
//!
//! - **V2** (firmware 13.1+): `jdev/sps/getStatisticInfo/{uuid}` ([`parse_info`]: the groups
//!   with data and since when) and
//!   `dev/sps/getStatistic/{uuid}/{raw|diff}/{from}/{until}/{unit}/{group}/{output}` over HTTP
//!   ([`parse_v2`]: headerless records of a little-endian u32 Unix UTC second and one f64 per
//!   output). One output per request (as the live-tested LoxBerry client asks); a body whose
//!   length fits the whole group's record width instead is read as that and the output picked.
//! - **V1**: the month file `stats/statisticdata.xml/{uuid}/{YYYYMM}` over HTTP
//!   ([`parse_v1_xml`]: `<S T="2016-08-17 23:47:00" V="0.572" V2="..."/>` rows in Miniserver
//!   local time; HTTP 404 means no data that month) and, while the live WebSocket is up,
//!   `binstatisticdata/{uuid}/{YYYYMM}` over it ([`parse_binstat`]: records of a u32
//!   Miniserver-local second since 2009-01-01 and one f64 per output), asked through the
//!   link's [`super::live::LinkCommands`].
//!
//! Every parser is bounded by its input and never panics. What it cannot read it reports in
//! [`Records::problems`] and keeps the rest: a record cut short at the end, a value that is no
//! finite number, a row without a time, a `binstatisticdata` answer cut at
//! [`MAX_STATISTIC_BYTES`]. An answer that is an `LL` error instead of data is an error, and so
//! is an HTTP answer larger than [`MAX_STATISTIC_BYTES`] (the client's bound, read no
//! further); an empty body is no records.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value as Json;

use super::answer::LoxoneError;
use super::client::{parse_ll, segment, Client};
use super::live::LinkCommands;
use crate::home::house::Statistics;
use crate::home::statistic::{GroupSince, Records, V2Request};
use crate::home::time::HouseTime;
use crate::home::{Control, ControllerError};

/// Largest statistics answer read (over HTTP a larger one is an error, see the module docs).
pub const MAX_STATISTIC_BYTES: u64 = super::client::MAX_DATA_BYTES;

/// How long a `binstatisticdata` answer over the live WebSocket may take before the XML file
/// over HTTP is asked instead.
pub const WS_ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// `getStatisticInfo`'s `value`: `[{"id": 2, "activeSince": 1661990400}, ...]`, given as an
/// array or as JSON text of one (both seen, statistics.md A2). Entries without a numeric
/// `id` are skipped; a missing `activeSince` is 0.
pub fn parse_info(value: &Json) -> Result<Vec<GroupSince>, LoxoneError> {
    let parsed;
    let list = match value {
        Json::Array(a) => a,
        Json::String(s) if s.trim().is_empty() => return Ok(Vec::new()),
        Json::String(s) => {
            parsed = serde_json::from_str::<Json>(s).map_err(|e| {
                LoxoneError::BadAnswer(format!("getStatisticInfo value is not JSON: {e}"))
            })?;
            match &parsed {
                Json::Array(a) => a,
                _ => {
                    return Err(LoxoneError::BadAnswer(
                        "getStatisticInfo value is not a list".into(),
                    ))
                }
            }
        }
        Json::Null => return Ok(Vec::new()),
        _ => {
            return Err(LoxoneError::BadAnswer(
                "getStatisticInfo value is not a list".into(),
            ))
        }
    };
    let number = |v: Option<&Json>| match v {
        Some(Json::Number(n)) => n.as_i64(),
        Some(Json::String(s)) => s.trim().parse().ok(),
        _ => None,
    };
    Ok(list
        .iter()
        .filter_map(|g| {
            Some(GroupSince {
                id: number(g.get("id"))?,
                active_since: number(g.get("activeSince")).unwrap_or(0),
            })
        })
        .collect())
}

/// Records of a little-endian u32 time and `width` f64 values (V2 bodies, `binstatisticdata`).
/// A record cut short at the end is left out and named in `problems`; a record whose values
/// are not all finite is left out and counted. `truncated`: the body was cut at the byte
/// bound.
fn parse_records(body: &[u8], width: usize, truncated: bool) -> Records {
    let mut out = Records::empty(width);
    let size = 4 + 8 * width;
    let whole = body.len() / size;
    let mut bad = 0usize;
    let mut row = vec![0.0; width];
    for rec in body.chunks_exact(size) {
        let time = u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]);
        for (k, v) in row.iter_mut().enumerate() {
            let at = 4 + 8 * k;
            let mut b = [0u8; 8];
            b.copy_from_slice(&rec[at..at + 8]);
            *v = f64::from_le_bytes(b);
        }
        if row.iter().all(|v| v.is_finite()) {
            out.push(i64::from(time), &row);
        } else {
            bad += 1;
        }
    }
    let rest = body.len() - whole * size;
    if truncated {
        out.problems.push(format!(
            "the answer was longer than {MAX_STATISTIC_BYTES} bytes; later records are left out"
        ));
    } else if rest > 0 {
        out.problems.push(format!(
            "the last record was cut short ({rest} of {size} bytes) and is left out"
        ));
    }
    if bad > 0 {
        out.problems.push(format!(
            "{bad} records with values that are not numbers are left out"
        ));
    }
    out
}

/// A V2 `getStatistic` body for one output of a group of `group_size` data points, the
/// output at `position`: records of 12 bytes (the output alone, as asked), or of the whole
/// group's width when the length fits only that (the Miniserver ignored the output filter).
/// Times are Unix UTC seconds. An empty body is no records (no data in the range).
pub fn parse_v2(body: &[u8], group_size: usize, position: usize) -> Records {
    let fits = |w: usize| body.len().is_multiple_of(4 + 8 * w);
    if group_size > 1 && !fits(1) && fits(group_size) && !body.is_empty() {
        return parse_records(body, group_size, false).column(position);
    }
    parse_records(body, 1, false)
}

/// A `binstatisticdata` answer: records of a u32 Miniserver-local second since 2009-01-01 and
/// `outputs` f64 values, in the order of `statistic.outputs`. `truncated`: the answer was cut
/// at [`MAX_STATISTIC_BYTES`].
pub fn parse_binstat(body: &[u8], outputs: usize, truncated: bool) -> Records {
    parse_records(body, outputs.max(1), truncated)
}

/// A V1 month file (`<Statistics Name=".." NumOutputs="2" Outputs="a,b">` with
/// `<S T=".." V=".." V2=".."/>` rows) as records of `outputs` values (columns `V`, `V2`,
/// ... `V{outputs}`), times in Miniserver-local seconds since 2009-01-01. A missing column
/// reads as not recorded: the row is left out and counted, as are rows without a readable
/// `T`. XML that breaks off keeps the rows before and says so.
pub fn parse_v1_xml(text: &str, outputs: usize) -> Records {
    use quick_xml::events::Event;
    let outputs = outputs.max(1);
    let mut out = Records::empty(outputs);
    let mut reader = quick_xml::Reader::from_str(text);
    let mut skipped = 0usize;
    let mut row = vec![0.0; outputs];
    let mut broken = None;
    loop {
        match reader.read_event() {
            Ok(Event::Empty(e)) | Ok(Event::Start(e)) if e.name().as_ref() == "S" => {
                let mut time = None;
                let mut have = vec![false; outputs];
                for attr in e.attributes().flatten() {
                    let value: Cow<str> =
                        match attr.normalized_value(quick_xml::XmlVersion::Implicit1_0) {
                            Ok(v) => v,
                            Err(_) => continue,
                        };
                    match attr.key.as_ref() {
                        "T" => time = HouseTime::local_secs_of_text(&value),
                        key => {
                            let col = match key {
                                "V" => Some(0),
                                k => k
                                    .strip_prefix('V')
                                    .and_then(|n| n.parse::<usize>().ok())
                                    .filter(|n| *n >= 2)
                                    .map(|n| n - 1),
                            };
                            if let Some(c) = col.filter(|c| *c < outputs) {
                                if let Ok(v) = value.trim().parse::<f64>() {
                                    if v.is_finite() {
                                        row[c] = v;
                                        have[c] = true;
                                    }
                                }
                            }
                        }
                    }
                }
                match time {
                    Some(t) if have.iter().all(|h| *h) => out.push(t, &row),
                    _ => skipped += 1,
                }
            }
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => {
                broken = Some(e.to_string());
                break;
            }
        }
    }
    if let Some(e) = broken {
        out.problems.push(format!(
            "the file breaks off ({e}); the {} records before are kept",
            out.len()
        ));
    }
    if skipped > 0 {
        out.problems.push(format!(
            "{skipped} rows without a readable time or value are left out"
        ));
    }
    out
}

/// The `Code` of an XML `LL` answer (`<?xml ...?>\n<LL control="..." value="..." Code="500"/>`,
/// the `dev/` flavour, loxone-protocol.md §2.1), if `body` is one.
fn xml_ll_code(body: &[u8]) -> Option<u16> {
    use quick_xml::events::Event;
    if !body.starts_with(b"<?xml") && !body.starts_with(b"<LL ") {
        return None;
    }
    let text = std::str::from_utf8(body).ok()?;
    let mut reader = quick_xml::Reader::from_str(text);
    loop {
        match reader.read_event().ok()? {
            // The first element decides: a month file begins with `Statistics`.
            Event::Empty(e) | Event::Start(e) if e.name().as_ref() != "LL" => return None,
            Event::Empty(e) | Event::Start(e) => {
                return e.attributes().flatten().find_map(|a| {
                    let key = a.key.as_ref();
                    (key == "Code" || key == "code")
                        .then(|| a.normalized_value(quick_xml::XmlVersion::Implicit1_0).ok())
                        .flatten()
                        .and_then(|v| v.trim().parse().ok())
                });
            }
            Event::Eof => return None,
            _ => {}
        }
    }
}

/// An answer that should be data but is an `LL` envelope (JSON, or XML for `dev/` commands):
/// `Some(Ok(()))` for code 200 (an answer without data: no records), `Some(Err)` for an error
/// code; `None` for data. Only a body that reads as a whole as such an envelope counts: binary
/// records may begin with the byte `{` or `<` too.
fn ll_instead_of_data(body: &[u8], what: &str) -> Option<Result<(), LoxoneError>> {
    let code = match xml_ll_code(body) {
        Some(code) => code,
        None if body.starts_with(b"{") => parse_ll(body).ok()?.code,
        None => return None,
    };
    Some(Err(match code {
        200 => return Some(Ok(())),
        404 => LoxoneError::NotFound(what.to_string()),
        code => LoxoneError::Status {
            code,
            message: format!("{what}: the Miniserver answered with an error instead of data"),
        },
    }))
}

impl Client {
    /// `jdev/sps/getStatisticInfo/{uuid}` (V2): the groups with data.
    pub fn statistic_info(&self, uuid: &str) -> Result<Vec<GroupSince>, LoxoneError> {
        let ll = self.get_ll_at(&format!("jdev/sps/getStatisticInfo/{}", segment(uuid)?))?;
        parse_info(&ll.value)
    }

    /// `dev/sps/getStatistic/{uuid}/{mode}/{from}/{until}/{unit}/{group}/{output}` (V2) over
    /// HTTP: the records of one output (see [`parse_v2`]).
    pub fn statistic_v2(&self, uuid: &str, r: &V2Request) -> Result<Records, LoxoneError> {
        let path = format!(
            "dev/sps/getStatistic/{}/{}/{}/{}/{}/{}/{}",
            segment(uuid)?,
            r.mode.as_str(),
            r.from_unix.max(0),
            r.until_unix.max(0),
            r.unit.as_str(),
            r.group,
            segment(&r.output)?
        );
        let body = self.get_data(&path)?;
        match ll_instead_of_data(&body, &path) {
            Some(Err(e)) => Err(e),
            Some(Ok(())) => Ok(Records::empty(1)),
            None => Ok(parse_v2(&body, r.group_size.max(1), 0)),
        }
    }

    /// The V1 month file `stats/statisticdata.xml/{uuid}/{YYYYMM}`; HTTP 404 (no recording
    /// that month) is no records.
    pub fn statistic_v1_xml(
        &self,
        uuid: &str,
        year: i32,
        month: u8,
        outputs: usize,
    ) -> Result<Records, LoxoneError> {
        let path = format!(
            "stats/statisticdata.xml/{}/{year:04}{month:02}",
            segment(uuid)?
        );
        match self.get_data(&path) {
            Ok(body) => {
                match ll_instead_of_data(&body, &path) {
                    Some(Ok(())) | Some(Err(LoxoneError::NotFound(_))) => {
                        return Ok(Records::empty(outputs.max(1)))
                    }
                    Some(Err(e)) => return Err(e),
                    None => {}
                }
                Ok(parse_v1_xml(&String::from_utf8_lossy(&body), outputs))
            }
            Err(LoxoneError::NotFound(_)) => Ok(Records::empty(outputs.max(1))),
            Err(e) => Err(e),
        }
    }
}

/// The Miniserver's statistics as the house asks for them: V2 and the V1 XML files over the
/// [`Client`]'s HTTP, V1 `binstatisticdata` over the live WebSocket while it is up
/// ([`MiniserverStatistics::attach_link`]), the XML file otherwise or when that fails.
pub struct MiniserverStatistics {
    client: Arc<Client>,
    link: OnceLock<LinkCommands>,
}

impl std::fmt::Debug for MiniserverStatistics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniserverStatistics")
            .field("link", &self.link.get().is_some())
            .finish_non_exhaustive()
    }
}

impl MiniserverStatistics {
    pub fn new(client: Arc<Client>) -> Self {
        Self {
            client,
            link: OnceLock::new(),
        }
    }

    /// Asks V1 months over this live link's WebSocket while it is up.
    pub fn attach_link(&self, link: LinkCommands) {
        let _ = self.link.set(link);
    }

    fn binstat(&self, uuid: &str, year: i32, month: u8, outputs: usize) -> Option<Records> {
        let link = self.link.get()?;
        let cmd = format!("binstatisticdata/{uuid}/{year:04}{month:02}");
        match link.ask_file(&cmd, WS_ANSWER_TIMEOUT, MAX_STATISTIC_BYTES as usize) {
            Ok(Some(bytes)) => {
                let cut = bytes.len() >= MAX_STATISTIC_BYTES as usize;
                Some(parse_binstat(&bytes, outputs, cut))
            }
            Ok(None) => None,
            Err(e) => {
                log::debug!("{cmd} over the WebSocket: {e}; asking the XML file instead");
                None
            }
        }
    }
}

impl Statistics for MiniserverStatistics {
    fn v2_info(&self, control: &Control) -> Result<Vec<GroupSince>, ControllerError> {
        Ok(self.client.statistic_info(&control.uuid)?)
    }

    fn v2_data(&self, control: &Control, request: &V2Request) -> Result<Records, ControllerError> {
        Ok(self.client.statistic_v2(&control.uuid, request)?)
    }

    fn v1_month(
        &self,
        control: &Control,
        year: i32,
        month: u8,
    ) -> Result<Records, ControllerError> {
        let outputs = control
            .statistic
            .v1
            .as_ref()
            .map_or(1, |v| v.outputs.len().max(1));
        if let Some(r) = self.binstat(&control.uuid, year, month, outputs) {
            return Ok(r);
        }
        Ok(self
            .client
            .statistic_v1_xml(&control.uuid, year, month, outputs)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(t: u32, vals: &[f64]) -> Vec<u8> {
        let mut b = t.to_le_bytes().to_vec();
        for v in vals {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b
    }

    #[test]
    fn v2_records_are_read_and_a_cut_record_is_named() {
        let mut body = rec(1_661_990_400, &[1.5]);
        body.extend(rec(1_661_994_000, &[2.25]));
        let r = parse_v2(&body, 2, 0);
        assert_eq!(r.times, vec![1_661_990_400, 1_661_994_000]);
        assert_eq!(r.values, vec![1.5, 2.25]);
        assert!(r.problems.is_empty());
        body.extend_from_slice(&[1, 2, 3, 4, 5]);
        let r = parse_v2(&body, 1, 0);
        assert_eq!(r.len(), 2);
        assert!(
            r.problems[0].contains("cut short (5 of 12 bytes)"),
            "{:?}",
            r.problems
        );
        assert!(parse_v2(&[], 2, 0).is_empty());
    }

    #[test]
    fn v2_group_width_is_recognised_when_the_filter_was_ignored() {
        // Two records of a group of two (20 bytes each): 40 bytes, no multiple of 12.
        let mut body = rec(10, &[1.0, -2.0]);
        body.extend(rec(20, &[3.0, -4.0]));
        let r = parse_v2(&body, 2, 0);
        assert_eq!(r.values, vec![1.0, 3.0]);
        assert_eq!(r.width, 1);
    }

    #[test]
    fn values_that_are_no_numbers_are_left_out() {
        let mut body = rec(10, &[f64::NAN]);
        body.extend(rec(20, &[4.0]));
        body.extend(rec(30, &[f64::INFINITY]));
        let r = parse_v2(&body, 1, 0);
        assert_eq!(r.times, vec![20]);
        assert!(r.problems[0].contains("2 records"), "{:?}", r.problems);
        let t = parse_binstat(&body, 1, true);
        assert!(t.problems[0].contains("longer than"), "{:?}", t.problems);
    }

    #[test]
    fn binstat_records_have_every_output() {
        let mut body = rec(543_978_000, &[21.5, 1.0, 0.0]);
        body.extend(rec(543_981_600, &[21.0, 0.0, 1.0]));
        let r = parse_binstat(&body, 3, false);
        assert_eq!(r.len(), 2);
        assert_eq!(r.row(1), &[21.0, 0.0, 1.0]);
        assert_eq!(parse_binstat(&body[..30], 3, false).len(), 1);
    }

    #[test]
    fn info_comes_as_a_list_or_as_text() {
        let a = parse_info(&serde_json::json!([{"id": 2, "activeSince": 1661990400}, {"x": 1}]))
            .unwrap();
        assert_eq!(
            a,
            vec![GroupSince {
                id: 2,
                active_since: 1_661_990_400
            }]
        );
        let b = parse_info(&serde_json::json!("[{\"id\":\"1\",\"activeSince\":\"5\"}]")).unwrap();
        assert_eq!(
            b,
            vec![GroupSince {
                id: 1,
                active_since: 5
            }]
        );
        assert!(parse_info(&serde_json::json!("")).unwrap().is_empty());
        assert!(parse_info(&serde_json::json!("{oops")).is_err());
        assert!(parse_info(&serde_json::json!(7)).is_err());
    }

    #[test]
    fn v1_xml_rows_are_local_seconds_with_every_column() {
        let xml = r#"<?xml version="1.0" encoding="utf-8"?>
<Statistics Name="Z&#228;hler &amp; Co" NumOutputs="2" Outputs="Gesamtverbrauch,Leistung">
<S T="2009-01-01 00:00:00" V="0.572" V2="0.000"/>
<S T="2016-08-17 23:47:00" V="1.5" V2="2.5"/>
<S T="broken" V="1" V2="2"/>
<S T="2016-08-17 23:48:00" V="1.5"/>
<S T="2016-08-17 23:49:00" V="nan" V2="1"/>
</Statistics>"#;
        let r = parse_v1_xml(xml, 2);
        assert_eq!(r.times[0], 0);
        assert_eq!(r.row(0), &[0.572, 0.0]);
        assert_eq!(
            r.times[1],
            HouseTime::local_secs_of_text("2016-08-17 23:47:00").unwrap(),
            "wall-clock seconds"
        );
        assert_eq!(r.len(), 2);
        assert!(r.problems[0].contains("3 rows"), "{:?}", r.problems);
        // One day of wall clock is 86,400 local seconds, whatever the DST.
        assert_eq!(
            HouseTime::local_secs_of_text("2026-03-30 00:00:00").unwrap()
                - HouseTime::local_secs_of_text("2026-03-29 00:00:00").unwrap(),
            86_400
        );
    }

    #[test]
    fn v1_xml_that_breaks_off_keeps_what_came_before() {
        let xml = "<Statistics NumOutputs=\"1\"><S T=\"2020-01-01 00:00:00\" V=\"1\"/><S T=\"2020-01-01 01:00:00\" V=\"2\"/><S T=\"20";
        let r = parse_v1_xml(xml, 1);
        assert_eq!(r.values, vec![1.0, 2.0]);
        assert!(
            r.problems.iter().any(|p| p.contains("breaks off")),
            "{:?}",
            r.problems
        );
        let empty = parse_v1_xml("<Statistics NumOutputs=\"1\"></Statistics>", 1);
        assert!(empty.is_empty() && empty.problems.is_empty());
    }

    #[test]
    fn an_ll_answer_instead_of_data_is_an_error() {
        let body = br#"{"LL": { "control": "dev/sps/getStatistic/x", "value": "", "Code": "500"}}"#;
        assert!(matches!(
            ll_instead_of_data(body, "x"),
            Some(Err(LoxoneError::Status { code: 500, .. }))
        ));
        // The dev/ flavour answers XML.
        let xml = b"<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<LL control=\"dev/sps/getStatistic/x\" value=\"\" Code=\"500\"/>";
        assert!(matches!(
            ll_instead_of_data(xml, "x"),
            Some(Err(LoxoneError::Status { code: 500, .. }))
        ));
        let ok = b"<?xml version=\"1.0\"?>\n<LL control=\"x\" value=\"\" Code=\"200\"/>";
        assert!(matches!(ll_instead_of_data(ok, "x"), Some(Ok(()))));
        let file = b"<?xml version=\"1.0\"?>\n<Statistics NumOutputs=\"1\"><S T=\"x\" V=\"1\"/></Statistics>";
        assert!(ll_instead_of_data(file, "x").is_none());
        assert!(ll_instead_of_data(&rec(1, &[1.0]), "x").is_none());
        // A record whose time begins with `{` is data.
        assert!(ll_instead_of_data(&rec(0x7B, &[1.0]), "x").is_none());
    }
}
