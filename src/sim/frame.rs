//! Pictures the simulated cameras and intercoms serve: JPEGs that show their own timestamp, so
//! a test can tell which picture reached an MCP client after it was scaled and re-encoded.
//!
//! Each frame carries its label twice:
//! - as a JPEG comment (`COM` segment right after `SOI`): `home-mcp-sim {camera} {stamp} {frame}`
//!   (lost when a server re-encodes the picture, kept by anything that passes it through);
//! - drawn as pixels: a caption in a 5x7 block font (camera name, date and time, readable in a
//!   screenshot) and, in the band from 80 % to 96 % of the height, a **code strip** of
//!   [`CODE_CELLS`] equal-width cells across the full width, each black (0) or white (1):
//!   cells 0-3 are `1010`, cells 4-59 the 14 digits of the stamp `YYYYMMDDHHMMSS` (4 bits
//!   each, most significant first), cells 60-63 the camera number, 64-67 the frame number
//!   within a stream (0 for a still), 68-71 are `0101`. The cells are large enough (1/72 of
//!   the width, 16 % of the height) that sampling each cell's centre reads them back from a
//!   copy scaled down to 640 px or less and re-encoded as JPEG.
//!
//! Only the simulator draws these; tests read them back with their own reader of this layout.

/// Cells of the code strip across the width (see the module docs).
pub const CODE_CELLS: usize = 72;

/// Top and bottom of the code strip, as fractions of the picture's height.
pub const CODE_BAND: (f64, f64) = (0.80, 0.96);

/// What one simulated picture shows.
#[derive(Debug, Clone)]
pub struct Frame<'a> {
    pub width: u16,
    pub height: u16,
    /// Caption's first line, e.g. the camera's name in capitals.
    pub title: &'a str,
    /// `YYYYMMDDHHMMSS` (Miniserver local time), 14 ASCII digits; other characters count as 0.
    pub stamp: &'a str,
    /// Camera number 0-15 (cells 60-63).
    pub camera: u8,
    /// Frame number 0-15 within a stream (cells 64-67).
    pub frame: u8,
}

/// The cells of `f`'s code strip, 0 or 1 each.
pub fn code_bits(f: &Frame<'_>) -> [u8; CODE_CELLS] {
    let mut bits = [0u8; CODE_CELLS];
    bits[..4].copy_from_slice(&[1, 0, 1, 0]);
    let digits: Vec<u8> = f
        .stamp
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(14)
        .map(|b| if b.is_ascii_digit() { b - b'0' } else { 0 })
        .collect();
    let mut nibbles = digits;
    nibbles.push(f.camera & 0x0f);
    nibbles.push(f.frame & 0x0f);
    for (i, n) in nibbles.iter().enumerate() {
        for b in 0..4 {
            bits[4 + i * 4 + b] = (n >> (3 - b)) & 1;
        }
    }
    bits[68..].copy_from_slice(&[0, 1, 0, 1]);
    bits
}

/// `f` as a baseline JPEG (quality 85) with its label in a `COM` segment.
pub fn jpeg(f: &Frame<'_>) -> Vec<u8> {
    let (w, h) = (usize::from(f.width.max(72)), usize::from(f.height.max(32)));
    let mut px = vec![0u8; w * h * 3];
    // A calm gradient, different per camera, so pictures do not look alike.
    let tint = [
        (40u8, 70u8, 110u8),
        (90, 60, 40),
        (40, 90, 60),
        (80, 80, 80),
    ];
    let (tr, tg, tb) = tint[usize::from(f.camera) % tint.len()];
    for y in 0..h {
        for x in 0..w {
            let i = (y * w + x) * 3;
            let shade = ((x + y) * 60 / (w + h)) as u8;
            px[i] = tr.saturating_add(shade);
            px[i + 1] = tg.saturating_add(shade);
            px[i + 2] = tb.saturating_add(shade);
        }
    }
    // Caption: title, then the stamp as "YYYY-MM-DD HH:MM:SS".
    let s = f.stamp.as_bytes();
    let date: String = if s.len() >= 14 {
        format!(
            "{}-{}-{} {}:{}:{}",
            &f.stamp[0..4],
            &f.stamp[4..6],
            &f.stamp[6..8],
            &f.stamp[8..10],
            &f.stamp[10..12],
            &f.stamp[12..14]
        )
    } else {
        f.stamp.to_string()
    };
    let scale = (w / 160).max(2);
    draw_text(&mut px, w, h, scale * 2, scale * 2, scale, f.title);
    draw_text(&mut px, w, h, scale * 2, scale * 12, scale, &date);
    // Code strip.
    let (top, bottom) = (
        (CODE_BAND.0 * h as f64) as usize,
        (CODE_BAND.1 * h as f64) as usize,
    );
    for (cell, bit) in code_bits(f).iter().enumerate() {
        let (x0, x1) = (cell * w / CODE_CELLS, (cell + 1) * w / CODE_CELLS);
        let v = if *bit == 1 { 255 } else { 0 };
        for y in top..bottom {
            for x in x0..x1 {
                let i = (y * w + x) * 3;
                px[i..i + 3].copy_from_slice(&[v, v, v]);
            }
        }
    }
    let mut out = Vec::new();
    let enc = jpeg_encoder::Encoder::new(&mut out, 85);
    // Sizes are clamped to u16 above; an encoder error leaves an empty picture, which the
    // client reports as "not a JPEG" (the simulator never panics on a picture).
    if enc
        .encode(&px, w as u16, h as u16, jpeg_encoder::ColorType::Rgb)
        .is_err()
    {
        return Vec::new();
    }
    with_comment(
        &out,
        &format!("home-mcp-sim {} {} {}", f.camera, f.stamp, f.frame),
    )
}

/// `jpeg` with a `COM` segment holding `text` right after `SOI`.
fn with_comment(jpeg: &[u8], text: &str) -> Vec<u8> {
    if jpeg.len() < 2 {
        return jpeg.to_vec();
    }
    let body = &text.as_bytes()[..text.len().min(60_000)];
    let len = (body.len() + 2) as u16;
    let mut out = Vec::with_capacity(jpeg.len() + body.len() + 4);
    out.extend_from_slice(&jpeg[..2]);
    out.extend_from_slice(&[0xFF, 0xFE]);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(&jpeg[2..]);
    out
}

/// Draws `text` (capitals, digits, `:-./ `; anything else as a blank) in white with a dark
/// shadow at (`x`, `y`), each font pixel `scale` x `scale`.
fn draw_text(px: &mut [u8], w: usize, h: usize, x: usize, y: usize, scale: usize, text: &str) {
    for (n, ch) in text.chars().enumerate() {
        let rows = glyph(ch.to_ascii_uppercase());
        let gx = x + n * 6 * scale;
        for (r, row) in rows.iter().enumerate() {
            for c in 0..5 {
                if row >> (4 - c) & 1 == 0 {
                    continue;
                }
                for (dx, dy, v) in [(1, 1, 0u8), (0, 0, 255u8)] {
                    for yy in 0..scale {
                        for xx in 0..scale {
                            let (px_x, px_y) = (gx + c * scale + xx + dx, y + r * scale + yy + dy);
                            if px_x < w && px_y < h {
                                let i = (px_y * w + px_x) * 3;
                                px[i..i + 3].copy_from_slice(&[v, v, v]);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Rows of a 5x7 glyph, bit 4 the leftmost column.
fn glyph(c: char) -> [u8; 7] {
    match c {
        '0' => [0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E],
        '1' => [0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E],
        '2' => [0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F],
        '3' => [0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E],
        '4' => [0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02],
        '5' => [0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E],
        '6' => [0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E],
        '7' => [0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08],
        '8' => [0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E],
        '9' => [0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C],
        'A' => [0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11],
        'B' => [0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E],
        'C' => [0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E],
        'D' => [0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C],
        'E' => [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F],
        'F' => [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10],
        'G' => [0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F],
        'H' => [0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11],
        'I' => [0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E],
        'J' => [0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C],
        'K' => [0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11],
        'L' => [0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F],
        'M' => [0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11],
        'N' => [0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11],
        'O' => [0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E],
        'P' => [0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10],
        'Q' => [0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D],
        'R' => [0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11],
        'S' => [0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E],
        'T' => [0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04],
        'U' => [0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E],
        'V' => [0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04],
        'W' => [0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A],
        'X' => [0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11],
        'Y' => [0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04],
        'Z' => [0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F],
        ':' => [0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00],
        '-' => [0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00],
        '.' => [0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C],
        '/' => [0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00],
        _ => [0; 7],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_carries_stamp_camera_and_frame() {
        let f = Frame {
            width: 640,
            height: 360,
            title: "X",
            stamp: "20261127101500",
            camera: 2,
            frame: 3,
        };
        let bits = code_bits(&f);
        assert_eq!(&bits[..4], &[1, 0, 1, 0]);
        // First digit 2 = 0010, second 0 = 0000.
        assert_eq!(&bits[4..12], &[0, 0, 1, 0, 0, 0, 0, 0]);
        assert_eq!(&bits[60..64], &[0, 0, 1, 0]);
        assert_eq!(&bits[64..68], &[0, 0, 1, 1]);
        assert_eq!(&bits[68..], &[0, 1, 0, 1]);
        let j = jpeg(&f);
        assert_eq!(&j[..4], &[0xFF, 0xD8, 0xFF, 0xFE]);
        let com = String::from_utf8_lossy(&j[6..6 + 31]);
        assert_eq!(com, "home-mcp-sim 2 20261127101500 3");
    }
}
