//! How names are compared: [`fold`]ed (accents, case, `ß`, separators), by name resolution
//! ([`super::resolve`]) and by the model's own word checks alike. Text only; it knows no model.

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// Folds a name for comparison: Unicode NFKD, combining marks removed, lowercase, ß->ss, æ->ae, ø->o, œ->oe,
/// '-', '_', '/', '.' and runs of whitespace become one space, trimmed.
///
/// Also: ł->l, đ->d, and apostrophes (`'`, `’`, `` ` ``) are dropped, so "Peter's Bedroom" and
/// "peters bedroom" fold alike. Examples: `"Küche"` -> `"kuche"`, `"Straße"` -> `"strasse"`,
/// `" Living_Room/Ceiling-Light "` -> `"living room ceiling light"`.
pub fn fold(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.to_lowercase().nfkd().flat_map(char::to_lowercase) {
        if is_combining_mark(c) {
            continue;
        }
        if c.is_whitespace() || matches!(c, '-' | '_' | '/' | '.') {
            space = true;
            continue;
        }
        let mapped = match c {
            'ß' => "ss",
            'æ' => "ae",
            'ø' => "o",
            'œ' => "oe",
            'ł' => "l",
            'đ' => "d",
            '\'' | '\u{2019}' | '`' => continue,
            _ => "",
        };
        if space && !out.is_empty() {
            out.push(' ');
        }
        space = false;
        if mapped.is_empty() {
            out.push(c);
        } else {
            out.push_str(mapped);
        }
    }
    out
}

/// The slug of a name: [`fold`]ed (accents and case dropped, `ß` -> `ss`), every run of
/// characters other than letters and digits one `-`, none at the ends.
/// `"Gäste WC"` -> `"gaste-wc"`, `"Bad (OG)"` -> `"bad-og"`.
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    let mut dash = false;
    for c in fold(name).chars() {
        if c.is_alphanumeric() {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c);
        } else {
            dash = true;
        }
    }
    out
}
