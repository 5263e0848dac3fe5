//! Reads back what a simulated camera drew into a picture, after any scaling and re-encoding:
//! the code strip of `src/sim/frame.rs` (its module docs are the layout this follows: 72
//! equal cells across the full width in the band from 80 % to 96 % of the height; `1010`,
//! 14 stamp digits of 4 bits, camera 4 bits, frame 4 bits, `0101`), sampled at each cell's
//! centre. The picture is decoded in full (no DCT scaling) with `jpeg-decoder`.

/// What a picture shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    /// `YYYYMMDDHHMMSS`.
    pub stamp: String,
    pub camera: u8,
    pub frame: u8,
    pub width: u32,
    pub height: u32,
}

/// Decodes `jpeg` and reads its code strip; panics with what it saw when the picture is not a
/// JPEG or the strip's sync patterns are not there.
pub fn read(jpeg: &[u8]) -> Shown {
    let mut d = jpeg_decoder::Decoder::new(jpeg);
    let px = d.decode().expect("a decodable JPEG");
    let info = d.info().unwrap();
    let (w, h) = (usize::from(info.width), usize::from(info.height));
    let channels = info.pixel_format.pixel_bytes();
    let y = ((0.80 + 0.96) / 2.0 * h as f64) as usize;
    let bits: Vec<u8> = (0..72)
        .map(|cell| {
            let x = ((cell as f64 + 0.5) * w as f64 / 72.0) as usize;
            let i = (y * w + x) * channels;
            let lum: u32 = px[i..i + channels.min(3)]
                .iter()
                .map(|&v| u32::from(v))
                .sum::<u32>()
                / channels.min(3) as u32;
            u8::from(lum > 127)
        })
        .collect();
    assert_eq!(
        (&bits[..4], &bits[68..]),
        (&[1, 0, 1, 0][..], &[0, 1, 0, 1][..]),
        "no code strip in this {w}x{h} picture: {bits:?}"
    );
    let nibble = |i: usize| {
        bits[4 + i * 4..8 + i * 4]
            .iter()
            .fold(0u8, |a, b| a * 2 + b)
    };
    Shown {
        stamp: (0..14).map(|i| char::from(b'0' + nibble(i))).collect(),
        camera: nibble(14),
        frame: nibble(15),
        width: w as u32,
        height: h as u32,
    }
}

/// The `COM` text of a JPEG (`home-mcp-sim {camera} {stamp} {frame}` from the simulator), if it
/// has one right after `SOI`.
pub fn comment(jpeg: &[u8]) -> Option<String> {
    if jpeg.get(..4)? != [0xFF, 0xD8, 0xFF, 0xFE] {
        return None;
    }
    let len = usize::from(u16::from_be_bytes([*jpeg.get(4)?, *jpeg.get(5)?]));
    Some(String::from_utf8_lossy(jpeg.get(6..4 + len)?).into_owned())
}
