//! Bounded JSON (issue 28): what a request may make the server hold is bounded by what the
//! request may contain, not by how its JSON expands in memory. Before any JSON a client sent
//! is parsed into a tree, [`check`] reads its bytes once, without allocating, and refuses a
//! document that nests deeper than [`Bounds::depth`] or holds more than [`Bounds::values`]
//! values (a million one-element arrays fit in a megabyte of text but take hundreds of
//! megabytes as trees, more with each copy a request makes of its arguments).
//!
//! Every body the server reads as JSON goes through it: the JSON-RPC framing
//! (`crate::mcp::jsonrpc::parse`: HTTP, legacy SSE, stdio) and the JSON bodies of the HTTP
//! routes (REST, admin, OAuth registration; `crate::http`). The forms (OAuth, the password
//! page) are bounded by their size and their parameter count.

/// The most a JSON document may nest and hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Levels of objects and arrays (the document itself is level 1).
    pub depth: usize,
    /// Values, counting every object, array, member name and scalar.
    pub values: usize,
}

/// The bounds of a request: 32 levels (a workflow's steps with their operations need 8) and
/// 16,384 values (a 2025-03-26 batch of 20 calls of 50 operations each needs about 8,500).
pub const REQUEST: Bounds = Bounds {
    depth: 32,
    values: 16 * 1024,
};

/// Why a document is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exceeded {
    /// It nests deeper than this many levels.
    Depth(usize),
    /// It holds more than this many values.
    Values(usize),
}

impl std::fmt::Display for Exceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exceeded::Depth(n) => write!(f, "the JSON nests deeper than {n} levels"),
            Exceeded::Values(n) => write!(f, "the JSON holds more than {n} values"),
        }
    }
}

/// Whether `bytes` stay within `bounds`, read once without allocating. Values are counted
/// from the structure (each object and array, and one more per `,` and `:`): an upper bound
/// of what a parser would build. Bytes that are not JSON pass as far as the scan goes; the
/// parser that follows refuses them.
pub fn check(bytes: &[u8], bounds: Bounds) -> Result<(), Exceeded> {
    let (mut depth, mut values) = (0usize, 1usize);
    let (mut in_string, mut escaped) = (false, false);
    for &b in bytes {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                values += 1;
                if depth > bounds.depth {
                    return Err(Exceeded::Depth(bounds.depth));
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' | b':' => values += 1,
            _ => continue,
        }
        if values > bounds.values {
            return Err(Exceeded::Values(bounds.values));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Bounds = Bounds {
        depth: 3,
        values: 10,
    };

    #[test]
    fn depth_and_values_are_counted_outside_strings() {
        assert_eq!(check(br#"{"a":[1,2,{"b":3}]}"#, SMALL), Ok(()));
        assert_eq!(
            check(br#"{"a":[1,[2,[3]]]}"#, SMALL),
            Err(Exceeded::Depth(3))
        );
        assert_eq!(
            check(b"[1,2,3,4,5,6,7,8,9,10]", SMALL),
            Err(Exceeded::Values(10))
        );
        // Brackets, commas and quotes inside strings are text.
        assert_eq!(check(br#"["[[[[,,,,,,,,,,\"{{{{"]"#, SMALL), Ok(()));
        // Not JSON: left to the parser.
        assert_eq!(check(b"}}}]]]", SMALL), Ok(()));
        let deep = "[".repeat(45_000);
        assert_eq!(check(deep.as_bytes(), REQUEST), Err(Exceeded::Depth(32)));
        let wide = format!("[{}0]", "[0],".repeat(170_000));
        assert_eq!(
            check(wide.as_bytes(), REQUEST),
            Err(Exceeded::Values(16 * 1024))
        );
    }
}
